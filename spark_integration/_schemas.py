"""Schema registry Avro in DataFrames: decode and encode Confluent's wire format per row.

Spark's own ``from_avro`` reads bare Avro with one writer schema for every row; a topic written
through a schema registry holds a magic byte and a 4-byte schema id before each payload, and
its rows may carry different schema versions. :func:`from_registry_avro` decodes each row with
its own writer schema (fetched by id, once per id per executor process) resolved into one
reader schema, whose Spark type is the column's; :func:`to_registry_avro` is the reverse.

Both are plain Python UDFs over :mod:`sdk.schemas`' (de)serializers, so they run on classic
Spark and through Spark Connect alike. The UDF's closure holds only the config and the schema
(strings and a pydantic model): each Python worker builds its (de)serializer on first use and
keeps it in a module-level cache, so no registry client is ever pickled.

Failures are told apart as the SDK's consumers tell them (:func:`sdk.schemas.unavailable_reason`):
a registry that does not answer fails the task with ``SchemaRegistryUnavailableError`` (Spark
retries the task, a batch job is re-run) and never becomes a null; a record that is not
readable (not in the wire format, not valid for its schema, a schema id the registry does not
know) is a poison record: it fails the task with a ``SerializationError`` naming the record, or
becomes null with ``on_poison="null"``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, Literal

from sdk.errors import ConfigurationError, SchemaRegistryUnavailableError, SerializationError
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.serialization import MessageField, SerializationContext

__all__ = ["KAFKA_COLUMNS", "avro_spark_type", "from_registry_avro", "to_registry_avro"]

OnPoison = Literal["fail", "null"]
KAFKA_COLUMNS = ("topic", "partition", "offset")
"""The Kafka source's columns a poison record's error names by default."""

_SIMPLE = {
    "null": "NullType",
    "boolean": "BooleanType",
    "int": "IntegerType",
    "long": "LongType",
    "float": "FloatType",
    "double": "DoubleType",
    "string": "StringType",
    "bytes": "BinaryType",
}
# logical types whose Python value (fastavro's) Spark takes as it is; the others fastavro
# turns into values a Spark column cannot hold (uuid.UUID, datetime.time) and are refused
_LOGICAL = {
    "date": "DateType",
    "timestamp-millis": "TimestampType",
    "timestamp-micros": "TimestampType",
    "local-timestamp-millis": "TimestampNTZType",
    "local-timestamp-micros": "TimestampNTZType",
}
_REFUSED_LOGICAL = ("uuid", "time-millis", "time-micros")
_ROW_BITS = 33  # monotonically_increasing_id(): the partition id above, the row number below


def _parse(schema: str, field: str) -> tuple[Any, dict[str, Any]]:
    """Parse Avro JSON with fastavro (names made full, named types collected)."""
    try:
        import fastavro
    except ImportError as exc:  # pragma: no cover - the schema-registry extra brings it
        raise ConfigurationError(
            f"{field}: registry Avro needs the extra: pip install "
            "'kafka-semantics[schema-registry]'",
            field=field,
        ) from exc
    named: dict[str, Any] = {}
    try:
        parsed = fastavro.parse_schema(json.loads(schema), named_schemas=named)
    except Exception as exc:  # JSON or Avro: both are the schema's fault
        raise ConfigurationError(
            f"{field}: not a valid Avro schema ({type(exc).__name__}: {exc})", field=field
        ) from exc
    return parsed, named


def avro_spark_type(schema: str, *, field: str = "reader_schema") -> Any:
    """The Spark type of values read with the Avro ``schema`` (a record: a ``StructType``).

    Mapping: ``null`` unions → nullable (``["null", T]`` is ``T``, nullable; a field of any
    other type is not nullable); ``boolean``, ``int``, ``long``, ``float``, ``double``,
    ``string``, ``bytes`` → their Spark types; ``enum`` → string; ``fixed`` → binary;
    ``array`` → ``ArrayType``; ``map`` → ``MapType`` with string keys; ``record`` →
    ``StructType``; logical types ``decimal`` → ``DecimalType``, ``date`` → ``DateType``,
    ``timestamp-*`` → ``TimestampType``, ``local-timestamp-*`` → ``TimestampNTZType``.

    Args:
        schema: Avro schema JSON.
        field: The argument named in errors.

    Returns:
        A ``pyspark.sql.types.DataType``.

    Raises:
        ConfigurationError: The schema is invalid, or holds a type with no Spark type (a union
            of several non-null types, a recursive record, ``uuid``, ``time-*``); the message
            names the Avro type and where it is.
    """
    parsed, named = _parse(schema, field)
    data_type, _ = _convert(parsed, named, (), "", field)
    return data_type


def _refuse(what: str, path: str, field: str, why: str) -> ConfigurationError:
    at = f" at {path}" if path else ""
    return ConfigurationError(f"{field}: Avro type {what}{at} {why}", field=field)


def _convert(
    node: Any, named: dict[str, Any], stack: tuple[str, ...], path: str, field: str
) -> tuple[Any, bool]:
    """(Spark type, nullable) of one Avro schema node; ``stack``: the records being converted."""
    from pyspark.sql import types as T

    if isinstance(node, list):  # a union
        branches = [b for b in node if b != "null"]
        if len(branches) > 1:
            names = ", ".join(b if isinstance(b, str) else str(b.get("type")) for b in branches)
            raise _refuse(f"union [{names}]", path, field, "has no Spark type (one non-null only)")
        if not branches:
            return T.NullType(), True
        data_type, nullable = _convert(branches[0], named, stack, path, field)
        return data_type, nullable or len(branches) < len(node)
    if isinstance(node, str):
        if node in _SIMPLE:
            return getattr(T, _SIMPLE[node])(), node == "null"
        if node in stack:
            raise _refuse(f"{node!r}", path, field, "is recursive: a Spark type cannot nest itself")
        if node in named:
            return _convert(named[node], named, stack, path, field)
        raise _refuse(f"{node!r}", path, field, "is not defined")
    kind, logical = node["type"], node.get("logicalType")
    if logical in _REFUSED_LOGICAL:
        raise _refuse(f"{kind} ({logical})", path, field, "is not mapped to a Spark type")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(node["precision"]), int(node.get("scale", 0))
        if precision > 38:
            raise _refuse(f"decimal({precision}, {scale})", path, field, "exceeds Spark's 38")
        return T.DecimalType(precision, scale), False
    if logical in _LOGICAL:
        return getattr(T, _LOGICAL[logical])(), False
    if kind in ("record", "error"):
        name = node["name"]
        fields = []
        for f in node["fields"]:
            where = f"{path}.{f['name']}" if path else f["name"]
            data_type, nullable = _convert(f["type"], named, (*stack, name), where, field)
            fields.append(T.StructField(f["name"], data_type, nullable))
        return T.StructType(fields), False
    if kind == "enum":
        return T.StringType(), False
    if kind == "fixed":
        return T.BinaryType(), False
    if kind == "array":
        items, nullable = _convert(node["items"], named, stack, f"{path}[]", field)
        return T.ArrayType(items, containsNull=nullable), False
    if kind == "map":
        values, nullable = _convert(node["values"], named, stack, f"{path}{{}}", field)
        return T.MapType(T.StringType(), values, valueContainsNull=nullable), False
    if isinstance(kind, str | list) and kind != node:  # {"type": "long"}, {"type": [...]}
        return _convert(kind, named, stack, path, field)
    raise _refuse(f"{kind!r}", path, field, "is not mapped to a Spark type")


def _config_key(config: SchemaRegistryConfig) -> str:
    # every setting that changes a (de)serializer; the secret too (unlike a model dump)
    conf = sorted((k, repr(v)) for k, v in config.client_conf().items())
    return repr((conf, config.subject_name_strategy, config.auto_register, config.normalize))


_serdes: dict[tuple[str, str, str], Any] = {}
_serdes_lock = threading.Lock()


def _serde(kind: str, config: SchemaRegistryConfig, schema: str) -> Any:
    """This process's (de)serializer for ``(config, schema)``: built on first use, then kept.

    Its registry client (one per config per process, :mod:`sdk.schemas`) caches each writer
    schema by id, so a Python worker asks the registry once per schema id.
    """
    key = (kind, _config_key(config), schema)
    with _serdes_lock:
        serde = _serdes.get(key)
        if serde is None:
            build = avro_deserializer if kind == "read" else avro_serializer
            serde = _serdes[key] = build(config, schema)
        return serde


class _Decode:
    """The UDF body of :func:`from_registry_avro` (picklable: a config and strings only)."""

    def __init__(
        self,
        config: SchemaRegistryConfig,
        reader_schema: str,
        on_poison: OnPoison,
        record_columns: tuple[str, ...] | None,
    ) -> None:
        self.__name__ = "from_registry_avro"  # the UDF's name in plans and column names
        self.config = config
        self.reader_schema = reader_schema
        self.on_poison = on_poison
        self.record_columns = record_columns

    def where(self, values: Sequence[Any]) -> str:
        """The record, as its columns (or its place in the Spark partition) tell it."""
        if self.record_columns is None:
            partition, row_id = values
            return f"Spark partition {partition}, row {row_id & ((1 << _ROW_BITS) - 1)}"
        named = dict(zip(self.record_columns, values, strict=True))
        if set(KAFKA_COLUMNS) <= named.keys():
            return f"{named['topic']}[{named['partition']}]@{named['offset']}"
        return ", ".join(f"{name}={value!r}" for name, value in named.items())

    def __call__(self, data: bytes | None, *record: Any) -> Any:
        """Decode one row; None stays None.

        Raises:
            SchemaRegistryUnavailableError: The registry did not answer (never a null).
            SerializationError: A poison record, with ``on_poison="fail"``.
        """
        if data is None:
            return None
        topic = ""
        if self.record_columns is not None and "topic" in self.record_columns:
            topic = str(record[self.record_columns.index("topic")])
        ctx = SerializationContext(topic, MessageField.VALUE)
        # built outside the try: a worker that cannot build it (the extra missing) must fail,
        # not turn every row into a "poison" null
        deserializer = _serde("read", self.config, self.reader_schema)
        try:
            return deserializer(bytes(data), ctx)
        except SchemaRegistryUnavailableError:
            raise  # the registry's fault: Spark retries the task; a null would lose the record
        except Exception as exc:
            if self.on_poison == "null":
                return None
            raise SerializationError(
                f"from_registry_avro: the record at {self.where(record)} is not readable "
                f"registry Avro ({type(exc).__name__}: {exc}); on_poison='null' turns such "
                "records into nulls"
            ) from exc


class _Encode:
    """The UDF body of :func:`to_registry_avro` (picklable: a config and strings only)."""

    def __init__(
        self, config: SchemaRegistryConfig, schema: str, topic: str, field: MessageField
    ) -> None:
        self.__name__ = "to_registry_avro"
        self.config = config
        self.schema = schema
        self.topic = topic
        self.field = field

    def __call__(self, value: Any) -> bytes | None:
        """Encode one row (a struct comes as a ``Row``); None stays None.

        Raises:
            SchemaRegistryUnavailableError: The registry did not answer.
            SerializationError: The value does not fit the schema, or the registry refused it.
        """
        if value is None:
            return None
        obj = value.asDict(recursive=True) if hasattr(value, "asDict") else value
        ctx = SerializationContext(self.topic, self.field)
        serializer = _serde("write", self.config, self.schema)
        try:
            data: bytes | None = serializer(obj, ctx)
        except (SchemaRegistryUnavailableError, SerializationError):
            raise
        except Exception as exc:
            raise SerializationError(
                f"to_registry_avro: a row does not fit the schema ({type(exc).__name__}: {exc})"
            ) from exc
        return data


def _column(column: Any) -> Any:
    from pyspark.sql import functions as F

    return F.col(column) if isinstance(column, str) else column


def from_registry_avro(
    column: Any,
    config: SchemaRegistryConfig,
    reader_schema: str,
    *,
    on_poison: OnPoison = "fail",
    record_columns: Sequence[str] | None = KAFKA_COLUMNS,
) -> Any:
    """Decode a binary column in the registry's wire format into a column of ``reader_schema``.

    Each row is read with its writer schema (by the id in the record, asked of the registry
    once per id per Python worker) and resolved into ``reader_schema`` (Avro schema
    resolution: a field added with a default gets it, a removed field is dropped), so rows of
    several schema versions decode into one column. Its type is
    :func:`avro_spark_type` of ``reader_schema``; null stays null. ``use_latest_version`` does
    not apply here: rows are always read into ``reader_schema``, the column's type.

    A poison record (bytes not in the wire format or not valid for their schema, a schema id
    the registry does not know, a writer schema that does not resolve into ``reader_schema``)
    fails the task with ``SerializationError`` naming
    ``topic[partition]@offset`` (the ``record_columns``' values; with ``record_columns=None``
    the Spark partition and the row's index in it), and so the job. ``on_poison="null"`` makes
    it null instead; route them with ``decoded.isNull() & value.isNotNull()``. A registry that
    does not answer always fails the task with ``SchemaRegistryUnavailableError`` (Spark
    retries it); it never makes a null.

    Args:
        column: The binary column (a ``Column`` or its name), e.g. the Kafka source's ``value``.
        config: The registry (its ``url`` must be reachable from the executors).
        reader_schema: Avro schema JSON every row is read into.
        on_poison: ``"fail"`` (default) or ``"null"``.
        record_columns: Columns of the DataFrame named in a poison record's error (default the
            Kafka source's ``topic``, ``partition``, ``offset``); None for a DataFrame without
            them.

    Returns:
        A ``Column`` of :func:`avro_spark_type` ``(reader_schema)``.

    Raises:
        ConfigurationError: ``reader_schema`` is invalid or has a type with no Spark type, or
            ``on_poison`` is unknown (the message names the argument).
    """
    if on_poison not in ("fail", "null"):
        raise ConfigurationError(
            f"on_poison: 'fail' or 'null', not {on_poison!r}", field="on_poison"
        )
    data_type = avro_spark_type(reader_schema)
    from pyspark.sql import functions as F

    names = tuple(record_columns) if record_columns is not None else None
    reading = config.model_copy(update={"use_latest_version": False})
    decode = F.udf(_Decode(reading, reader_schema, on_poison, names), data_type, useArrow=False)
    if names is None:
        record = [F.spark_partition_id(), F.monotonically_increasing_id()]
    else:
        record = [F.col(name) for name in names]
    return decode(_column(column), *record)


def to_registry_avro(
    column: Any,
    config: SchemaRegistryConfig,
    schema: str,
    *,
    topic: str = "",
    key: bool = False,
) -> Any:
    """Encode a column (a struct for a record schema) into the registry's wire format.

    The schema is registered as ``config.auto_register`` says (with ``use_latest_version``
    the subject's latest is written instead), under the subject ``config``'s strategy names
    for ``topic`` (the value's, or the key's with ``key=True``). Struct field names must be
    the record's field names. The binary column goes to Spark's Kafka sink or, as the value of
    output records, to the exactly-once helpers. Null stays null.

    A value the schema does not fit fails the task with ``SerializationError``; a registry
    that does not answer with ``SchemaRegistryUnavailableError`` (Spark retries the task).

    Args:
        column: The column to encode (a ``Column`` or its name).
        config: The registry.
        schema: The writer schema (Avro JSON).
        topic: The topic written to (names the subject; needed unless the strategy is
            ``record``).
        key: Encode the record's key (subject ``<topic>-key``) instead of its value.

    Returns:
        A binary ``Column``.

    Raises:
        ConfigurationError: ``schema`` is invalid, or ``topic`` is missing for a topic
            subject strategy.
    """
    _parse(schema, "schema")
    if not topic and config.subject_name_strategy != "record":
        raise ConfigurationError(
            f"topic: the subject name strategy {config.subject_name_strategy!r} names the "
            "subject after the topic; pass topic=",
            field="topic",
        )
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    field = MessageField.KEY if key else MessageField.VALUE
    encode = F.udf(_Encode(config, schema, topic, field), T.BinaryType(), useArrow=False)
    return encode(_column(column))
