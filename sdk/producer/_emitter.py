"""The Processor's output emitter: one handler output queued, compiled or in Python.

Per output on the exactly-once hot path (issue #16), the emitter is the only SDK code between
the handler and ``confluent_kafka.Producer.produce``. :func:`emitter` makes one; where the
optional C extension ``sdk.producer._speedups`` was built it is the compiled ``Emitter``,
otherwise the closure :func:`py_emitter` makes (``SDK_PURE_PYTHON=1`` forces it).

The contract both keep (``tests/sdk/producer/test_emitter.py`` checks it on both): called with
one output ``out``,

- when ``type(out) is cls`` (the :class:`~sdk.core.records.OutputRecord` class, no subclass),
  its headers and partition are None and its topic is in ``known``: ``str`` value and key are
  UTF-8 encoded and ``produce(topic, value, key)`` is called (``produce(topic, value, key,
  -1, callback)`` unless ``callback`` is None: ``produce`` is
  :func:`sdk._client.positional_produce`'s, -1 the partitioner), then ``span.add()`` unless
  ``span`` is None. An ``Exception`` from ``produce`` (a full queue, a refusal) sends the
  output down the general path instead; anything else (``KeyboardInterrupt``) propagates;
- any other output goes to ``enqueue(out, span)``: the general path, which waits on a full
  queue, routes with the partitioner, translates errors and counts the output on ``span``;
- it returns None; what ``enqueue``, ``span.add`` or encoding raise propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sdk._compiled import extension

__all__ = ["COMPILED", "emitter", "py_emitter"]

Emit = Callable[[Any], None]


def py_emitter(
    cls: type[tuple[Any, ...]],
    produce: Callable[..., Any],
    known: set[str],
    enqueue: Callable[[Any, Any], None],
    span: Any,
    callback: Callable[..., Any] | None,
) -> Emit:
    """The Python emitter (the compiled one's twin); arguments as in the module docstring."""

    def emit(out: Any) -> None:
        if type(out) is cls:
            topic, value, key, headers, partition = out
            if headers is None and partition is None and topic in known:
                if type(value) is str:
                    value = value.encode()
                if type(key) is str:
                    key = key.encode()
                try:
                    if callback is not None:
                        produce(topic, value, key, -1, callback)
                    else:
                        produce(topic, value, key)
                except Exception:  # full queue, refusal: the general path waits / translates
                    pass
                else:
                    if span is not None:
                        span.add()
                    return
        enqueue(out, span)

    return emit


COMPILED = False
"""Whether :func:`emitter` makes the compiled emitter."""

if TYPE_CHECKING:  # the type checker sees the Python emitter (the compiled one has its shape)
    emitter = py_emitter
else:
    emitter = py_emitter
    _speedups = extension("sdk.producer._speedups")
    if _speedups is not None:
        emitter, COMPILED = _speedups.Emitter, True
