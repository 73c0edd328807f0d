"""Spark's native Kafka source with the right options: read_committed, group offsets.

Spark's Kafka source never commits offsets to a group; these helpers only *read* a group's
committed offsets (with require_stable) to start from them. Spark's native Kafka *sink* is
at-least-once: use :class:`~spark_integration.ExactlyOnceBatchJob` or
:class:`~spark_integration.ExactlyOnceStreamingSink` for exactly-once output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sdk.errors import ConfigurationError
from sdk.profiles import ConsumerProfile
from spark_integration._ranges import PartitionRange, plan_ranges

__all__ = ["kafka_source_options", "offsets_json", "read_kafka", "read_kafka_stream"]


def offsets_json(ranges: Sequence[PartitionRange], which: str) -> str:
    """Render ``startingOffsets``/``endingOffsets`` JSON (``{"topic": {"0": offset}}``).

    Args:
        ranges: Planned ranges (from :func:`~spark_integration.plan_ranges`).
        which: ``"start"`` or ``"end"``.

    Raises:
        ConfigurationError: ``which`` is neither.
    """
    if which not in ("start", "end"):
        raise ConfigurationError(f"which: 'start' or 'end', not {which!r}", field="which")
    out: dict[str, dict[str, int]] = {}
    for r in ranges:
        out.setdefault(r.topic, {})[str(r.partition)] = r.start if which == "start" else r.end
    return json.dumps(out, sort_keys=True)


def _security_options(consumer: ConsumerProfile) -> dict[str, str]:
    sec = consumer.security
    out: dict[str, str] = {"kafka.security.protocol": sec.protocol}
    if sec.sasl_mechanism:
        out["kafka.sasl.mechanism"] = sec.sasl_mechanism
        if sec.sasl_username and sec.sasl_password:
            module = (
                "org.apache.kafka.common.security.plain.PlainLoginModule"
                if sec.sasl_mechanism == "PLAIN"
                else "org.apache.kafka.common.security.scram.ScramLoginModule"
            )
            password = sec.sasl_password.get_secret_value()
            out["kafka.sasl.jaas.config"] = (
                f'{module} required username="{sec.sasl_username}" password="{password}";'
            )
    return out


def kafka_source_options(
    consumer: ConsumerProfile,
    topics: Sequence[str],
    *,
    batch: bool = True,
    ranges: Sequence[PartitionRange] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Options for ``spark.read/readStream.format("kafka")`` from a consumer profile.

    * ``kafka.isolation.level=read_committed`` (records of aborted and open transactions are
      never read; the profile's isolation level is used, exactly_once profiles force it);
    * ``startingOffsets``: the group's committed offsets (read with require_stable), the
      profile's ``auto_offset_reset`` where the group has none;
    * ``endingOffsets`` (batch only): the last stable offsets at planning time;
    * ``failOnDataLoss=true``: a range deleted by retention is an error, not a silent skip.

    For a streaming query ``startingOffsets`` applies only to its first start; afterwards the
    checkpoint decides.

    Args:
        consumer: Consumer profile (bootstrap, group, isolation level, security).
        topics: Topics to subscribe to.
        batch: Add ``endingOffsets`` (``spark.read``); False for ``spark.readStream``.
        ranges: Already planned ranges (default: planned now).
        extra: More options, applied last (e.g. ``maxOffsetsPerTrigger``).

    Returns:
        The option map.

    Raises:
        KafkaClientError: Planning failed.
    """
    planned = (
        list(ranges)
        if ranges is not None
        else plan_ranges(consumer, topics, job="native", transactional_id_prefix="")
    )
    options = {
        "kafka.bootstrap.servers": consumer.bootstrap_servers,
        "subscribe": ",".join(topics),
        "kafka.isolation.level": consumer.isolation_level,
        "startingOffsets": offsets_json(planned, "start"),
        "failOnDataLoss": "true",
        "includeHeaders": "true",
    }
    options.update(_security_options(consumer))
    if batch:
        options["endingOffsets"] = offsets_json(planned, "end")
    options.update(extra or {})
    return options


def read_kafka(spark: Any, consumer: ConsumerProfile, topics: Sequence[str], **extra: str) -> Any:
    """``spark.read.format("kafka")`` with :func:`kafka_source_options` (a batch DataFrame).

    Raises:
        KafkaClientError: Planning failed.
    """
    options = kafka_source_options(consumer, topics, batch=True, extra=extra)
    return spark.read.format("kafka").options(**options).load()


def read_kafka_stream(
    spark: Any, consumer: ConsumerProfile, topics: Sequence[str], **extra: str
) -> Any:
    """``spark.readStream.format("kafka")`` with :func:`kafka_source_options` (streaming).

    Raises:
        KafkaClientError: Planning failed.
    """
    options = kafka_source_options(consumer, topics, batch=False, extra=extra)
    return spark.readStream.format("kafka").options(**options).load()
