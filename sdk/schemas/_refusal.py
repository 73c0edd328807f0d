"""A schema the registry refuses to register (HTTP 409): say which subject, level and field.

The registry's own answer to an incompatible schema is terse and differs between registries
(Confluent's lists rule names, Apicurio's ccompat API may say only "incompatible"). A producer
that auto-registers a new schema version needs three facts to act on it: the subject, the
compatibility level that refused it, and what in the schema broke that level. The first two
are asked of the registry; for Avro records the third is found by comparing the refused schema
with the subject's latest version under the level's rule (a best effort: the direct fields of
the record, which is where a rollout breaks in practice). Other formats name the registry's
reason only.
"""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka.serialization import MessageField, SerializationContext

from sdk.errors import SerializationError

__all__ = ["avro_changes", "refused", "subject_of"]

_MEANING = {
    "BACKWARD": "consumers on the new schema must read records written with the previous one",
    "FORWARD": "consumers still on the previous schema must read records written with the new one",
    "FULL": "both: old and new readers must read old and new records",
}


def subject_of(strategy: str, ctx: SerializationContext, schema: str | None) -> str:
    """The subject a serializer registers under, by the config's subject-name strategy."""
    field = "key" if ctx.field == MessageField.KEY else "value"
    if strategy == "topic":
        return f"{ctx.topic}-{field}"
    name = _full_name(schema) or "<record name>"
    return name if strategy == "record" else f"{ctx.topic}-{name}"


def refused(
    client: Any, exc: Any, kind: str, strategy: str, ctx: SerializationContext, schema: str | None
) -> SerializationError:
    """The error for a registration the registry refused with ``exc`` (a 409).

    Args:
        client: The registry client (asked for the level and the latest version).
        exc: The ``SchemaRegistryError`` the registration raised.
        kind: ``avro``, ``protobuf`` or ``json_schema``.
        strategy: The config's subject-name strategy.
        ctx: Topic and key or value.
        schema: The schema that was to be registered (Avro JSON for ``avro``), if known.
    """
    subject = subject_of(strategy, ctx, schema)
    level = _level(client, subject)
    base = level.split("_", 1)[0]
    meaning = _MEANING.get(base, "")
    changes: list[str] = []
    if kind == "avro" and schema is not None and base in _MEANING:
        try:
            latest = client.get_latest_version(subject).schema.schema_str
            changes = avro_changes(latest, schema, base)
        except Exception:  # the registry's reason is still said below
            changes = []
    because = "; ".join(changes) if changes else f"the registry says: {exc.error_message}"
    return SerializationError(
        f"the schema registry refused the new {kind} schema for subject {subject!r}: it is "
        f"incompatible under the subject's compatibility level {level}"
        + (f" ({meaning})" if meaning else "")
        + f": {because}. Nothing was sent. Make the change compatible (e.g. give an added "
        "field a default), or change the subject's level on purpose"
    )


def _level(client: Any, subject: str) -> str:
    """The subject's compatibility level, else the registry's global one ("unknown")."""
    for name in (subject, None):
        try:
            level = client.get_compatibility(name)
        except Exception:  # no subject-level config (404), or not answered: try the next
            continue
        if level:
            return str(getattr(level, "value", level)).upper()
    return "unknown"


def _full_name(schema: str | None) -> str | None:
    try:
        parsed = json.loads(schema) if schema else None
    except ValueError:
        return None
    if not isinstance(parsed, dict) or "name" not in parsed:
        return None
    name, namespace = str(parsed["name"]), parsed.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _fields(schema: str) -> dict[str, dict[str, Any]]:
    parsed = json.loads(schema)
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        return {}
    return {str(f["name"]): f for f in parsed.get("fields", []) if isinstance(f, dict)}


def avro_changes(old: str, new: str, level: str) -> list[str]:
    """What in ``new`` breaks ``level`` (BACKWARD, FORWARD or FULL) against ``old``.

    Compares the record's direct fields: a field a reader expects that the writer lacks needs
    a default in the reader's schema; a field in both must keep its type.
    """
    before, after = _fields(old), _fields(new)
    found: list[str] = []
    if level in ("BACKWARD", "FULL"):  # the new schema reads old records
        for name, field in after.items():
            if name not in before and "default" not in field:
                found.append(
                    f"field {name!r} was added without a default, so a consumer on the new "
                    "schema cannot read records written before it"
                )
    if level in ("FORWARD", "FULL"):  # the old schema reads new records
        for name, field in before.items():
            if name not in after and "default" not in field:
                found.append(
                    f"field {name!r} was removed and the previous schema has no default for "
                    "it, so consumers still on the previous schema cannot read the new records"
                )
    for name in sorted(before.keys() & after.keys()):
        was, now = before[name].get("type"), after[name].get("type")
        if was != now:
            found.append(f"field {name!r} changed type from {json.dumps(was)} to {json.dumps(now)}")
    return found
