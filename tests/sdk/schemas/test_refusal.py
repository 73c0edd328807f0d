"""A schema the registry refuses (HTTP 409): the error names the subject, the level, the field.

The unit tier: the registry is a stand-in answering the two questions the error needs (the
subject's compatibility level, its latest version); tests/sdk/schemas/test_evolution.py has
Apicurio refuse a real registration.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from sdk.schemas._refusal import avro_changes, refused, subject_of

V1 = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}]}"""
V2 = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}]}"""
V3 = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "string"}, {"name": "note", "type": "string", "default": ""},
             {"name": "qty", "type": "int"}]}"""


class _Registry:
    def __init__(self, levels: dict[str | None, str], latest: str) -> None:
        self.levels, self.latest = levels, latest

    def get_compatibility(self, subject: str | None = None) -> str:
        if subject not in self.levels:
            raise SchemaRegistryError(404, 40408, "no compatibility level for the subject")
        return self.levels[subject]

    def get_latest_version(self, subject: str) -> Any:
        return SimpleNamespace(schema=SimpleNamespace(schema_str=self.latest))


def test_backward_names_a_field_added_without_a_default_and_a_changed_type() -> None:
    assert avro_changes(V1, V2, "BACKWARD") == []
    assert avro_changes(V2, V3, "BACKWARD") == [
        "field 'qty' was added without a default, so a consumer on the new schema cannot read "
        "records written before it",
        'field \'id\' changed type from "long" to "string"',
    ]


def test_forward_names_a_removed_field_without_a_default() -> None:
    assert avro_changes(V2, V1, "FORWARD") == []  # 'note' had a default
    found = avro_changes(V1, """{"type": "record", "name": "Order", "fields": []}""", "FORWARD")
    assert found == [
        "field 'id' was removed and the previous schema has no default for it, so consumers "
        "still on the previous schema cannot read the new records"
    ]


def test_subject_names_follow_the_strategy() -> None:
    ctx = SerializationContext("orders", MessageField.VALUE)
    assert subject_of("topic", ctx, V1) == "orders-value"
    assert subject_of("record", ctx, V1) == "shop.Order"
    assert subject_of("topic_record", ctx, V1) == "orders-shop.Order"
    assert subject_of("topic", SerializationContext("orders", MessageField.KEY), None) == (
        "orders-key"
    )


def test_the_error_names_subject_level_and_field_falling_back_to_the_global_level() -> None:
    ctx = SerializationContext("orders", MessageField.VALUE)
    exc = SchemaRegistryError(409, 409, "Incompatible schema")
    error = refused(_Registry({None: "BACKWARD"}, V2), exc, "avro", "topic", ctx, V3)
    text = str(error)
    assert "subject 'orders-value'" in text
    assert "compatibility level BACKWARD" in text
    assert "field 'qty' was added without a default" in text
    assert "Nothing was sent" in text


@pytest.mark.parametrize("kind", ["json_schema", "avro"])
def test_without_a_field_to_name_the_registrys_reason_is_given(kind: str) -> None:
    ctx = SerializationContext("orders", MessageField.VALUE)
    exc = SchemaRegistryError(409, 409, "Incompatible schema: rule X")
    registry = _Registry({"orders-value": "FULL_TRANSITIVE"}, V1)
    text = str(refused(registry, exc, kind, "topic", ctx, V1))  # no change found in V1 vs V1
    assert "compatibility level FULL_TRANSITIVE" in text
    assert "the registry says: Incompatible schema: rule X" in text
