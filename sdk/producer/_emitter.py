"""The Processor's output emitter: one handler output queued.

Per output on the exactly-once hot path, the emitter is the only SDK code between the handler
and ``confluent_kafka.Producer.produce``.

The contract (``tests/sdk/producer/test_emitter.py`` checks it): :attr:`Emitter.emit`, called
with one output ``out``,

- when ``type(out) is cls`` (the :class:`~sdk.records.OutputRecord` class, no subclass)
  with headers and partition None, or ``out`` is a plain ``tuple`` ``(topic, value)`` or
  ``(topic, value, key)``, and its topic is in ``known``: ``str`` value and key are
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

:attr:`Emitter.run` is :func:`sdk.records.handle_run` with this ``emit``: the same contract
(returns, stops, what it returns instead of raising), with two differences. Its arguments are
``(records, i, n, stop, handler, cls, due)``: after each record it reads ``due.passed`` (a
:class:`sdk._deadline.Due`) where ``handle_run`` compares ``clock()`` with ``due_at``. And the
fast path's commonest case is inline in the loop instead of a call per output. That case is a
plain ``(topic, value, key)`` tuple, or an ``OutputRecord`` without headers and partition,
whose topic is in ``known`` and whose value and key are not ``str``; every other output goes
to ``emit`` itself, so the outcome of each output is as ``emit``'s. :attr:`Emitter.emit_run`
is :func:`sdk.records.emit_run` with this ``emit`` in the same way (the outputs of handlers
that ran already: ``sdk.aio``; arguments ``(values, i, stop, due)``), the same loop without
the view and the handler.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from sdk.records import ConsumerRecord

if TYPE_CHECKING:
    from sdk._client import DeliveryCallback
    from sdk._deadline import Due
    from sdk._message import KafkaMessage
    from sdk.observability import TransactionSpan
    from sdk.records import EmitRun, HandleRun, Output, OutputRecord

__all__ = ["Emitter"]

_new = object.__new__
_refs = sys.getrefcount


def _none(record: object) -> None:
    """The handler of :attr:`Emitter.emit_run`'s loop, never called (its values are given)."""


class _Never(ConsumerRecord):
    """The view type of that loop, never made."""

    __slots__ = ()


class Emitter:
    """The output emitter; arguments as in the module docstring.

    The hot path calls :attr:`emit`, a closure: calling it costs a plain function call, where
    calling an instance costs a lookup of ``__call__`` and reads of its slots on top.
    """

    __slots__ = ("_count", "emit", "emit_run", "run")

    def __init__(
        self,
        cls: type[OutputRecord],
        produce: Callable[..., None],
        known: set[str],
        enqueue: Callable[[Output, TransactionSpan | None], None],
        span: TransactionSpan | None,
        callback: DeliveryCallback | None,
    ) -> None:
        emitted = 0

        def emit(out: Output) -> None:
            nonlocal emitted
            kind = type(out)
            fields: tuple[object, ...] = out  # typed as any tuple: the kind says which
            if kind is cls:
                topic, value, key, headers, partition = fields
            elif kind is tuple and len(fields) == 3:  # a plain (topic, value, key)
                topic, value, key = fields
                headers = partition = None
            elif kind is tuple and len(fields) == 2:
                topic, value = fields
                key = headers = partition = None
            else:
                enqueue(out, span)
                return
            if headers is None and partition is None and topic in known:
                if type(value) is str:
                    value = value.encode()
                if type(key) is str:
                    key = key.encode()
                try:
                    if callback is None:
                        produce(topic, value, key)
                    else:
                        produce(topic, value, key, -1, callback)
                except Exception:  # full queue, refusal: the general path waits/translates
                    pass
                else:
                    emitted += 1
                    return
            enqueue(out, span)

        def loop(
            records: Sequence[KafkaMessage],
            i: int,
            n: int,
            stop: int,
            handler: Callable[[ConsumerRecord], object],
            view: type[ConsumerRecord],
            due: Due,
            values: Sequence[Iterable[Output] | None] | None = None,
        ) -> tuple[int, int, ConsumerRecord | None, BaseException | None]:
            # sdk.records.handle_run's loop (keep the two in step), with emit's commonest
            # case inline: a call per output is a third of what the SDK adds per record;
            # with values, sdk.records.emit_run's: values[i] are record i's outputs. After
            # each record it reads due.passed where handle_run reads the clock: an attribute
            # read against a call (sdk._deadline)
            nonlocal emitted
            produced = fast = 0
            new = _new
            record: ConsumerRecord | None = None
            try:
                while i < n:
                    if values is not None:
                        outputs = values[i]
                        if outputs is None:
                            outputs = ()
                    else:
                        try:  # sdk.records.view, inlined; reused as handle_run reuses it
                            msg = records[i]
                            if record is None or _refs(record) > 2:
                                record = new(view)
                            record._key, record._value, record._raw = msg.key(), msg.value(), msg
                        except BaseException as exc:
                            return i, produced, None, exc
                        try:
                            returned = handler(record)
                            if type(returned) is list:
                                outputs = returned
                            else:
                                outputs = list(cast("Iterable[Output]", returned or ()))
                        except BaseException as exc:
                            return i, produced, record, exc
                    try:
                        for out in outputs:
                            kind = type(out)
                            fields: tuple[object, ...] = out
                            if kind is tuple and len(fields) == 3:
                                topic, value, key = fields
                            elif kind is cls and fields[3] is None and fields[4] is None:
                                topic, value, key = fields[0], fields[1], fields[2]
                            else:
                                emit(out)
                                produced += 1
                                continue
                            if topic in known and type(value) is not str and type(key) is not str:
                                try:
                                    if callback is None:
                                        produce(topic, value, key)
                                    else:
                                        produce(topic, value, key, -1, callback)
                                except Exception:  # as emit: the general path waits/translates
                                    pass
                                else:
                                    fast += 1
                                    produced += 1
                                    continue
                                enqueue(out, span)  # outside the except: no chained context
                            else:
                                emit(out)
                            produced += 1
                    except BaseException as exc:
                        return i, produced, None, exc
                    i += 1
                    if i >= stop:
                        break
                    try:
                        late = due.passed
                    except BaseException as exc:  # a Due of a test may raise
                        return i, produced, None, exc
                    if late:
                        break
                return i, produced, None, None
            finally:
                emitted += fast

        def emit_run(
            values: Sequence[Iterable[Output] | None], i: int, stop: int, due: Due
        ) -> tuple[int, int, BaseException | None]:
            i, produced, _, error = loop((), i, stop, stop, _none, _Never, due, values)
            return i, produced, error

        def count() -> int:
            return emitted

        self.emit: Callable[[Output], None] = emit
        """Queue one output (see the module docstring)."""
        self.run: HandleRun = loop  # values None: handle_run's contract
        """``handle_run`` with :attr:`emit`, its commonest case inline (the module docstring)."""
        self.emit_run: EmitRun = emit_run
        """``sdk.records.emit_run`` with :attr:`emit`, its commonest case inline, as :attr:`run`."""
        self._count = count

    @property
    def emitted(self) -> int:
        """Outputs queued on the fast path (the general path counts on the span itself)."""
        return self._count()
