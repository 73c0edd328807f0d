"""The processing profile: a consume → transform → produce loop under one guarantee."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from sdk.errors import ConfigurationError
from sdk.profiles._base import ProfileModel
from sdk.profiles._common import Guarantee, parse_guarantee
from sdk.profiles._consumer import ConsumerProfile
from sdk.profiles._producer import ProducerProfile

__all__ = ["ProcessingProfile"]


class ProcessingProfile(ProfileModel):
    """Consumer and producer of a read-process-write loop, bound to one guarantee.

    The guarantee is written once: ``consumer`` and ``producer`` given as mappings without a
    ``guarantee`` take the processing guarantee; one that names a different guarantee is an
    error.

    Example::

        ProcessingProfile(
            guarantee="exactly_once",
            consumer={"bootstrap_servers": "kafka:9092", "group_id": "orders"},
            producer={"bootstrap_servers": "kafka:9092", "transactional_id_prefix": "orders-"},
        )

    Attributes:
        commit_interval_ms: How often the loop commits (exactly_once: ends the transaction).
        max_records_per_transaction: Commit early once this many input records were handled.
    """

    guarantee: Guarantee
    consumer: ConsumerProfile
    producer: ProducerProfile
    commit_interval_ms: int = Field(default=100, ge=1)
    max_records_per_transaction: int = Field(default=10_000, ge=1)

    @field_validator("guarantee", mode="before")
    @classmethod
    def _guarantee(cls, value: Any) -> Guarantee:
        return parse_guarantee(value)

    @model_validator(mode="before")
    @classmethod
    def _inherit_guarantee(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "guarantee" not in data:
            return data
        out = dict(data)
        for side in ("consumer", "producer"):
            child = out.get(side)
            if isinstance(child, dict) and "guarantee" not in child:
                out[side] = {**child, "guarantee": data["guarantee"]}
        return out

    @model_validator(mode="after")
    def _same_guarantee(self) -> ProcessingProfile:
        for side in ("consumer", "producer"):
            child: Guarantee = getattr(self, side).guarantee
            if child is not self.guarantee:
                raise ConfigurationError(
                    f"{side}.guarantee: {child.value} contradicts the processing guarantee "
                    f"{self.guarantee.value}",
                    field=f"{side}.guarantee",
                )
        if (
            self.guarantee is Guarantee.EXACTLY_ONCE
            and self.commit_interval_ms >= self.producer.transaction_timeout_ms
        ):
            raise ConfigurationError(
                "commit_interval_ms: must be well below producer.transaction_timeout_ms, or the "
                "coordinator aborts transactions before the loop commits them",
                field="commit_interval_ms",
            )
        return self
