"""Schemas through a schema registry: Avro, Protobuf and JSON Schema (de)serializers.

Pass them wherever a serializer goes (``Producer(..., value_serializer=...)``,
``Consumer(..., value_deserializer=...)``); they take ``(obj, ctx)`` (:mod:`sdk.serialization`).
Needs the extra: ``pip install 'kafka-semantics[schema-registry]'``. See docs/schemas.md::

    registry = SchemaRegistryConfig(url="http://127.0.0.1:8081/apis/ccompat/v7")
    Producer(profile, value_serializer=avro_serializer(registry, ORDER_SCHEMA))
    Consumer(profile, ["orders"], value_deserializer=avro_deserializer(registry))

A registry that does not answer raises :class:`~sdk.errors.SchemaRegistryUnavailableError`
(a consumer retries the record for ``registry_timeout_s`` first); bytes that do not fit their
schema are a poison record (:class:`~sdk.errors.SerializationError`, the failure policy).

An internal interface, in no ``__all__``: ``REGISTRY_URL_ENV``, the variable a config without
``url`` reads (named by ``sdk.profiles`` when a profile's ``schema_registry`` lacks both).
"""

from sdk.schemas._config import REGISTRY_URL_ENV as REGISTRY_URL_ENV
from sdk.schemas._config import SchemaRegistryConfig, SubjectNameStrategy
from sdk.schemas._serde import (
    RegistryDeserializer,
    RegistrySerializer,
    avro_deserializer,
    avro_serializer,
    json_schema_deserializer,
    json_schema_serializer,
    protobuf_deserializer,
    protobuf_serializer,
    unavailable_reason,
)

__all__ = [
    "RegistryDeserializer",
    "RegistrySerializer",
    "SchemaRegistryConfig",
    "SubjectNameStrategy",
    "avro_deserializer",
    "avro_serializer",
    "json_schema_deserializer",
    "json_schema_serializer",
    "protobuf_deserializer",
    "protobuf_serializer",
    "unavailable_reason",
]
