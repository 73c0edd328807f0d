"""Avro, Protobuf and JSON Schema (de)serializers over confluent-kafka's schema_registry package.

Each wraps one of confluent-kafka's (its wire format: a magic byte and a 4-byte schema id before
the payload) and tells apart, in :func:`registry_errors` (the one translation point), the two
ways it can fail:

* the registry did not answer (unreachable, timed out, 5xx, 401/403, OAuth token refused):
  :class:`~sdk.errors.SchemaRegistryUnavailableError`, transient, not the record's fault;
* anything else (bytes not valid for the schema, a schema id the registry does not know, an
  object the schema does not fit): re-raised as it is, so a consumer makes it a poison record
  (:class:`~sdk.errors.SerializationError`) and a producer a failed ``send()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka.serialization import MessageField, SerializationContext

from sdk.errors import SchemaRegistryUnavailableError
from sdk.schemas._config import SchemaRegistryConfig, registry_client
from sdk.schemas._refusal import refused

__all__ = [
    "RegistryDeserializer",
    "RegistrySerializer",
    "avro_deserializer",
    "avro_serializer",
    "json_schema_deserializer",
    "json_schema_serializer",
    "protobuf_deserializer",
    "protobuf_serializer",
    "registry_errors",
    "unavailable_reason",
]

_AUTH_OR_TRANSIENT = (401, 403, 408, 429)
_CONTEXTS_KEPT = 1_000  # topics whose context a serializer's by_topic form keeps (then: anew)


def unavailable_reason(exc: BaseException) -> str | None:
    """Why the registry is to blame for ``exc`` (or its causes), or None if the record is."""
    from confluent_kafka.schema_registry.error import OAuthTokenError, SchemaRegistryError

    try:  # the httpx the registry client uses: httpx2 from 2.16, httpx before
        from confluent_kafka.schema_registry.common._httpx_compat import httpx
    except ImportError:
        import httpx  # type: ignore[import-not-found, no-redef]

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.TransportError | ConnectionError | TimeoutError):
            return f"{type(current).__name__}: {current}"
        if isinstance(current, OAuthTokenError):
            return f"the OAuth token was refused: {current}"
        if isinstance(current, SchemaRegistryError):
            status = current.http_status_code
            if status >= 500 or status in _AUTH_OR_TRANSIENT:
                return f"HTTP {status}: {current.error_message}"
            return None  # 404 (unknown schema id or subject), 409, 422: about the record
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def registry_errors(url: str, what: str) -> Iterator[None]:
    """Translate a registry that did not answer into SchemaRegistryUnavailableError.

    Args:
        url: The registry's URL (named in the error).
        what: What was being done, e.g. ``"avro deserializer, orders-value"``.

    Raises:
        SchemaRegistryUnavailableError: The registry is to blame (``__cause__`` its error).
    """
    try:
        yield
    except Exception as exc:
        unavailable = as_unavailable(exc, url, what)
        if unavailable is None:
            raise
        raise unavailable from exc


def as_unavailable(
    exc: BaseException, url: str, what: str
) -> SchemaRegistryUnavailableError | None:
    """``exc`` as SchemaRegistryUnavailableError if the registry is to blame, else None."""
    reason = unavailable_reason(exc)
    if reason is None:
        return None
    return SchemaRegistryUnavailableError(
        f"{what}: the schema registry at {url} did not answer ({reason})", url=url
    )


class _RegistrySerde:
    """A confluent-kafka (de)serializer whose registry failures are told apart."""

    takes_context = True  # called (obj, ctx): see sdk.serialization
    # a first call per subject asks the registry over HTTP, then its cache answers (the asyncio
    # producer makes that first call off the event loop: sdk.serialization.asks_registry)
    asks_registry = True

    def __init__(self, name: str, inner: Callable[..., Any], config: SchemaRegistryConfig):
        self.name = name
        """``avro``, ``protobuf`` or ``json_schema`` (named in errors)."""
        self.config = config
        self._inner = inner

    @property
    def registry_timeout_s(self) -> float:
        """How long a consumer retries a record while the registry is unavailable."""
        return self.config.registry_timeout_s

    def __call__(self, obj: Any, ctx: SerializationContext) -> Any:
        # per record: a bare try, no context manager; a failure is translated as
        # registry_errors translates it, on the error path alone
        try:
            return self._inner(obj, ctx)
        except Exception as exc:
            translated = self._translated(exc, ctx)
            if translated is exc:
                raise
            raise translated from exc

    def _translated(self, exc: Exception, ctx: SerializationContext) -> Exception:
        """What to raise for ``exc``: an unavailable registry, or ``exc`` itself."""
        what = f"{self.name} ({ctx.topic} {ctx.field})"
        return as_unavailable(exc, self.config.url, what) or exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, url={self.config.url!r})"


class RegistrySerializer(_RegistrySerde):
    """A schema registry serializer: ``fn(obj, ctx) -> bytes`` (see :mod:`sdk.serialization`).

    A new schema the registry refuses to register (HTTP 409: incompatible with the subject's
    versions) raises :class:`~sdk.errors.SerializationError` naming the subject, its
    compatibility level and, for Avro, the fields that break it.
    """

    def _topic_form(self, part: MessageField) -> Callable[[Any, str], bytes | None]:
        """This serializer as ``fn(obj, topic)`` for records without headers.

        The Producer's fast path calls it (:func:`sdk.serialization.by_topic`). It keeps one
        context per topic: confluent-kafka's serializers read a context and write only its
        headers, which such a context has none of (the header schema-id form then refuses).
        """
        inner, translated_error = self._inner, self._translated
        contexts: dict[str, SerializationContext] = {}

        def serialize(obj: Any, topic: str) -> bytes | None:
            ctx = contexts.get(topic)
            if ctx is None:
                if len(contexts) >= _CONTEXTS_KEPT:
                    contexts.clear()
                ctx = contexts[topic] = SerializationContext(topic, part, None)
            try:
                data: bytes | None = inner(obj, ctx)
                return data
            except Exception as exc:  # as __call__
                translated = translated_error(exc, ctx)
                if translated is exc:
                    raise
                raise translated from exc

        return serialize

    def __init__(
        self,
        name: str,
        inner: Callable[..., Any],
        config: SchemaRegistryConfig,
        schema: str | None = None,
    ):
        super().__init__(name, inner, config)
        self._schema = schema

    def _translated(self, exc: Exception, ctx: SerializationContext) -> Exception:
        if getattr(exc, "http_status_code", None) == 409:  # a SchemaRegistryError
            strategy = self.config.subject_name_strategy
            client = registry_client(self.config)
            return refused(client, exc, self.name, strategy, ctx, self._schema)
        return super()._translated(exc, ctx)


class RegistryDeserializer(_RegistrySerde):
    """A schema registry deserializer: ``fn(data, ctx) -> obj``."""


def avro_serializer(
    config: SchemaRegistryConfig,
    schema: str,
    *,
    to_dict: Callable[[Any, SerializationContext], dict[str, Any]] | None = None,
) -> RegistrySerializer:
    """Avro: writes ``obj`` (a dict, or anything ``to_dict`` turns into one) with ``schema``.

    Args:
        config: The registry and its use (subject strategy, auto-register...).
        schema: The writer schema (Avro JSON). With ``use_latest_version`` the subject's
            latest is used instead and this one must still parse.
        to_dict: Turns an object into the dict the schema describes.

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    from confluent_kafka.schema_registry.avro import AvroSerializer

    inner = AvroSerializer(
        registry_client(config), schema, to_dict, conf=config.serde_conf(serializer=True)
    )
    return RegistrySerializer("avro", inner, config, schema)


def avro_deserializer(
    config: SchemaRegistryConfig,
    reader_schema: str | None = None,
    *,
    from_dict: Callable[[dict[str, Any], SerializationContext], Any] | None = None,
) -> RegistryDeserializer:
    """Avro: reads with the writer's schema (by the id in the record) into a dict.

    Args:
        config: The registry and its use.
        reader_schema: Read into this schema (Avro schema resolution: fields added with a
            default, removed ones dropped); default: the writer's.
        from_dict: Turns the dict into an object.

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    inner = AvroDeserializer(
        registry_client(config),
        reader_schema,
        from_dict,
        conf=config.serde_conf(serializer=False),
    )
    return RegistryDeserializer("avro", inner, config)


def protobuf_serializer(config: SchemaRegistryConfig, message_type: type) -> RegistrySerializer:
    """Protobuf: writes instances of the generated class ``message_type``.

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    inner = ProtobufSerializer(
        message_type, registry_client(config), conf=config.serde_conf(serializer=True)
    )
    return RegistrySerializer("protobuf", inner, config)


def protobuf_deserializer(config: SchemaRegistryConfig, message_type: type) -> RegistryDeserializer:
    """Protobuf: reads into instances of the generated class ``message_type``.

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    inner = ProtobufDeserializer(
        message_type, config.serde_conf(serializer=False), registry_client(config)
    )
    return RegistryDeserializer("protobuf", inner, config)


def json_schema_serializer(
    config: SchemaRegistryConfig,
    schema: str,
    *,
    to_dict: Callable[[Any, SerializationContext], dict[str, Any]] | None = None,
) -> RegistrySerializer:
    """JSON Schema: validates ``obj`` against ``schema`` and writes it as JSON.

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    inner = JSONSerializer(
        schema, registry_client(config), to_dict, conf=config.serde_conf(serializer=True)
    )
    return RegistrySerializer("json_schema", inner, config, schema)


def json_schema_deserializer(
    config: SchemaRegistryConfig,
    schema: str | None = None,
    *,
    from_dict: Callable[[dict[str, Any], SerializationContext], Any] | None = None,
) -> RegistryDeserializer:
    """JSON Schema: reads JSON and validates it (against ``schema``, else the writer's).

    Raises:
        ConfigurationError: The ``schema-registry`` extra is not installed.
    """
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    inner = JSONDeserializer(
        schema,
        from_dict,
        registry_client(config),
        conf=config.serde_conf(serializer=False),
    )
    return RegistryDeserializer("json_schema", inner, config)
