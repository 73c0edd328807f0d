"""How to reach a schema registry and how the serializers use it: one frozen config object."""

from __future__ import annotations

import os
import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from sdk.errors import ConfigurationError

__all__ = ["REGISTRY_URL_ENV", "SchemaRegistryConfig", "SubjectNameStrategy"]

REGISTRY_URL_ENV = "KSEM_SCHEMA_REGISTRY_URL"
"""The environment variable a config without ``url`` takes it from."""

SubjectNameStrategy = Literal["topic", "record", "topic_record"]
"""How a subject is named: ``<topic>-key|value``, ``<record full name>``, ``<topic>-<record>``."""


class SchemaRegistryConfig(BaseModel):
    """A schema registry and the (de)serializers' use of it (Confluent's API and wire format).

    Built from Python or from a mapping (a YAML section) with :meth:`from_mapping`.

    Attributes:
        url: The registry's base URL; Apicurio's Confluent-compatible one ends
            ``/apis/ccompat/v7``. Several, comma-separated, are tried in order. Left out:
            ``$KSEM_SCHEMA_REGISTRY_URL`` (what ``python -m sdk.testing.registry up`` prints).
        basic_auth: ``"user:password"`` for HTTP basic authentication.
        subject_name_strategy: ``topic`` (``orders-value``), ``record`` (the record's full
            name) or ``topic_record`` (``orders-com.acme.Order``).
        auto_register: Serializers register the writer schema if the subject lacks it. Off:
            the schema must be registered already (the usual production setting).
        use_latest_version: Serializers write with the subject's latest version; deserializers
            read into it (a reader schema from the registry). Needs ``auto_register`` off.
        normalize: Normalize schemas before registering or looking them up.
        request_timeout_s: Seconds one HTTP request may take.
        registry_timeout_s: How long a consumer retries a record while the registry is
            unavailable before it stops with ``SchemaRegistryUnavailableError``. Keep it under
            the consumer's ``max.poll.interval.ms`` (default 300 s): no poll runs meanwhile.
        client_config: Extra ``SchemaRegistryClient`` keys (TLS: ``ssl.ca.location``...).

    Raises:
        ConfigurationError: A field is invalid or contradicts another (names the field).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(min_length=1)
    basic_auth: SecretStr | None = None
    subject_name_strategy: SubjectNameStrategy = "topic"
    auto_register: bool = True
    use_latest_version: bool = False
    normalize: bool = False
    request_timeout_s: float = Field(default=10.0, gt=0)
    registry_timeout_s: float = Field(default=60.0, gt=0)
    client_config: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        if "url" not in data and os.environ.get(REGISTRY_URL_ENV):
            data["url"] = os.environ[REGISTRY_URL_ENV]
        try:
            super().__init__(**data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            raise ConfigurationError(
                f"schema registry {field or 'config'}: {first['msg']}", field=field
            ) from None

    @model_validator(mode="after")
    def _consistent(self) -> SchemaRegistryConfig:
        if self.auto_register and self.use_latest_version:
            raise ValueError(
                "use_latest_version needs auto_register=False (a serializer either registers "
                "its own schema or writes with the registry's latest one)"
            )
        if "url" in self.client_config or "basic.auth.user.info" in self.client_config:
            raise ValueError("client_config: set url and basic_auth as fields, not extra keys")
        return self

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> SchemaRegistryConfig:
        """Build one from a mapping, e.g. the ``schema_registry`` section of a YAML file.

        Raises:
            ConfigurationError: Unknown or invalid key (named).
        """
        return cls(**dict(data))

    def client_conf(self) -> dict[str, Any]:
        """The ``confluent_kafka.schema_registry.SchemaRegistryClient`` configuration."""
        conf: dict[str, Any] = {
            "url": self.url,
            "timeout": self.request_timeout_s,
            # the SDK retries a record itself (registry_timeout_s), with its own logs and
            # counters: the client's own retries only delay telling an outage apart
            "max.retries": 1,
            "retries.wait.ms": 200,
            "retries.max.wait.ms": 1000,
            **self.client_config,
        }
        if self.basic_auth is not None:
            # user info alone: SchemaRegistryClient refuses the legacy Avro client's
            # basic.auth.credentials.source ("Unrecognized properties")
            conf["basic.auth.user.info"] = self.basic_auth.get_secret_value()
        return conf

    def serde_conf(self, *, serializer: bool) -> dict[str, Any]:
        """The ``conf`` of confluent-kafka's (de)serializers."""
        from confluent_kafka import schema_registry as sr

        strategies = {
            "topic": sr.topic_subject_name_strategy,
            "record": sr.record_subject_name_strategy,
            "topic_record": sr.topic_record_subject_name_strategy,
        }
        conf: dict[str, Any] = {
            "subject.name.strategy": strategies[self.subject_name_strategy],
            "use.latest.version": self.use_latest_version,
        }
        if serializer:
            conf["auto.register.schemas"] = self.auto_register
            conf["normalize.schemas"] = self.normalize
        return conf


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def registry_client(config: SchemaRegistryConfig) -> Any:
    """One ``SchemaRegistryClient`` per distinct config in this process (its caches shared).

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError as exc:  # pragma: no cover - the extra is part of dev
        raise ConfigurationError(
            "schema registry serializers need the extra: pip install "
            "'kafka-semantics[schema-registry]'",
            field="schema_registry",
        ) from exc
    conf = config.client_conf()
    key = repr(sorted((k, repr(v)) for k, v in conf.items()))  # the secret too, unlike a dump
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            # new_client: a mock:// URL gets confluent-kafka's in-memory registry (unit tests)
            factory = getattr(SchemaRegistryClient, "new_client", SchemaRegistryClient)
            client = _clients[key] = factory(conf)
        return client
