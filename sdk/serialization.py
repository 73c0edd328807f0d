"""Key/value serializers and deserializers: a one-method Protocol and a name registry.

Built-ins: ``bytes`` (pass-through), ``str`` (UTF-8), ``json`` (UTF-8 JSON). Anything callable as
``fn(obj, ctx) -> bytes | None`` (or ``fn(data, ctx) -> obj`` for deserializers) works too;
``ctx`` is confluent-kafka's :class:`SerializationContext`: ``ctx.topic``, ``ctx.field``
(:class:`MessageField` ``KEY`` or ``VALUE``) and ``ctx.headers``. confluent-kafka's own
serializers (``AvroSerializer``...) take that form, so they plug in as they are; the schema
registry ones are in :mod:`sdk.schemas`.

The older form ``fn(obj, topic)`` still works for one release, with a ``DeprecationWarning``.
Which form a callable has is decided once, when it is resolved, not per record: a
confluent-kafka ``Serializer``/``Deserializer``, an object with ``takes_context = True``, or a
function whose second parameter is named ``ctx``/``context`` or annotated
``SerializationContext`` gets the context; any other callable gets the topic.
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable
from typing import Any, Protocol

from confluent_kafka.serialization import Deserializer as _CkDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from confluent_kafka.serialization import Serializer as _CkSerializer

from sdk._message import KafkaMessage
from sdk.errors import ConfigurationError

__all__ = [
    "Deserializer",
    "MessageField",
    "SerializationContext",
    "Serializer",
    "available_serializers",
    "bind_deserializer",
    "bind_serializer",
    "resolve_deserializer",
    "resolve_serializer",
    "serializer_name",
]


class Serializer(Protocol):
    """Turns a key or value into bytes; ``ctx`` says topic, key or value, and headers."""

    def __call__(self, obj: Any, ctx: SerializationContext, /) -> bytes | None:
        """Serialize ``obj`` (None stays None)."""
        ...


class Deserializer(Protocol):
    """Turns bytes read from a topic back into an object; ``ctx`` as for :class:`Serializer`."""

    def __call__(self, data: bytes | None, ctx: SerializationContext, /) -> Any:
        """Deserialize ``data`` (None stays None)."""
        ...


class _Outgoing(Protocol):
    """What a bound serializer reads of the record being sent (a ``ProducerRecord``)."""

    @property
    def topic(self) -> str: ...

    @property
    def headers(self) -> Any: ...


BoundSerializer = Callable[[Any, Any], "bytes | None"]
"""A resolved serializer as the Producer calls it: ``fn(obj, record)``.

``record`` is the outgoing record (``.topic``, ``.headers``). The built-ins ignore it, so they
are called as they are; other forms are wrapped once, at resolve time.
"""

BoundDeserializer = Callable[[Any, KafkaMessage], Any]
"""A resolved deserializer as the consumers call it: ``fn(data, message)``."""


# The built-ins ignore their second argument: called as ``fn(obj, record)`` on the hot path,
# and as ``fn(obj, ctx)`` or the older ``fn(obj, topic)`` by anyone who resolved them by name.
def _bytes_out(obj: Any, _where: object, /) -> bytes | None:
    if obj is None or isinstance(obj, bytes):
        return obj
    if isinstance(obj, bytearray | memoryview):
        return bytes(obj)
    raise TypeError(f"the 'bytes' serializer takes bytes, got {type(obj).__name__}")


def _str_out(obj: Any, _where: object, /) -> bytes | None:
    if obj is None:
        return None
    if not isinstance(obj, str):
        raise TypeError(f"the 'str' serializer takes str, got {type(obj).__name__}")
    return obj.encode()


def _json_out(obj: Any, _where: object, /) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


def _bytes_in(data: bytes | None, _where: object, /) -> Any:
    return data


def _str_in(data: bytes | None, _where: object, /) -> Any:
    return None if data is None else data.decode()


def _json_in(data: bytes | None, _where: object, /) -> Any:
    return None if data is None else json.loads(data)


_SERIALIZERS: dict[str, Serializer] = {"bytes": _bytes_out, "str": _str_out, "json": _json_out}
_DESERIALIZERS: dict[str, Deserializer] = {"bytes": _bytes_in, "str": _str_in, "json": _json_in}


def available_serializers() -> list[str]:
    """Names of the built-in (de)serializers."""
    return sorted(_SERIALIZERS)


def _resolve(spec: Any, table: dict[str, Any], field: str) -> Callable[..., Any]:
    if callable(spec):
        return spec  # type: ignore[no-any-return]
    if isinstance(spec, str) and spec in table:
        return table[spec]  # type: ignore[no-any-return]
    raise ConfigurationError(
        f"{field}: unknown serializer {spec!r}; valid names: {', '.join(sorted(table))}, "
        "or a callable",
        field=field,
    )


def resolve_serializer(spec: str | Serializer, field: str = "serializer") -> Serializer:
    """Return the serializer named ``spec`` (or ``spec`` itself if callable).

    Raises:
        ConfigurationError: Unknown name (the message lists the valid ones).
    """
    return _resolve(spec, _SERIALIZERS, field)


def resolve_deserializer(spec: str | Deserializer, field: str = "deserializer") -> Deserializer:
    """Return the deserializer named ``spec`` (or ``spec`` itself if callable).

    Raises:
        ConfigurationError: Unknown name (the message lists the valid ones).
    """
    return _resolve(spec, _DESERIALIZERS, field)


def takes_context(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is called ``fn(obj, ctx)`` (else the deprecated ``fn(obj, topic)``)."""
    if isinstance(fn, _CkSerializer | _CkDeserializer):
        return True
    marked = getattr(fn, "takes_context", None)
    if isinstance(marked, bool):
        return marked
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the old form
        return False
    if len(params) < 2:
        return False
    second = params[1]
    annotation = second.annotation
    if annotation is SerializationContext or (
        isinstance(annotation, str) and annotation.endswith("SerializationContext")
    ):
        return True
    return second.name in ("ctx", "context")


def _field_of(field: str) -> MessageField:
    return MessageField.KEY if field.startswith("key") else MessageField.VALUE


def _warn_topic_form(fn: Callable[..., Any], field: str) -> None:
    warnings.warn(
        f"{field}: {getattr(fn, '__qualname__', type(fn).__name__)} takes (obj, topic); "
        "(de)serializers now take (obj, ctx) with ctx a SerializationContext (ctx.topic, "
        "ctx.field, ctx.headers): name the second parameter 'ctx'. The (obj, topic) form "
        "goes in the next release.",
        DeprecationWarning,
        stacklevel=4,
    )


def _describe(fn: object) -> str:
    tables: tuple[dict[str, Any], ...] = (_SERIALIZERS, _DESERIALIZERS)
    for table in tables:
        for builtin_name, builtin in table.items():
            if fn is builtin:
                return builtin_name
    own = getattr(fn, "name", None)  # sdk.schemas' registry serializers: "avro"...
    if isinstance(own, str):
        return f"the {own!r} serializer"
    qualname = getattr(fn, "__qualname__", None)
    return str(qualname) if isinstance(qualname, str) else type(fn).__name__


def serializer_name(bound: object) -> str:
    """What a bound (or plain) serializer is called in errors: a built-in's name, or its own."""
    name = getattr(bound, "serializer_name", None)
    return name if isinstance(name, str) else _describe(bound)


def bind_serializer(spec: str | Serializer, field: str) -> BoundSerializer:
    """Resolve ``spec`` into the form the Producer calls per record: ``fn(obj, record)``.

    Args:
        spec: A built-in's name or a callable of either form.
        field: ``"key_serializer"`` or ``"value_serializer"`` (names the key/value part, and
            the field in errors).

    Raises:
        ConfigurationError: Unknown name.
    """
    fn = resolve_serializer(spec, field)
    if fn in _SERIALIZERS.values():
        return fn
    part = _field_of(field)
    if takes_context(fn):
        ctx_fn = fn

        def with_context(obj: Any, record: _Outgoing) -> bytes | None:
            return ctx_fn(obj, SerializationContext(record.topic, part, record.headers))

        with_context.serializer_name = _describe(fn)  # type: ignore[attr-defined]
        with_context.by_topic = _context_by_topic(ctx_fn, part)  # type: ignore[attr-defined]
        # sdk.schemas' registry serializers: a first call may ask the registry (see asks_registry)
        with_context.asks_registry = getattr(fn, "asks_registry", False) is True  # type: ignore[attr-defined]
        return with_context
    _warn_topic_form(fn, field)
    topic_fn: Callable[[Any, str], bytes | None] = fn  # type: ignore[assignment]

    def with_topic(obj: Any, record: _Outgoing) -> bytes | None:
        return topic_fn(obj, record.topic)

    with_topic.serializer_name = _describe(fn)  # type: ignore[attr-defined]
    with_topic.by_topic = topic_fn  # type: ignore[attr-defined]
    return with_topic


TopicSerializer = Callable[[Any, str], "bytes | None"]
"""A bound serializer for a record without headers: ``fn(obj, topic)``."""


def asks_registry(bound: BoundSerializer) -> bool:
    """Whether a bound serializer may ask a schema registry (an HTTP call) when called.

    Internal to the Producer (in no ``__all__``): the asyncio producer serializes a topic's
    first record off the event loop when it does.
    """
    return getattr(bound, "asks_registry", False) is True


def by_topic(bound: BoundSerializer) -> TopicSerializer:
    """The ``fn(obj, topic)`` form of a bound serializer, for records without headers.

    Internal to the Producer (in no ``__all__``).

    ``Producer.send()`` calls it on its fast path: no record object per call, and (for a
    schema registry serializer) one :class:`SerializationContext` per topic instead of one
    per record.
    """
    if bound in _SERIALIZERS.values():
        return bound  # the built-ins ignore their second argument
    topic_form: TopicSerializer = getattr(bound, "by_topic")  # noqa: B009  # set by bind_serializer
    return topic_form


def _context_by_topic(ctx_fn: Callable[..., bytes | None], part: MessageField) -> TopicSerializer:
    """``fn(obj, topic)`` over a context serializer.

    sdk.schemas' registry serializers give their own (``_topic_form(part)``, an internal
    interface: one context per topic); any other gets a new context per record, as through
    :func:`bind_serializer`.
    """
    own = getattr(ctx_fn, "_topic_form", None)
    if callable(own):
        topic_form: TopicSerializer = own(part)
        return topic_form
    return lambda obj, topic: ctx_fn(obj, SerializationContext(topic, part, None))


def bind_deserializer(spec: str | Deserializer, field: str) -> BoundDeserializer:
    """Resolve ``spec`` into the form the consumers call per record: ``fn(data, message)``.

    Args:
        spec: A built-in's name or a callable of either form.
        field: ``"key_deserializer"`` or ``"value_deserializer"``.

    Raises:
        ConfigurationError: Unknown name.
    """
    fn = resolve_deserializer(spec, field)
    if fn in _DESERIALIZERS.values():
        return fn  # type: ignore[return-value]  # a built-in ignores its second argument
    part = _field_of(field)
    if takes_context(fn):
        ctx_fn = fn

        def with_context(data: bytes | None, message: KafkaMessage) -> Any:
            headers: Any = message.headers()
            return ctx_fn(data, SerializationContext(message.topic(), part, headers))

        return with_context
    _warn_topic_form(fn, field)
    topic_fn: Callable[[bytes | None, str], Any] = fn  # type: ignore[assignment]

    def with_topic(data: bytes | None, message: KafkaMessage) -> Any:
        return topic_fn(data, message.topic())

    return with_topic
