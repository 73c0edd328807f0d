"""Whether a client has reached a broker since it started, and librdkafka's log, collapsed.

One :class:`BrokerContact` per confluent-kafka client. It is the client's ``logger`` (every
librdkafka log line goes to the ``sdk.librdkafka`` logger through it) and hears the client's
``error_cb`` events, and it answers one question for the front end that holds the client: has
any broker of ``bootstrap.servers`` answered since the client started?

* **Fail fast.** A client that has reached no broker for ``socket.connection.setup.timeout.ms``
  (librdkafka's bound on setting up one connection, TCP + TLS + SASL; 30 s by default, set it
  with the profile's ``extras``) raises :class:`~sdk.errors.BrokerUnreachableError` naming the
  bootstrap servers and the last connection error. Not earlier: until then an attempt to a
  slow broker (a long TLS handshake, a firewall that drops SYNs) may still succeed.
* **A broker that was reached and goes down later is an outage, not a wrong address**: the
  clients ride it out as before. Contact is noted on the first assignment or record, on a
  metadata request that was answered (the probe, made once the bound has passed, before
  raising) and on a connection lost "in state UP".
* **Quiet.** librdkafka logs a refused connection each time it retries (about 20 lines a second
  against a closed port). The first line of each kind is logged; the repeats are counted and
  summed up in one line per kind and minute.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

from sdk._config import ConfigMapping, config_int
from sdk.errors import BrokerUnreachableError

__all__ = ["DEFAULT_CONNECT_TIMEOUT_MS", "BrokerContact", "is_connection_error"]

DEFAULT_CONNECT_TIMEOUT_MS = 30_000
"""librdkafka's default ``socket.connection.setup.timeout.ms``: the bound without an extra."""

_log = logging.getLogger("sdk.librdkafka")
_SUMMARY_EVERY_S = 60.0
_MAX_KINDS = 256  # distinct lines remembered; more are rare (then the table starts over)
_PROBE_TIMEOUT_S = 1.0
# what makes two lines "the same": librdkafka's thread tag, timings and its own repeat counts
_THREAD = re.compile(r"^\[thrd:[^\]]*\]: ")
_VARYING = re.compile(r"\d+ms|\d+ identical error\(s\) suppressed|\d+/\d+ brokers")
_WAS_UP = "in state UP"
# one table for the process: the consumer and the producer of a Processor, say, report the
# same refused connection; it is logged once
_lock = threading.Lock()
_seen: dict[str, list[float]] = {}  # kind -> [repeats since its last line, time of that line]


def is_connection_error(kafka_error: object) -> bool:
    """A transport, resolve or all-brokers-down event (repeated while librdkafka retries)."""
    from confluent_kafka import KafkaError

    code = kafka_error.code() if hasattr(kafka_error, "code") else None
    return code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE)


class BrokerContact:
    """One client's contact with the cluster: since when it tried, whether it got an answer.

    Pass it as the client's ``logger`` (confluent-kafka calls :meth:`log`) and feed the client's
    ``error_cb`` events to :meth:`on_error`. Thread-safe: librdkafka's callbacks may come from
    a thread of its own.

    Args:
        config: The client's rendered librdkafka configuration (``bootstrap.servers`` and
            ``socket.connection.setup.timeout.ms`` are read from it).
        clock: Seconds, monotonic (tests pass their own).
    """

    def __init__(self, config: ConfigMapping, clock: Callable[[], float] = time.monotonic) -> None:
        self.bootstrap_servers = str(config.get("bootstrap.servers", ""))
        setup_ms = config_int(
            config, "socket.connection.setup.timeout.ms", DEFAULT_CONNECT_TIMEOUT_MS
        )
        self.timeout_s = setup_ms / 1000.0
        self._clock = clock
        self.started = clock()
        self.reached = False
        self.last_failure: str | None = None

    # ------------------------------------------------------------------ what the client says
    def log(self, level: int, fmt: str, *args: object) -> None:
        """confluent-kafka's ``logger`` call: ``log(level, "%s [%s] %s", fac, name, text)``."""
        text = _THREAD.sub("", str(args[-1])) if args else fmt
        facility = str(args[0]) if len(args) == 3 else ""
        if _WAS_UP in text:
            self.reached = True
        elif facility == "FAIL":
            self.last_failure = text
        self._collapsed(level, text)

    def on_error(self, kafka_error: object) -> bool:
        """An ``error_cb`` event: note it; True if it is a connection error (already logged).

        The caller keeps its own handling of the other events; a connection error is logged
        here, collapsed like the log lines.
        """
        if not is_connection_error(kafka_error):
            return False
        text = str(kafka_error.str() if hasattr(kafka_error, "str") else kafka_error)
        if _WAS_UP in text:
            self.reached = True
        elif "brokers are down" not in text or self.last_failure is None:
            self.last_failure = text
        self._collapsed(logging.WARNING, text)
        return True

    def note_reached(self) -> None:
        """A broker answered (an assignment, a record, a metadata response)."""
        self.reached = True

    # ------------------------------------------------------------------ the decision
    def overdue(self) -> bool:
        """No broker reached, and the bound since the start has passed."""
        return not self.reached and self._clock() - self.started >= self.timeout_s

    def check(self, probe: Callable[[float], object] | None, context: str) -> None:
        """Raise once no broker has answered for the bound (cheap until then: one comparison).

        Args:
            probe: ``probe(timeout_s)`` asks a broker for metadata and raises if none answers
                (``client.list_topics``); None for a client that has no such call (then the
                last connection error must say the broker refused or was not found).
            context: What the front end was doing, starts the message.

        Raises:
            BrokerUnreachableError: Nothing answered for ``timeout_s`` since the start.
        """
        if not self.overdue():
            return
        if probe is not None:
            try:
                probe(_PROBE_TIMEOUT_S)
            except Exception:  # the seam translates nothing here: this only asks "any answer?"
                pass
            else:
                self.reached = True
                return
        elif self.last_failure is None:
            return  # silence is not a refusal: maybe a slow cluster
        raise self.unreachable(context)

    def wait(
        self,
        probe: Callable[[float], object],
        stopped: Callable[[], bool],
        context: str,
        serve: Callable[[], object] | None = None,
    ) -> bool:
        """Before a call that needs the cluster: probe until a broker answers.

        Probes every second or so, so that a stop request (SIGINT, SIGTERM) is seen meanwhile.
        ``serve`` (the client's ``poll(0)``) delivers its log and error events after a failed
        probe, so that the error can say what the last attempt met.

        Returns:
            True once a broker answered; False if ``stopped()`` became true first.

        Raises:
            BrokerUnreachableError: No broker answered for ``timeout_s`` since the start.
        """
        while not self.reached:
            if stopped():
                return False
            try:
                probe(_PROBE_TIMEOUT_S)
            except Exception:
                if serve is not None:
                    serve()
                if self.overdue():
                    raise self.unreachable(context) from None
                if self._clock() - self.started < _PROBE_TIMEOUT_S:
                    time.sleep(0.05)  # refused at once: don't spin
            else:
                self.reached = True
        return True

    def unreachable(self, context: str, bound: str | None = None) -> BrokerUnreachableError:
        """The error: the address, the bound, what was tried and what to check.

        Args:
            context: What the front end was doing, starts the message.
            bound: What bounded the wait, if not ``socket.connection.setup.timeout.ms``.
        """
        from confluent_kafka import KafkaError

        tried = self.last_failure or "no answer to a metadata request"
        waited = self._clock() - self.started
        bound = bound or (
            f"the SDK gives up after socket.connection.setup.timeout.ms="
            f"{self.timeout_s * 1000:.0f}, settable in the profile's extras"
        )
        text = (
            f"{context}: no broker of bootstrap_servers {self.bootstrap_servers!r} answered in "
            f"{waited:.0f}s (last: {tried}); is the broker running, and is this its address "
            f"and listener? ({bound})"
        )
        return BrokerUnreachableError(
            text, kafka_error=KafkaError(KafkaError._TRANSPORT, text, fatal=False)
        )

    # ------------------------------------------------------------------ the log
    def _collapsed(self, level: int, text: str) -> None:
        kind = _VARYING.sub("#", text)  # the log line and the error_cb event of one failure
        now = self._clock()
        with _lock:
            seen = _seen.get(kind)
            if seen is None:
                if len(_seen) >= _MAX_KINDS:
                    _seen.clear()
                _seen[kind] = [0, now]
                summary = None
            elif now - seen[1] >= _SUMMARY_EVERY_S:
                summary, seen[0], seen[1] = seen[0] + 1, 0, now
            else:
                seen[0] += 1
                return
        if summary is None:
            _log.log(level, "%s", text)
        else:
            _log.log(
                level,
                "%s (%d times in the last %.0fs; repeats are logged once a minute)",
                text,
                summary,
                _SUMMARY_EVERY_S,
            )
