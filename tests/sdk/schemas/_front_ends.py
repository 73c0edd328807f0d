"""What the front ends' real-registry tests share: Avro records and two that do not fit."""

from __future__ import annotations

from sdk.schemas import SchemaRegistryConfig
from sdk.schemas._config import _clients
from tests.sdk.consumer._support import seed
from tests.sdk.schemas.test_registry_consumer import NOT_FRAMED, UNKNOWN_ID, V1, _produce

__all__ = ["NOT_FRAMED", "UNKNOWN_ID", "cold_reader", "seed_avro_with_poison"]


def seed_avro_with_poison(bootstrap: str, topic: str, url: str) -> None:
    """Ids 0 and 1 in Avro, then two poison records, then ids 2 and 3 (partition 0)."""
    config = SchemaRegistryConfig(url=url)
    _produce(bootstrap, topic, config, V1, range(2))
    seed(bootstrap, topic, 2, values=[NOT_FRAMED, UNKNOWN_ID])
    _produce(bootstrap, topic, config, V1, range(2, 4))


def cold_reader(url: str, **options: float) -> SchemaRegistryConfig:
    """A reader whose registry client starts with no schema cached, as in a fresh process.

    Clients are shared per config in a process (``sdk.schemas._config``): dropping them makes
    the next (de)serializer build a new one, so a stopped registry is really asked.
    """
    _clients.clear()
    options.setdefault("request_timeout_s", 3)
    return SchemaRegistryConfig(url=url, **options)
