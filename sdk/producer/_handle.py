"""The core of a delivery handle: its slots and its delivery callback.

:class:`~sdk.producer.DeliveryHandle` is built on :class:`HandleCore`. The handle is its own
delivery callback, so librdkafka calls it directly (no bound-method object per record in
flight), and a resolved handle lets go of its producer, so nothing it keeps leads back to it.

The contract (``tests/sdk/producer/test_handle.py`` checks it):

- slots ``_owner, _state, _record, _topic, _value, _key``;
- ``handle(err, msg)`` and ``handle._deliver(err, msg)``, once per record: with ``err`` None,
  ``_state = msg``, ``owner._hot.delivered += 1``, then ``owner._hot.callback(handle)`` if set;
  otherwise ``owner._failed(handle, err)``; either way ``_owner`` becomes None once the
  outcome is on ``_state`` (a second call does nothing);
- :func:`new_handle`, a pending handle of a subclass with ``_record`` None (built on demand);
- a delivered handle of ``owner._hot.reusable``'s exact class that nobody but librdkafka's
  call holds any more (``sys.getrefcount``, after ``on_delivery``) has its record's parts and
  outcome cleared and goes on ``owner._hot.spare``, which ``send()`` takes its next handles
  from: a handle nobody can see again is not freed only for the next record to allocate one.

:class:`HotPath` is the producer's ``_hot``: what its per-record paths read, as fields of one
small object instead of producer attributes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar

from sdk._client import KafkaMessage, Produce

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

    from sdk.producer._records import DeliveryHandle, _Owner
    from sdk.serialization import TopicSerializer

__all__ = ["HandleCore", "HotPath", "new_handle"]


class HotPath:
    """What one producer's per-record paths read.

    Args:
        known: The topics whose lookup succeeded (only these take ``send()``'s fast path).
        callback: The user's ``on_delivery``, or None.
        reusable: The handle class whose delivered, unheld handles go on ``spare`` (None: none).
    """

    __slots__ = (
        "callback",
        "delivered",
        "key_serializer",
        "known",
        "produce",
        "reusable",
        "spare",
        "value_serializer",
    )

    def __init__(
        self,
        known: set[str],
        callback: Any = None,
        key_serializer: TopicSerializer | None = None,
        value_serializer: TopicSerializer | None = None,
        reusable: type[HandleCore] | None = None,
    ) -> None:
        self.produce: Produce | None = None
        """The client's ``produce`` while ``send()``'s fast path may be taken, else None."""
        self.known = known
        self.callback = callback
        self.key_serializer = key_serializer
        """The key serializer as ``fn(obj, topic)``; None: ``bytes`` (bytes pass as they are)."""
        self.value_serializer = value_serializer
        """As ``key_serializer``, for the value."""
        self.delivered = 0
        """Records acknowledged so far."""
        self.reusable = reusable
        self.spare: list[DeliveryHandle] = []
        """Delivered handles nobody holds, cleared, for ``send()`` to take before making one.

        At most as many as were in flight at once; emptied when the producer closes.
        """


class HandleCore:
    """The core of a delivery handle: its slots and its delivery callback."""

    __slots__ = ("_key", "_owner", "_record", "_state", "_topic", "_value")
    _owner: Any  # the _Owner (sdk.producer._records) until resolved, then None
    _state: Any
    _record: Any
    _topic: str  # with _value and _key: the record's parts while _record is None
    _value: Any
    _key: Any

    def _deliver(self, err: KafkaError | None, msg: KafkaMessage) -> None:
        """The librdkafka delivery callback of this record."""
        owner = self._owner
        if owner is None:
            return  # resolved already: librdkafka reports a record once
        # the outcome is on _state before _owner is None: result() on another thread that
        # sees no owner sees the outcome too
        if err is None:
            self._state = msg
            self._owner = None  # a resolved handle keeps no reference to its producer
            hot = owner._hot
            hot.delivered += 1
            callback = hot.callback
            if callback is not None:
                callback(self)
            if type(self) is hot.reusable and _refs(self) <= _UNHELD:
                # only librdkafka's call holds it: nobody can see it again, so send() takes
                # it instead of a new one (no allocation, and nothing new for the garbage
                # collector, whose passes over in-flight handles cost send() the most)
                self._state = self._record = self._value = self._key = None
                hot.spare.append(self)
        else:
            try:  # translated, kept for flush(), put on _state, passed to on_delivery
                owner._failed(self, err)
            finally:
                self._owner = None

    # the handle is its own delivery callback: no bound-method object per in-flight record
    __call__ = _deliver


_new = object.__new__
_refs = sys.getrefcount
H = TypeVar("H", bound=HandleCore)


class _Probe:
    """The references a callback's ``self`` has on this interpreter when only its caller holds it.

    A C caller's own (as librdkafka's), the call's and ``getrefcount``'s.
    """

    __slots__ = ()

    def __call__(self) -> int:
        return _refs(self)


# a callable iterator calls from C through the one reference it holds, as librdkafka does
_UNHELD: int = next(iter(_Probe(), None))


def new_handle(cls: type[H], owner: _Owner, topic: Any, value: Any, key: Any) -> H:
    """A pending handle of ``cls`` without ``__init__``: its record is built when asked for."""
    handle = _new(cls)
    handle._owner = owner
    handle._state = None
    handle._record = None
    handle._topic = topic
    handle._value = value
    handle._key = key
    return handle
