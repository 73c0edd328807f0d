"""The profile reference (docs/profiles.md), generated from the pydantic models themselves.

``python -m sdk profile reference > docs/profiles.md``; a test fails when the page drifts from
the models, so the reference can only describe fields that exist, with their real defaults.
"""

from __future__ import annotations

from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic_core import PydanticUndefined

from sdk.profiles._common import Guarantee, SecurityProfile
from sdk.profiles._consumer import ConsumerProfile
from sdk.profiles._failure import FailurePolicy
from sdk.profiles._processing import ProcessingProfile
from sdk.profiles._producer import ProducerProfile
from sdk.profiles._queue import QueueProfile
from sdk.schemas import SchemaRegistryConfig

__all__ = ["DESCRIPTIONS", "MODEL_DESCRIPTIONS", "reference_markdown"]

#: One line per field: what it does. A field missing here fails the reference test.
DESCRIPTIONS: dict[str, str] = {
    "guarantee": "at_most_once, at_least_once or exactly_once; decides every critical setting",
    "bootstrap_servers": "comma-separated host:port list",
    "client_id": "librdkafka client.id (shows up in broker logs and metrics)",
    "acks": "at_most_once: 0 (default) or 1; otherwise only all",
    "retries": "None = librdkafka's default (unbounded within the delivery timeout); "
    "at_most_once: must stay 0/None; others: > 0",
    "enable_idempotence": "None = on (off for at_most_once); exactly_once requires it",
    "max_in_flight": "requests in flight per connection; ≤ 5 with idempotence, exactly 1 "
    "without it (retries could reorder)",
    "delivery_timeout_ms": "librdkafka message.timeout.ms: how long a record may be retried "
    "(capped at transaction_timeout_ms for exactly_once)",
    "linger_ms": "how long librdkafka waits to fill a batch",
    "compression": "compression.type",
    "transactional_id": "exactly_once: the stable id of this producer instance",
    "transactional_id_prefix": "exactly_once: instances append their own stable suffix",
    "transaction_timeout_ms": "the coordinator aborts a transaction left open this long",
    "transaction_call_timeout_ms": "how long one transactional call (init, begin, offsets, "
    "commit, abort) waits before it is retried or its outcome is treated as unknown; "
    "bounds recovery after a coordinator loss",
    "partitioner": "a partitioner name (built-in or entry point of kafka_semantics.partitioners)",
    "security": "connection security; secrets are SecretStr (see SecurityProfile)",
    "extras": "raw librdkafka keys merged *under* the critical ones; a key that contradicts "
    "the guarantee is an error",
    "group_id": "consumer group",
    "auto_offset_reset": "where a group without a committed offset starts (queue: the group "
    "config share.auto.offset.reset)",
    "isolation_level": "read_committed hides aborted transactions (required by exactly_once; "
    "queue: the group config share.isolation.level)",
    "record_lock_duration_ms": "queue: group config share.record.lock.duration.ms, how long a "
    "member holds an acquired record before it is delivered again (None: broker default, 30 s)",
    "delivery_count_limit": "queue: group config share.delivery.count.limit, deliveries after "
    "which the broker archives a record (None: broker default, 5); at least failure.attempts",
    "apply_group_config": "queue: set the share group's configs with the admin API at start",
    "poll_timeout_ms": "queue: how long one poll waits for records",
    "auto_commit_interval_ms": "at_least_once: how often stored offsets are committed",
    "session_timeout_ms": "classic protocol: a member silent this long is removed",
    "max_poll_interval_ms": (
        "a member that does not poll this long leaves the group; at least session_timeout_ms "
        "(an exactly_once processing profile lowers the default to the producer's "
        "transaction_timeout_ms, not below the session timeout)"
    ),
    "group_protocol": "classic, or consumer (KIP-848, server-side assignment)",
    "assignor": "a name from sdk.assignors with a native strategy (range, round_robin, "
    "cooperative_sticky); with group_protocol consumer (KIP-848) it selects the broker's "
    "group.remote.assignor (range, sticky/cooperative_sticky -> uniform)",
    "fetch_queue_backoff_ms": "librdkafka fetch.queue.backoff.ms: how long fetching pauses "
    "when the local queue is full (librdkafka default 1000; see profile explain)",
    "batch_size": "records taken per poll (the unit of at_most_once's commit-before-handling)",
    "failure": "what happens when the handler fails (see FailurePolicy)",
    "consumer": "the ConsumerProfile of the input side (same guarantee)",
    "producer": "the ProducerProfile of the output side (same guarantee)",
    "commit_interval_ms": (
        "end a transaction (or store offsets) at least this often; exactly_once: the floor "
        "of end-to-end latency, and below 50 ms a cost in throughput (measured: "
        "performance.md, Latency; `profile explain` gives the figures)"
    ),
    "max_records_per_transaction": (
        "... or after this many input records: bounds the work redone after an abort; at the "
        "default interval it sets the pace only above 1,000,000 records/s"
    ),
    "attempts": "handler attempts in total (1 = no retry)",
    "backoff_initial_ms": "first retry delay (exponential backoff)",
    "backoff_max_ms": "longest retry delay",
    "retry_on": "exception types (dotted names) worth retrying; others fail at once",
    "on_failure": "dlq: write the record to dlq_topic with error headers; stop: raise "
    "HandlerError (never a silent skip)",
    "dlq_topic": "dead-letter topic (required for on_failure=dlq)",
    "protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.username",
    "sasl_password": "sasl.password (SecretStr: never printed)",
    "ssl_ca_location": "CA certificate file",
    "ssl_certificate_location": "client certificate file",
    "ssl_key_location": "client key file",
    "ssl_key_password": "client key password (SecretStr: never printed)",
    "url": "the registry's base URL (Apicurio: ending /apis/ccompat/v7); several, "
    "comma-separated, are tried in order; left out: $KSEM_SCHEMA_REGISTRY_URL",
    "basic_auth": "user:password for HTTP basic authentication (SecretStr: never printed)",
    "subject_name_strategy": "topic (`<topic>-value`), record (the record's full name) or "
    "topic_record (`<topic>-<full name>`)",
    "auto_register": "serializers register their schema if the subject lacks it; off: it must "
    "be registered already (the usual production setting)",
    "use_latest_version": "serializers write with the subject's latest version, deserializers "
    "read into it; needs auto_register false",
    "normalize": "normalize schemas before registering or looking them up",
    "request_timeout_s": "seconds one HTTP request may take",
    "registry_timeout_s": "how long a consumer retries a record while the registry does not "
    "answer, then stops with SchemaRegistryUnavailableError",
    "client_config": "extra SchemaRegistryClient keys (TLS: ssl.ca.location, ...)",
}

#: Where one model's field means something else than its line in :data:`DESCRIPTIONS`.
MODEL_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("QueueProfile", "group_id"): "share group (KIP-932), not a consumer group",
    ("ProcessingProfile", "bootstrap_servers"): "the cluster of both sides, given once: "
    "passed to consumer and producer where they do not set it; a side that sets another is "
    "an error",
    ("ProcessingProfile", "security"): "the connection security of both sides, given once "
    "(passed down like bootstrap_servers)",
}

_MODELS: list[tuple[type[BaseModel], str]] = [
    (
        ProducerProfile,
        "producer side of a profile (`profiles.<name>` or `profiles.<name>.producer`)",
    ),
    (ConsumerProfile, "consumer side (`profiles.<name>` or `profiles.<name>.consumer`)"),
    (ProcessingProfile, "read-process-write (`profiles.<name>.processing`)"),
    (
        QueueProfile,
        "queue (share group, `sdk.queue`) side (`profiles.<name>` or `profiles.<name>.queue`); "
        "exactly_once is refused",
    ),
    (
        FailurePolicy,
        "`failure:` of a consumer or queue profile (on a queue a retry is a "
        "redelivery: the backoff fields are not used at_least_once)",
    ),
    (SecurityProfile, "`security:` of any profile"),
    (
        SchemaRegistryConfig,
        "`schema_registry:` of a profile or of `defaults` (`sdk.schemas.SchemaRegistryConfig`, "
        "see schemas.md): validated when the file loads, returned by "
        "`profiles.schema_registry(name)` (None without the section) and never passed to the "
        "sides; a profile's own section replaces the defaults' as a whole, and "
        "`python -m sdk doctor` checks the registry it names (doctor.md)",
    ),
]


def _type_name(annotation: Any) -> str:
    """A stable, version-independent rendering of a field's type."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " \\| ".join(repr(a) for a in args)
    if origin in (Union, UnionType):
        return " \\| ".join(_type_name(a) for a in args)
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else _type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def _default(model: type[BaseModel], name: str) -> str:
    info = model.model_fields[name]
    if info.is_required():
        return "**required**"
    if info.default is PydanticUndefined and info.default_factory is not None:
        return f"`{info.default_factory()!r}`"  # type: ignore[call-arg]
    value = info.default
    if isinstance(value, BaseModel):
        return f"`{type(value).__name__}()`"
    if isinstance(value, SecretStr):
        return "`********`"
    return f"`{value!r}`"


def reference_markdown() -> str:
    """Render the profile reference page.

    Returns:
        Markdown for docs/profiles.md.

    Raises:
        KeyError: A model field has no entry in :data:`DESCRIPTIONS`.
    """
    lines = [
        "# Profile reference",
        "",
        "Generated from the pydantic models by `python -m sdk profile reference` (a test keeps "
        "this page in sync). Guarantees: "
        + ", ".join(f"`{g.value}`" for g in Guarantee)
        + ". `python -m sdk profile explain NAME|GUARANTEE` shows the librdkafka settings a "
        "profile renders to, and why.",
        "",
        "Every model below but the last is exported by `sdk.profiles`, beside `Guarantee` "
        "(the enum of those "
        "names; a string works wherever it is taken) and `load_profiles(source)`, which reads "
        "named profiles from a mapping, a YAML file or the environment and returns a "
        "`ProfileSet`: `profiles.producer(name)`, `.consumer(name)`, `.processing(name)` and "
        "`.queue(name)` build the profiles (keyword arguments override fields), "
        "`.schema_registry(name)` returns its registry, `.names` lists them.",
    ]
    for model, where in _MODELS:
        lines += ["", f"## {model.__name__}", "", f"The {where}.", ""]
        lines += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
        for name, info in model.model_fields.items():
            lines.append(
                f"| `{name}` | {_type_name(info.annotation)} | {_default(model, name)} | "
                f"{MODEL_DESCRIPTIONS.get((model.__name__, name), DESCRIPTIONS[name])} |"
            )
    lines += [
        "",
        "## Example",
        "",
        "```yaml",
        "defaults:",
        "  bootstrap_servers: kafka-1:9092,kafka-2:9092",
        "profiles:",
        "  orders:",
        "    guarantee: exactly_once",
        "    group_id: order-service",
        "    transactional_id_prefix: order-service-",
        "    failure: {attempts: 3, on_failure: dlq, dlq_topic: orders-dlq}",
        "  metrics: at_most_once",
        "  logs:",
        "    guarantee: at_least_once",
        "    group_id: log-collector",
        "    producer: {linger_ms: 50, compression: zstd}",
        "  payments:",
        "    guarantee: at_least_once",
        "    group_id: payments-service",
        "    schema_registry:           # the registry of its (de)serializers",
        "      url: http://registry:8081",
        "      auto_register: false     # schemas are registered by the deployment",
        "```",
        "",
        "Environment: `KSEM_PROFILE_FILE` names such a file, `KSEM_BOOTSTRAP_SERVERS` sets the "
        "default servers, and `KSEM_PROFILES__<NAME>__<FIELD>` sets one field.",
    ]
    return "\n".join(lines) + "\n"
