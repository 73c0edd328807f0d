"""Registry Avro for DataFrames without Spark: the Avro → Spark type mapping, the refusals, and
the UDF bodies themselves on confluent-kafka's mock:// registry (an unreachable registry is a
closed local port)."""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from sdk.errors import ConfigurationError, SchemaRegistryUnavailableError, SerializationError
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.serialization import MessageField, SerializationContext
from spark_integration import avro_spark_type, from_registry_avro, to_registry_avro
from spark_integration._schemas import _Decode, _Encode
from tests.sdk.schemas.test_registry_consumer import V1, V2
from tests.sdk.schemas.test_serde import _closed_port_url, _mock

KAFKA = ("topic", "partition", "offset")


def _write(config: SchemaRegistryConfig, schema: str, value: dict[str, Any]) -> bytes:
    ctx = SerializationContext("orders", MessageField.VALUE)
    data = avro_serializer(config, schema)(value, ctx)
    assert isinstance(data, bytes)
    return data


def _record(fields: str) -> str:
    return '{"type": "record", "name": "R", "namespace": "t", "fields": [' + fields + "]}"


def test_avro_types_map_to_spark_types() -> None:
    schema = _record(
        """{"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
        {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
        {"name": "d", "type": "double"}, {"name": "s", "type": ["null", "string"]},
        {"name": "raw", "type": "bytes"},
        {"name": "e", "type": {"type": "enum", "name": "Colour", "symbols": ["RED"]}},
        {"name": "h", "type": {"type": "fixed", "name": "Hash", "size": 4}},
        {"name": "tags", "type": {"type": "array", "items": ["null", "string"]}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "home", "type": {"type": "record", "name": "Addr",
                                  "fields": [{"name": "city", "type": "string"}]}},
        {"name": "work", "type": ["null", "Addr"], "default": null},
        {"name": "again", "type": "t.Colour"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                   "precision": 9, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "other", "type": {"type": "string", "logicalType": "not-known"}}"""
    )
    addr = T.StructType([T.StructField("city", T.StringType(), False)])
    assert avro_spark_type(schema) == T.StructType(
        [
            T.StructField("b", T.BooleanType(), False),
            T.StructField("i", T.IntegerType(), False),
            T.StructField("l", T.LongType(), False),
            T.StructField("f", T.FloatType(), False),
            T.StructField("d", T.DoubleType(), False),
            T.StructField("s", T.StringType(), True),
            T.StructField("raw", T.BinaryType(), False),
            T.StructField("e", T.StringType(), False),
            T.StructField("h", T.BinaryType(), False),
            T.StructField("tags", T.ArrayType(T.StringType(), containsNull=True), False),
            T.StructField("counts", T.MapType(T.StringType(), T.LongType(), False), False),
            T.StructField("home", addr, False),
            T.StructField("work", addr, True),
            T.StructField("again", T.StringType(), False),
            T.StructField("price", T.DecimalType(9, 2), False),
            T.StructField("day", T.DateType(), False),
            T.StructField("at", T.TimestampType(), False),
            T.StructField("local", T.TimestampNTZType(), False),
            T.StructField("other", T.StringType(), False),
        ]
    )
    assert avro_spark_type('"long"') == T.LongType()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ('{"name": "x", "type": ["null", "int", "string"]}', r"union \[int, string\] at x"),
        (
            '{"name": "next", "type": ["null", "t.R"]}',
            r"'t.R' at next is recursive",
        ),
        (
            '{"name": "u", "type": {"type": "array", "items": '
            '{"type": "string", "logicalType": "uuid"}}}',
            r"string \(uuid\) at u\[\] is not mapped",
        ),
        (
            '{"name": "t", "type": {"type": "int", "logicalType": "time-millis"}}',
            r"int \(time-millis\) at t is not mapped",
        ),
        (
            '{"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40}}',
            r"decimal\(40, 0\) at big exceeds",
        ),
    ],
)
def test_avro_types_without_a_spark_type_are_refused_by_name(fields: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as info:
        avro_spark_type(_record(fields))
    assert info.value.field == "reader_schema"


def test_an_invalid_schema_is_refused_before_spark_is_touched() -> None:
    with pytest.raises(ConfigurationError, match="reader_schema: not a valid Avro schema") as info:
        from_registry_avro("value", _mock(), _record('{"name": "x", "type": "nope"}'))
    assert info.value.field == "reader_schema"
    with pytest.raises(ConfigurationError, match="on_poison") as info:
        from_registry_avro("value", _mock(), V2, on_poison="skip")  # type: ignore[arg-type]
    assert info.value.field == "on_poison"
    with pytest.raises(ConfigurationError, match="schema: not a valid Avro schema") as info:
        to_registry_avro("value", _mock(), "{", topic="orders")
    assert info.value.field == "schema"
    with pytest.raises(ConfigurationError, match="pass topic=") as info:
        to_registry_avro("value", _mock(), V2)
    assert info.value.field == "topic"


def test_rows_of_v1_and_v2_decode_into_the_reader_schema() -> None:
    config = _mock()
    v1, v2 = _write(config, V1, {"id": 1}), _write(config, V2, {"id": 2, "note": "fragile"})
    assert struct.unpack(">bI", v1[:5])[1] != struct.unpack(">bI", v2[:5])[1]  # two schema ids
    decode = _Decode(config, V2, "fail", KAFKA)
    assert decode(v1, "orders", 0, 5) == {"id": 1, "note": ""}  # the default filled in
    assert decode(v2, "orders", 0, 6) == {"id": 2, "note": "fragile"}
    assert decode(None, "orders", 0, 7) is None


@pytest.mark.parametrize(
    "bad", [b"not avro", b"\x00" + struct.pack(">I", 987_654) + b"\x02", b"\x00\x00\x00"]
)
def test_a_poison_record_fails_naming_it_or_becomes_null(bad: bytes) -> None:
    config = _mock()
    good = _write(config, V1, {"id": 1})
    truncated = good[:5] + b"\xff\xff\xff"  # the id is known, the payload is not Avro of it
    for data in (bad, truncated):
        with pytest.raises(SerializationError, match=r"record at orders\[2\]@41 is not read"):
            _Decode(config, V2, "fail", KAFKA)(data, "orders", 2, 41)
        assert _Decode(config, V2, "null", KAFKA)(data, "orders", 2, 41) is None


def test_without_kafka_columns_the_error_names_the_row_position() -> None:
    decode = _Decode(_mock(), V2, "fail", None)
    row_id = (3 << 33) + 17  # monotonically_increasing_id() of row 17 of partition 3
    with pytest.raises(SerializationError, match="at Spark partition 3, row 17 is not"):
        decode(b"not avro", 3, row_id)
    other = _Decode(_mock(), V2, "fail", ("key",))
    with pytest.raises(SerializationError, match="at key=b'k1' is not"):
        other(b"not avro", b"k1")


def test_an_unreachable_registry_fails_the_row_even_with_on_poison_null() -> None:
    config = SchemaRegistryConfig(url=_closed_port_url(), request_timeout_s=2)
    framed = b"\x00" + struct.pack(">I", 1) + b"\x02"
    for on_poison in ("fail", "null"):
        with pytest.raises(SchemaRegistryUnavailableError, match="did not answer"):
            _Decode(config, V2, on_poison, KAFKA)(framed, "orders", 0, 0)  # type: ignore[arg-type]


def test_encode_a_row_then_decode_it_with_the_sdk() -> None:
    config = _mock()
    schema = _record(
        """{"name": "id", "type": "long"},
        {"name": "home", "type": {"type": "record", "name": "Addr",
                                  "fields": [{"name": "city", "type": "string"}]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                   "precision": 9, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}"""
    )
    at = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    row = Row(id=7, home=Row(city="Oslo"), tags=["a", "b"], price=decimal.Decimal("9.50"), at=at)
    data = _Encode(config, schema, "orders", MessageField.VALUE)(row)
    assert data is not None and data[0] == 0
    ctx = SerializationContext("orders", MessageField.VALUE)
    expected = {"id": 7, "home": {"city": "Oslo"}, "tags": ["a", "b"], "price": row.price, "at": at}
    assert avro_deserializer(config)(data, ctx) == expected
    assert _Decode(config, schema, "fail", None)(data, 0, 0) == expected
    assert _Encode(config, schema, "orders", MessageField.VALUE)(None) is None


def test_a_row_the_schema_does_not_fit_fails_the_encode() -> None:
    encode = _Encode(_mock(), V2, "orders", MessageField.VALUE)
    with pytest.raises(SerializationError):
        encode(Row(id="not a long", note="x"))
