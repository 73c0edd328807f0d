"""The core of a delivery handle: its slots and its delivery callback, compiled or in Python.

:class:`~sdk.producer.DeliveryHandle` is built on :data:`HandleCore`. Where the optional C
extension ``sdk.producer._speedups`` was built (``pip install`` builds it when a C compiler is
found), that is the compiled class; otherwise it is :class:`PyHandleCore` below, which does the
same in Python. ``SDK_PURE_PYTHON=1`` in the environment forces the Python one.

Why a compiled core (issue #16): per record, a Python handle cost ``send()`` a Python frame for
the delivery callback (librdkafka calls the handle), and one garbage-collected object per record
in flight, which the collector scans again and again while a producer runs ahead of the broker.
The compiled handle's callback is a C function, and the handle is not tracked by the collector.
That is safe because a handle lets go of its producer when it resolves: what it keeps after that
(topic, key and value, librdkafka's message or the translated error) cannot lead back to it.

The contract both cores keep (``tests/sdk/producer/test_handle.py`` checks it on both):

- slots ``_owner, _state, _record, _topic, _value, _key``;
- ``handle(err, msg)`` and ``handle._deliver(err, msg)``, once per record: with ``err`` None,
  ``_state = msg``, ``owner._hot.delivered += 1``, then ``owner._hot.callback(handle)`` if set;
  otherwise ``owner._failed(handle, err)``; either way ``_owner`` becomes None once the
  outcome is on ``_state`` (a second call does nothing);
- :func:`new_handle`, a pending handle of a subclass with ``_record`` None (built on demand).

:data:`HotPath` is the producer's ``_hot`` (compiled, or :class:`PyHotPath`): what its
per-record paths read, as fields instead of producer attributes (``send()`` read two producer
attributes per record and the delivery callback three, each a type and a dict lookup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from sdk._compiled import extension

__all__ = ["COMPILED", "HandleCore", "HotPath", "PyHandleCore", "PyHotPath", "new_handle"]


class PyHotPath:
    """What one producer's per-record paths read (the compiled ``HotPath``'s twin).

    Args:
        known: The topics whose lookup succeeded (only these take ``send()``'s fast path).
        callback: The user's ``on_delivery``, or None.
    """

    __slots__ = ("callback", "delivered", "known", "produce")

    def __init__(self, known: set[str], callback: Any = None) -> None:
        self.produce: Any = None
        """The client's ``produce`` while ``send()``'s fast path may be taken, else None."""
        self.known = known
        self.callback = callback
        self.delivered = 0
        """Records acknowledged so far."""


class PyHandleCore:
    """The Python core of a delivery handle (the compiled one's twin)."""

    __slots__ = ("_key", "_owner", "_record", "_state", "_topic", "_value")
    _owner: Any
    _state: Any
    _record: Any
    _topic: str  # with _value and _key: the record's parts while _record is None
    _value: Any
    _key: Any

    def _deliver(self, err: Any, msg: Any) -> None:
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
        else:
            try:  # translated, kept for flush(), put on _state, passed to on_delivery
                owner._failed(self, err)
            finally:
                self._owner = None

    # the handle is its own delivery callback: no bound-method object per in-flight record
    __call__ = _deliver


_new = object.__new__
H = TypeVar("H", bound=PyHandleCore)


def _py_new_handle(cls: type[H], owner: Any, topic: Any, value: Any, key: Any) -> H:
    """A pending handle of ``cls`` without ``__init__``: its record is built when asked for."""
    handle = _new(cls)
    handle._owner = owner
    handle._state = None
    handle._record = None
    handle._topic = topic
    handle._value = value
    handle._key = key
    return handle


COMPILED = False
"""Whether :data:`HandleCore` is the compiled class."""

if TYPE_CHECKING:  # the type checker sees the Python core (the compiled one has its shape)
    HandleCore = PyHandleCore
    HotPath = PyHotPath
    new_handle = _py_new_handle
else:
    HandleCore, HotPath, new_handle = PyHandleCore, PyHotPath, _py_new_handle
    _speedups = extension("sdk.producer._speedups")
    if _speedups is not None:
        HandleCore, HotPath = _speedups.HandleCore, _speedups.HotPath
        new_handle, COMPILED = _speedups.new_handle, True
