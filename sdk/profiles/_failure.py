"""What a consumer does when a handler (or a deserializer) fails on a record."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sdk.errors import ConfigurationError
from sdk.profiles._base import ProfileModel

__all__ = ["FailurePolicy"]


class FailurePolicy(ProfileModel):
    """Retry a failing handler, then dead-letter the record or stop. Never a silent skip.

    Attributes:
        attempts: Handler runs per record, the first included (1 = no retry).
        backoff_initial_ms: First wait between attempts (exponential, capped at backoff_max_ms).
        backoff_max_ms: Longest wait between attempts.
        retry_on: Qualified names of exception types worth retrying (default: any Exception).
        on_failure: ``"dlq"`` sends the record to ``dlq_topic`` and goes on; ``"stop"`` raises
            :class:`~sdk.errors.HandlerError` with the record uncommitted.
        dlq_topic: Dead-letter topic (required with ``on_failure="dlq"``).
    """

    attempts: int = Field(default=3, ge=1, le=1000)
    backoff_initial_ms: int = Field(default=100, ge=0)
    backoff_max_ms: int = Field(default=5_000, ge=0)
    retry_on: tuple[str, ...] = ("builtins.Exception",)
    on_failure: Literal["dlq", "stop"] = "stop"
    dlq_topic: str | None = None

    @model_validator(mode="after")
    def _dlq_needs_topic(self) -> FailurePolicy:
        if self.on_failure == "dlq" and not self.dlq_topic:
            raise ConfigurationError(
                "failure.dlq_topic: on_failure='dlq' needs a dead-letter topic name",
                field="failure.dlq_topic",
            )
        if self.backoff_max_ms < self.backoff_initial_ms:
            raise ConfigurationError(
                "failure.backoff_max_ms: must be >= backoff_initial_ms",
                field="failure.backoff_max_ms",
            )
        return self
