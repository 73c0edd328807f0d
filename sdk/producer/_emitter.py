"""The Processor's output emitter: one handler output queued.

Per output on the exactly-once hot path, the emitter is the only SDK code between the handler
and ``confluent_kafka.Producer.produce``.

The contract (``tests/sdk/producer/test_emitter.py`` checks it): called with one output ``out``,

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

The fast path does not call ``span.add()`` per output (that would double its cost): whoever
made the emitter hands it to the span, which adds ``emitted`` when its count is read
(``TransactionSpan.count_from``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Emitter"]


class Emitter:
    """The output emitter; arguments as in the module docstring."""

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
