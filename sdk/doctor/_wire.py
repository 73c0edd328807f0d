"""One Kafka request on a plain socket: ApiVersions v3, for the broker's feature levels.

The finalized feature levels (``metadata.version``, ``transaction.version``, ``group.version``,
``share.version``) decide whether the cluster has KIP-890 transactions, the consumer group
protocol and share groups, but neither librdkafka nor confluent-kafka's ``AdminClient``
exposes them (there is no ``describe_features``). The Java admin reads them from the
ApiVersions response, and so does this module: one request, answered before any SASL
authentication (a broker must answer ApiVersions first so that a client can pick its SASL
handshake version), over TLS when the profile uses it. Nothing here writes to the cluster.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from sdk.profiles import SecurityProfile

__all__ = [
    "CONSUMER_GROUP_HEARTBEAT",
    "SHARE_GROUP_HEARTBEAT",
    "BrokerVersions",
    "read_versions",
    "tls_context",
]

API_VERSIONS = 18
CONSUMER_GROUP_HEARTBEAT = 68
SHARE_GROUP_HEARTBEAT = 76
_UNSUPPORTED_VERSION = 35
_CORRELATION_ID = 4711
_MAX_RESPONSE = 1 << 20


@dataclass(frozen=True)
class BrokerVersions:
    """What one broker's ApiVersions response said.

    Attributes:
        apis: API key -> (lowest, highest) version the broker serves.
        finalized: Feature name -> finalized level, cluster-wide (``share.version`` is absent
            when its level is 0, as Kafka leaves level-0 features out).
        legacy: The broker refused ApiVersions v3 (older than Kafka 2.4): no feature levels.
    """

    apis: dict[int, tuple[int, int]] = field(default_factory=dict)
    finalized: dict[str, int] = field(default_factory=dict)
    legacy: bool = False


def tls_context(security: SecurityProfile, extras: Mapping[str, object]) -> ssl.SSLContext | None:
    """The TLS context librdkafka would use for this profile (None for a plain connection).

    Args:
        security: The profile's security settings.
        extras: The profile's extra librdkafka keys (``enable.ssl.certificate.verification``
            and ``ssl.endpoint.identification.algorithm`` are honoured).

    Raises:
        OSError: A certificate or key file cannot be read.
        ssl.SSLError: A file is not a valid certificate or key.
    """
    if security.protocol not in ("SSL", "SASL_SSL"):
        return None
    ca = security.ssl_ca_location
    if ca is None or ca == "probe":
        context = ssl.create_default_context()
    elif os.path.isdir(ca):
        context = ssl.create_default_context(capath=ca)
    else:
        context = ssl.create_default_context(cafile=ca)
    if security.ssl_certificate_location and security.ssl_key_location:
        password = security.ssl_key_password
        context.load_cert_chain(
            security.ssl_certificate_location,
            security.ssl_key_location,
            password.get_secret_value() if password is not None else None,
        )
    if str(extras.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    if str(extras.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def read_versions(
    host: str, port: int, *, tls: ssl.SSLContext | None, timeout_s: float
) -> BrokerVersions:
    """Ask one broker for its API versions and the cluster's finalized features.

    Args:
        host: The broker's advertised host.
        port: Its port (the listener the profile connects to).
        tls: A TLS context (:func:`tls_context`), or None for PLAINTEXT / SASL_PLAINTEXT.
        timeout_s: Seconds for the connection and for each read.

    Returns:
        The broker's answer.

    Raises:
        OSError: The connection failed or timed out (``ssl.SSLError`` for TLS).
        ValueError: The answer was not an ApiVersions response.
    """
    with socket.create_connection((host, port), timeout=timeout_s) as raw:
        if tls is None:
            return _exchange(raw)
        with tls.wrap_socket(raw, server_hostname=host) as secure:
            return _exchange(secure)


def _exchange(sock: socket.socket) -> BrokerVersions:
    name = b"kafka-semantics-doctor"
    body = (
        struct.pack(">hhi", API_VERSIONS, 3, _CORRELATION_ID)
        + struct.pack(">h", len(name))
        + name
        + b"\x00"  # header tagged fields
        + _compact_string("kafka-semantics")
        + _compact_string("1")
        + b"\x00"  # body tagged fields
    )
    sock.sendall(struct.pack(">i", len(body)) + body)
    (size,) = struct.unpack(">i", _recv(sock, 4))
    if not 6 <= size <= _MAX_RESPONSE:
        raise ValueError(f"not an ApiVersions response (size {size})")
    return parse_response(_recv(sock, size))


def parse_response(data: bytes) -> BrokerVersions:
    """Parse an ApiVersions response (header v0, then the v3 body).

    Raises:
        ValueError: It is malformed, or answers another request.
    """
    try:
        correlation, error = struct.unpack_from(">ih", data, 0)
        if correlation != _CORRELATION_ID:
            raise ValueError("the broker answered another request")
        if error == _UNSUPPORTED_VERSION:  # the v0 error answer of a broker older than 2.4
            return BrokerVersions(legacy=True)
        if error != 0:
            raise ValueError(f"ApiVersions failed with error code {error}")
        reader = _Reader(data, 6)
        apis: dict[int, tuple[int, int]] = {}
        for _ in range(reader.uvarint() - 1):
            key, low, high = reader.unpack(">hhh")
            reader.skip_tags()
            apis[key] = (low, high)
        reader.unpack(">i")  # throttle time
        finalized: dict[str, int] = {}
        for _ in range(reader.uvarint()):
            tag, length = reader.uvarint(), reader.uvarint()
            if tag == 2:  # FinalizedFeatures: name, max level, min level
                inner = _Reader(reader.take(length), 0)
                for _ in range(inner.uvarint() - 1):
                    feature = inner.compact_string()
                    (level, _low) = inner.unpack(">hh")
                    inner.skip_tags()
                    finalized[feature] = level
            else:
                reader.take(length)
        return BrokerVersions(apis=apis, finalized=finalized)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed ApiVersions response: {exc}") from None


class _Reader:
    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.at = offset

    def unpack(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def take(self, length: int) -> bytes:
        if self.at + length > len(self.data):
            raise IndexError("truncated")
        chunk = self.data[self.at : self.at + length]
        self.at += length
        return chunk

    def compact_string(self) -> str:
        return self.take(self.uvarint() - 1).decode()

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return _uvarint(len(data) + 1) + data


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _recv(sock: socket.socket, count: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < count:
        chunk = sock.recv(count - len(chunks))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks += chunk
    return bytes(chunks)
