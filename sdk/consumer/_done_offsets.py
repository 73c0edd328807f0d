"""Records finished above the committed offset, carried in the offset commit's metadata.

A concurrent run (``Consumer.run(concurrency=N)``) finishes records out of order: the committed
offset is the first record not finished, and records above it may be finished already. Their
offsets travel in the commit's metadata string, so that after a crash or a rebalance the next
owner skips them instead of handling them again. The format is the SDK's own:
``ksem-done:1:`` then a bitmap (bit ``i`` = offset ``committed + 1 + i`` is finished),
zlib-compressed and base64url-encoded. A broker keeps at most ``offset.metadata.max.bytes``
(4096 by default) per partition, so the set is cut from the top until the string fits
:data:`MAX_CHARS`: what is cut is handled again, which at-least-once allows.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterable

__all__ = ["MAX_CHARS", "PREFIX", "decode", "encode"]

PREFIX = "ksem-done:1:"
MAX_CHARS = 2_000


def encode(committed: int, done: Iterable[int]) -> str:
    """The metadata for ``committed`` with the finished offsets above it ("" for none)."""
    offsets = sorted(o for o in done if o > committed)
    while offsets:
        span = offsets[-1] - committed
        bits = bytearray((span + 7) // 8)
        for o in offsets:
            i = o - committed - 1
            bits[i >> 3] |= 1 << (i & 7)
        text = PREFIX + base64.urlsafe_b64encode(zlib.compress(bytes(bits), 9)).decode()
        if len(text) <= MAX_CHARS:
            return text
        offsets = offsets[: len(offsets) // 2]  # too long: keep the lower half
    return ""


def decode(committed: int, metadata: str | None) -> set[int]:
    """The finished offsets above ``committed`` in ``metadata``; empty if it is not ours."""
    if not metadata or not metadata.startswith(PREFIX) or committed < 0:
        return set()
    try:
        bits = zlib.decompress(base64.urlsafe_b64decode(metadata[len(PREFIX) :]))
    except (binascii.Error, ValueError, zlib.error):
        return set()
    return {
        committed + 1 + (byte_i << 3) + bit
        for byte_i, byte in enumerate(bits)
        if byte
        for bit in range(8)
        if byte >> bit & 1
    }
