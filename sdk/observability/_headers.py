"""W3C trace context in Kafka record headers: the getter/setter pair for OpenTelemetry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.propagators.textmap import Getter, Setter

__all__ = ["HeaderList", "HeadersGetter", "HeadersLike", "HeadersSetter", "as_header_list"]

HeaderValue = bytes | str | None
HeaderList = list[tuple[str, HeaderValue]]
HeadersLike = Sequence[tuple[str, HeaderValue]] | Mapping[str, HeaderValue] | None
"""Headers as confluent-kafka takes them (list of pairs or dict) or returns them (list/None)."""


def as_header_list(headers: HeadersLike) -> HeaderList:
    """Copy ``headers`` (pairs, dict or None) into a new list of ``(name, value)`` pairs."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


def _text(value: HeaderValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value


class HeadersGetter(Getter[Sequence[tuple[str, HeaderValue]]]):
    """Read propagation fields from a header list (names compared case-insensitively)."""

    def get(self, carrier: Sequence[tuple[str, HeaderValue]], key: str) -> list[str] | None:
        """Return every value of header ``key`` decoded as UTF-8, or None if absent."""
        key = key.lower()
        found = [t for name, value in carrier if name.lower() == key and (t := _text(value))]
        return found or None

    def keys(self, carrier: Sequence[tuple[str, HeaderValue]]) -> list[str]:
        """Return the header names."""
        return [name for name, _ in carrier]


class HeadersSetter(Setter[HeaderList]):
    """Write a propagation field into a header list, replacing any earlier value of it."""

    def set(self, carrier: HeaderList, key: str, value: str) -> None:
        """Replace header ``key`` (case-insensitive) by ``value`` encoded as UTF-8 bytes."""
        lowered = key.lower()
        carrier[:] = [(n, v) for n, v in carrier if n.lower() != lowered]
        carrier.append((key, value.encode("utf-8")))
