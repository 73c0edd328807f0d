"""The schema registry of a profile: does it answer, and does each topic's subject hold a schema.

Runs only when a registry is configured (``check(..., schema_registry=...)``, or the profile's
``schema_registry`` section on the command line), and imports confluent-kafka's registry client
only then: a doctor without a registry does not need the ``schema-registry`` extra.

Subjects follow the ``topic`` strategy (``<topic>-value``, ``<topic>-key``); under ``record`` and
``topic_record`` they are named after the records written, which no topic name tells.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sdk.doctor._facts import Unreadable
from sdk.doctor._report import Check, Status
from sdk.doctor._subject import Subject
from sdk.schemas import SchemaRegistryConfig

__all__ = ["registry_checks"]

NAME = "schema registry"

_EXTRA = "pip install 'kafka-semantics[schema-registry]'"

_CONTENT_TYPE = "-H 'Content-Type: application/vnd.schemaregistry.v1+json'"

# what each compatibility level lets a new schema do, and so which side of a change goes first
_BACKWARD = (
    "upgrade consumers first: a new schema may delete fields and add optional ones (with "
    "defaults), so consumers on it still read the records already written"
)
_FORWARD = (
    "upgrade producers first: a new schema may add fields and delete optional ones, so "
    "consumers still on the old one read what the upgraded producers write"
)
_FULL = "either order: a new schema may only add or delete optional fields"
_LEVELS = {
    "BACKWARD": f"{_BACKWARD} (checked against the latest version)",
    "BACKWARD_TRANSITIVE": f"{_BACKWARD} (checked against every version)",
    "FORWARD": f"{_FORWARD} (checked against the latest version)",
    "FORWARD_TRANSITIVE": f"{_FORWARD} (checked against every version)",
    "FULL": f"{_FULL} (checked against the latest version)",
    "FULL_TRANSITIVE": f"{_FULL} (checked against every version)",
}


def registry_checks(s: Subject, config: SchemaRegistryConfig, *, timeout_s: float) -> list[Check]:
    """Check the registry of ``config`` and the subjects of the topics of ``s``.

    Reads only (``GET /subjects``, ``/subjects/{s}/versions/latest``, ``/config``), with a
    client of its own: the serializers' shared client caches latest versions for the life of
    the process, and the doctor must judge what the registry holds now.

    Args:
        s: The profile and its topics; the dead-letter topic is left out (it carries the
            failed records' raw bytes, never a schema).
        config: The registry and how the serializers use it.
        timeout_s: Seconds each request may take.

    Returns:
        ``schema registry`` (reachable), then one check per subject; a registry that does not
        answer, or a missing ``schema-registry`` extra, is one FAIL and nothing else.
    """
    try:
        # imported here: only a profile with a registry needs the extra
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError as exc:
        return [
            Check(
                NAME,
                Status.FAIL,
                f"the schema-registry extra is not installed ({exc})",
                "the profile names a registry, but its (de)serializers and client cannot be "
                "imported: building any of them raises ConfigurationError",
                _EXTRA,
            )
        ]
    conf = {**config.client_conf(), "timeout": timeout_s}
    # new_client (confluent-kafka 2.14+): a mock:// url gets the in-memory registry, as the
    # serializers' registry_client does
    factory = getattr(SchemaRegistryClient, "new_client", SchemaRegistryClient)
    # the context manager closes its HTTP session in every supported client (close() is
    # 2.14+ only)
    with factory(conf) as client:
        return _checks(s, config, client)


def _checks(s: Subject, config: SchemaRegistryConfig, client: Any) -> list[Check]:
    url = shown_url(config.url)
    try:
        subjects = set(client.get_subjects())
    except Exception as exc:  # whatever the registry answers, or not, is the check's finding
        return [_unreachable(config, exc)]
    checks = [Check(NAME, Status.PASS, f"{url} answered: {len(subjects)} subject(s)")]
    roles = {t: "input" for t in s.inputs}
    roles.update({t: "output" for t in s.outputs if t != s.dead_letter})
    if not roles:
        return checks
    if config.subject_name_strategy != "topic":
        checks.append(_underivable(config, list(roles)))
        return checks
    for topic, role in roles.items():
        value = f"{topic}-value"
        if value in subjects:
            checks.append(_existing(client, config, topic, value))
        else:
            checks.append(_missing(config, topic, value, role))
        key = f"{topic}-key"
        if key in subjects:  # a key subject only when keys are written with a schema
            checks.append(_existing(client, config, topic, key))
    return checks


def _curl(config: SchemaRegistryConfig, args: str, path: str) -> str:
    """A curl command against the (first) registry, with the credentials when it needs them."""
    auth = " -u '<user>:<password>'" if config.basic_auth is not None else ""
    base = shown_url(config.url).split(",")[0].rstrip("/")
    return f"curl{auth}{args} {base}{path}"


def _unreachable(config: SchemaRegistryConfig, exc: Exception) -> Check:
    return Check(
        NAME,
        Status.FAIL,
        f"{shown_url(config.url)} did not answer GET /subjects: {type(exc).__name__}: {exc}",
        f"a consumer waits on a record whose schema it does not hold for up to "
        f"registry_timeout_s ({config.registry_timeout_s:g} s), then stops with "
        f"SchemaRegistryUnavailableError; a producer's send() raises "
        f"SchemaRegistryUnavailableError and queues nothing",
        f"check schema_registry.url (Apicurio's Confluent API ends /apis/ccompat/v7), "
        f"basic_auth and the network from this host: {_curl(config, '', '/subjects')}",
    )


def _underivable(config: SchemaRegistryConfig, topics: list[str]) -> Check:
    naming = {
        "record": "the record's full name (com.acme.Order)",
        "topic_record": "<topic>-<the record's full name>",
    }[config.subject_name_strategy]
    return Check(
        "schema subjects",
        Status.WARN,
        f"subject_name_strategy {config.subject_name_strategy}: subjects are named "
        f"{naming}; topics {', '.join(topics)}",
        "the subjects cannot be derived from topic names alone (the record's name decides), "
        "so the doctor does not check that they exist or how they evolve",
        f"list them: {_curl(config, '', '/subjects')} (each one's compatibility: "
        f"/config/<subject>?defaultToGlobal=true)",
    )


def _existing(client: Any, config: SchemaRegistryConfig, topic: str, subject: str) -> Check:
    name = f"topic {topic}: schema subject {subject}"
    try:
        latest = client.get_latest_version(subject)
    except Exception as exc:  # listed but unreadable: an ACL on the subject, a 5xx
        return Check(
            name,
            Status.WARN,
            f"listed, but its latest version could not be read: {type(exc).__name__}: {exc}",
            "the doctor cannot tell which schema the serializers will meet",
            _curl(config, "", f"/subjects/{subject}/versions/latest"),
        )
    schema_type = getattr(latest.schema, "schema_type", None) or "AVRO"
    version = f"version {latest.version} (schema id {latest.schema_id}, {schema_type})"
    level = _compatibility(client, subject)
    config_cmd = _curl(
        config,
        f' -X PUT {_CONTENT_TYPE} --data \'{{"compatibility": "BACKWARD"}}\'',
        f"/config/{subject}",
    )
    if isinstance(level, Unreadable):
        return Check(
            name,
            Status.WARN,
            f"{version}; compatibility unreadable: {level.reason}",
            "the compatibility level decides which side of a schema change to roll out first; "
            "unread, nothing tells whether a new schema can break the running consumers",
            _curl(config, "", f"/config/{subject}?defaultToGlobal=true"),
        )
    compatibility, where = level
    meaning = _LEVELS.get(compatibility)
    found = f"{version}; compatibility {compatibility} ({where})"
    if compatibility == "NONE":
        return Check(
            name,
            Status.WARN,
            found,
            "the registry accepts any schema for this subject: a producer may register one the "
            "running consumers cannot read, and each of its records is then a poison record "
            "(SerializationError, the failure policy)",
            config_cmd,
        )
    if meaning is None:
        return Check(
            name,
            Status.WARN,
            f"{found}: not a level the doctor knows",
            "the rollout order of a schema change cannot be told from it",
            config_cmd,
        )
    return Check(name, Status.PASS, f"{found}: {meaning}", meaning)


def _compatibility(client: Any, subject: str) -> tuple[str, str] | Unreadable:
    """The subject's compatibility level and where it is set (subject-level, else global)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    try:
        return str(client.get_compatibility(subject)), "subject-level"
    except SchemaRegistryError as exc:
        # 404: the subject has no level of its own (Confluent's 40408) and the global one applies
        if exc.http_status_code != 404:
            return Unreadable(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # not answered, or an answer without compatibilityLevel
        return Unreadable(f"{type(exc).__name__}: {exc}")
    try:
        return str(client.get_compatibility()), "global"
    except Exception as exc:
        return Unreadable(f"{type(exc).__name__}: {exc}")


def _missing(config: SchemaRegistryConfig, topic: str, subject: str, role: str) -> Check:
    name = f"topic {topic}: schema subject {subject}"
    if role == "output" and config.auto_register:
        return Check(
            name,
            Status.PASS,
            "not registered yet: registered by the first send() (auto_register on)",
        )
    if role == "output":
        return Check(
            name,
            Status.FAIL,
            "does not exist, and auto_register is off",
            f"every send() to {topic} fails with SerializationError: the serializer looks its "
            f"schema up in {subject}, which lacks it, and nothing is queued",
            "register the schema before the producers start, e.g. in a CI step:\n"
            + _curl(
                config,
                f' -X POST {_CONTENT_TYPE} --data \'{{"schema": "<the schema, as a JSON '
                f"string>\"}}'",
                f"/subjects/{subject}/versions",
            ),
        )
    return Check(
        name,
        Status.WARN,
        "does not exist",
        f"no record has been written to {topic} with a schema yet, or its producers use "
        f"another subject_name_strategy (record, topic_record); the deserializers find a "
        f"record's schema by the id in it either way, but the doctor cannot judge how the "
        f"schema may evolve",
        "nothing to do before the producers start; else give this profile the producers' "
        "subject_name_strategy",
    )


def shown_url(url: str) -> str:
    """``url`` (each of a comma-separated list) without the credentials of its user info."""
    shown = []
    for one in url.split(","):
        parts = urlsplit(one.strip())
        if "@" in parts.netloc:
            parts = parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1])
        shown.append(urlunsplit(parts))
    return ",".join(shown)
