"""The Processor's output emitter: one handler output queued, compiled or in Python.

Per output on the exactly-once hot path (issue #16), the emitter is the only SDK code between
the handler and ``confluent_kafka.Producer.produce``. :func:`emitter` makes one; where the
optional C extension ``sdk.producer._speedups`` was built it is the compiled ``Emitter``,
otherwise :class:`PyEmitter` (``SDK_PURE_PYTHON=1`` forces it).

The contract both keep (``tests/sdk/producer/test_emitter.py`` checks it on both): called with
one output ``out``,

- when ``type(out) is cls`` (the :class:`~sdk.core.records.OutputRecord` class, no subclass),
  its headers and partition are None and its topic is in ``known``: ``str`` value and key are
  UTF-8 encoded and ``produce(topic, value, key)`` is called (``produce(topic, value, key,
  -1, callback)`` unless ``callback`` is None: ``produce`` is
  :func:`sdk._client.positional_produce`'s, -1 the partitioner), then the emitter's own
  ``emitted`` count goes up by one. An ``Exception`` from ``produce`` (a full queue, a refusal)
  sends the output down the general path instead; anything else (``KeyboardInterrupt``)
  propagates;
- any other output goes to ``enqueue(out, span)``: the general path, which waits on a full
  queue, routes with the partitioner, translates errors and counts the output on ``span``;
- it returns None; what ``enqueue`` or encoding raise propagates.

The fast path does not call ``span.add()`` per output (measured: ~100 ns an output, as much as
the rest of the compiled emitter): whoever made the emitter hands it to the span, which adds
``emitted`` when its count is read (``TransactionSpan.count_from``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sdk._compiled import extension

__all__ = ["COMPILED", "PyEmitter", "emitter"]


class PyEmitter:
    """The Python emitter (the compiled one's twin); arguments as in the module docstring."""

    __slots__ = ("_callback", "_cls", "_emitted", "_enqueue", "_known", "_produce", "_span")

    def __init__(
        self,
        cls: type[tuple[Any, ...]],
        produce: Callable[..., Any],
        known: set[str],
        enqueue: Callable[[Any, Any], None],
        span: Any,
        callback: Callable[..., Any] | None,
    ) -> None:
        self._cls, self._produce, self._known, self._enqueue = cls, produce, known, enqueue
        self._span, self._callback = span, callback
        self._emitted = 0

    @property
    def emitted(self) -> int:
        """Outputs queued on the fast path (the general path counts on the span itself)."""
        return self._emitted

    def __call__(self, out: Any) -> None:
        """Queue ``out`` (see the module docstring)."""
        if type(out) is self._cls:
            topic, value, key, headers, partition = out
            if headers is None and partition is None and topic in self._known:
                if type(value) is str:
                    value = value.encode()
                if type(key) is str:
                    key = key.encode()
                try:
                    if self._callback is not None:
                        self._produce(topic, value, key, -1, self._callback)
                    else:
                        self._produce(topic, value, key)
                except Exception:  # full queue, refusal: the general path waits / translates
                    pass
                else:
                    self._emitted += 1
                    return
        self._enqueue(out, self._span)


COMPILED = False
"""Whether :func:`emitter` makes the compiled emitter."""

if TYPE_CHECKING:  # the type checker sees the Python emitter (the compiled one has its shape)
    emitter = PyEmitter
else:
    emitter = PyEmitter
    _speedups = extension("sdk.producer._speedups")
    if _speedups is not None:
        emitter, COMPILED = _speedups.Emitter, True
