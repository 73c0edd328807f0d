"""Registry Avro through Spark: records of schema v1 and v2 written by the SDK's Producer, read
by Spark's Kafka source and decoded per row with their writer schema; a poison record fails the
job naming it (or is null); Spark-encoded rows are what the SDK reads; a registry that does
not answer fails the job instead of making nulls."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer as RawProducer

from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.serialization import MessageField, SerializationContext
from spark_integration import avro_spark_type, from_registry_avro, read_kafka, to_registry_avro
from tests.sdk.schemas.test_registry_consumer import NOT_FRAMED, UNKNOWN_ID, V1, V2
from tests.sdk.schemas.test_serde import _closed_port_url


def _produce(bs: str, topic: str, config: SchemaRegistryConfig) -> None:
    """Ids 0-4 with v1, a tombstone, ids 5-9 with v2 (partition 0, offsets 0-10)."""
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)
    for schema, ids in ((V1, range(5)), (V2, range(5, 10))):
        with Producer(
            profile, key_serializer="str", value_serializer=avro_serializer(config, schema)
        ) as producer:
            for i in ids:
                value = {"id": i} if schema == V1 else {"id": i, "note": f"n{i}"}
                producer.send(topic, value, key=str(i))
            if schema == V1:
                producer.send(topic, None, key="gone")
            producer.flush(30)


def _reader(bs: str, group: str) -> ConsumerProfile:
    return ConsumerProfile(guarantee="at_least_once", group_id=group, bootstrap_servers=bs)


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.registry
def test_rows_of_two_schema_versions_decode_and_poison_fails_or_is_null(
    spark: Any, kafka_cluster: Any, make_topic: Any, make_group: Any, schema_registry: str
) -> None:
    from pyspark.errors import PythonException
    from pyspark.sql.functions import col

    bs, topic = kafka_cluster.bootstrap_servers, make_topic(1)
    config = SchemaRegistryConfig(url=schema_registry)
    _produce(bs, topic, config)
    df = read_kafka(spark, _reader(bs, make_group()), [topic])
    decoded = df.select("offset", from_registry_avro(col("value"), config, V2).alias("order"))
    assert decoded.schema["order"].dataType == avro_spark_type(V2)
    rows = {r.offset: r.order for r in decoded.collect()}
    assert rows[5] is None  # the tombstone stays null
    orders = sorted((o.id, o.note) for o in rows.values() if o is not None)
    assert orders == [(i, "") for i in range(5)] + [(i, f"n{i}") for i in range(5, 10)]

    raw = RawProducer({"bootstrap.servers": bs})
    raw.produce(topic, NOT_FRAMED)  # offset 11
    raw.produce(topic, UNKNOWN_ID)  # offset 12
    assert raw.flush(30) == 0
    df = read_kafka(spark, _reader(bs, make_group()), [topic])
    with pytest.raises(PythonException, match=rf"SerializationError.*{topic}\[0\]@11"):
        df.select(from_registry_avro("value", config, V2)).collect()

    lenient = df.withColumn("order", from_registry_avro("value", config, V2, on_poison="null"))
    poison = lenient.where(col("order").isNull() & col("value").isNotNull())
    assert sorted(r.offset for r in poison.select("offset").collect()) == [11, 12]
    assert lenient.where(col("order").isNotNull()).count() == 10


@pytest.mark.spark
@pytest.mark.registry
def test_encoded_rows_are_registry_avro_and_decode_back(spark: Any, schema_registry: str) -> None:
    from pyspark.sql.functions import col, struct

    config = SchemaRegistryConfig(url=schema_registry)
    topic = f"spark-encode-{uuid.uuid4().hex[:12]}"
    df = spark.createDataFrame([(1, "tea"), (2, ""), (3, None)], "id long, note string").select(
        struct(col("id"), col("note")).alias("order")
    )
    df = df.where(col("order.note").isNotNull())  # the schema's note is not nullable
    encoded = df.select(to_registry_avro("order", config, V2, topic=topic).alias("value"))
    values = [r.value for r in encoded.collect()]
    read = avro_deserializer(config)  # the SDK reads what Spark wrote
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert sorted((read(v, ctx)["id"], read(v, ctx)["note"]) for v in values) == [
        (1, "tea"),
        (2, ""),
    ]
    back = encoded.select(from_registry_avro("value", config, V2, record_columns=None).alias("o"))
    assert sorted((r.o.id, r.o.note) for r in back.collect()) == [(1, "tea"), (2, "")]


@pytest.mark.spark
def test_an_unreachable_registry_fails_the_job_not_nulls(spark: Any) -> None:
    from pyspark.errors import PythonException

    config = SchemaRegistryConfig(url=_closed_port_url(), request_timeout_s=2)
    framed = b"\x00" + struct.pack(">I", 1) + b"\x02"
    df = spark.createDataFrame([(framed,)], "value binary")
    decoded = df.select(
        from_registry_avro("value", config, V2, on_poison="null", record_columns=None)
    )
    with pytest.raises(PythonException, match="SchemaRegistryUnavailableError"):
        decoded.collect()
