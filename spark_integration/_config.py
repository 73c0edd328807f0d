"""The batch job's configuration: the SDK's ProcessingProfile plus what the job adds."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, model_validator

from sdk.errors import ConfigurationError
from sdk.profiles import Guarantee, ProcessingProfile, ProfileModel

__all__ = ["BatchJobConfig"]

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class BatchJobConfig(ProfileModel):
    """An exactly-once Kafka → Spark → Kafka batch job, validated as a whole and frozen.

    Attributes:
        job_name: Stable name of the job; part of every transactional.id. Re-runs of the same
            job must use the same name (and group), or they cannot fence their predecessors.
        input_topics: Topics to read; one Spark task per topic-partition.
        processing: The SDK's processing profile, ``guarantee="exactly_once"``. Its consumer's
            ``group_id`` is the group whose offsets the job commits; its producer's
            ``transactional_id_prefix`` starts every transactional.id;
            ``max_records_per_transaction`` bounds a transaction's input records and the
            consumer's ``batch_size`` is how many records one transform call gets.
        max_transaction_ms: Commit early once a transaction is this old (default: a quarter of
            ``producer.transaction_timeout_ms``), so it ends well within that timeout.
        poll_timeout_ms: How long one consume() waits.
        max_recoveries: Recoveries (abort/recreate + rewind) in a row without a commit before
            the task gives up and raises the last error (Spark then retries the task).
        progress_interval_s: Seconds between the driver's progress lines (0 = none).
    """

    job_name: str = Field(min_length=1, max_length=100)
    input_topics: tuple[str, ...] = Field(min_length=1)
    processing: ProcessingProfile
    max_transaction_ms: int | None = Field(default=None, ge=100)
    poll_timeout_ms: int = Field(default=200, ge=1)
    max_recoveries: int = Field(default=10, ge=1)
    progress_interval_s: float = Field(default=10.0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> BatchJobConfig:
        if not _NAME.match(self.job_name):
            raise ConfigurationError(
                "job_name: only letters, digits, '.', '_' and '-' (it is part of the "
                "transactional.id)",
                field="job_name",
            )
        if self.processing.guarantee is not Guarantee.EXACTLY_ONCE:
            raise ConfigurationError(
                "processing.guarantee: the batch job is exactly_once only (Spark's own Kafka "
                "sink already is at-least-once)",
                field="processing.guarantee",
            )
        if not self.processing.producer.transactional_id_prefix:
            raise ConfigurationError(
                "processing.producer.transactional_id_prefix: the job derives one "
                "transactional.id per input partition from it; a single transactional_id "
                "cannot serve several tasks",
                field="processing.producer.transactional_id_prefix",
            )
        if self.transaction_ms >= self.processing.producer.transaction_timeout_ms:
            raise ConfigurationError(
                "max_transaction_ms: must be below producer.transaction_timeout_ms, or the "
                "coordinator aborts transactions before the task commits them",
                field="max_transaction_ms",
            )
        return self

    @property
    def transaction_ms(self) -> int:
        """The effective transaction age limit in milliseconds."""
        if self.max_transaction_ms is not None:
            return self.max_transaction_ms
        return max(100, self.processing.producer.transaction_timeout_ms // 4)

    @property
    def group_id(self) -> str:
        """The consumer group whose offsets the job reads and commits."""
        return self.processing.consumer.group_id

    @property
    def prefix(self) -> str:
        """The transactional.id prefix."""
        return self.processing.producer.transactional_id_prefix or ""

    @classmethod
    def exactly_once(
        cls,
        *,
        job_name: str,
        input_topics: list[str] | tuple[str, ...],
        bootstrap_servers: str,
        group_id: str,
        transactional_id_prefix: str = "spark-",
        consumer: dict[str, Any] | None = None,
        producer: dict[str, Any] | None = None,
        **job: Any,
    ) -> BatchJobConfig:
        """Build a config from the few things that differ between jobs.

        Args:
            job_name: Stable job name.
            input_topics: Input topics.
            bootstrap_servers: The cluster.
            group_id: The job's consumer group.
            transactional_id_prefix: Prefix of every transactional.id.
            consumer: More ConsumerProfile fields.
            producer: More ProducerProfile fields.
            **job: More BatchJobConfig fields; ``max_records_per_transaction`` and
                ``commit_interval_ms`` go to the ProcessingProfile.

        Raises:
            ConfigurationError: A field is invalid.
        """
        processing: dict[str, Any] = {
            "guarantee": "exactly_once",
            "consumer": {
                "guarantee": "exactly_once",
                "bootstrap_servers": bootstrap_servers,
                "group_id": group_id,
                **(consumer or {}),
            },
            "producer": {
                "guarantee": "exactly_once",
                "bootstrap_servers": bootstrap_servers,
                "transactional_id_prefix": transactional_id_prefix,
                **(producer or {}),
            },
        }
        for key in ("max_records_per_transaction", "commit_interval_ms"):
            if key in job:
                processing[key] = job.pop(key)
        return cls(
            job_name=job_name,
            input_topics=tuple(input_topics),
            processing=ProcessingProfile(**processing),
            **job,
        )
