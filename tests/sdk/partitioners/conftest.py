"""Fixtures of the partitioner tests: a third-party plugin distribution on sys.path."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sdk.partitioners._registry import ENTRY_POINT_GROUP


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Iterator[str]:
    """Write a third-party distribution (module + dist-info) and put it on sys.path."""
    suffix = uuid.uuid4().hex[:8]
    module = f"acme_partitioners_{suffix}"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(
            '''
            """A third-party partitioner plugin."""


            class _LastPartition:
                def partition(self, key, value, partition_count):
                    return partition_count - 1


            class LastPartitioner:
                name = "last"
                native_name = None
                requires_consistency = False

                def for_topic(self, topic):
                    return _LastPartition()


            LAST = LastPartitioner()
            NOT_A_PARTITIONER = 42


            def broken():
                raise RuntimeError("plugin factory exploded")
            '''
        )
    )
    dist = tmp_path / f"acme_partitioners_{suffix}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: acme-partitioners-{suffix}\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n"
        f"last-class-{suffix} = {module}:LastPartitioner\n"
        f"last-instance-{suffix} = {module}:LAST\n"
        f"bad-{suffix} = {module}:NOT_A_PARTITIONER\n"
        f"broken-{suffix} = {module}:broken\n"
        f"missing-{suffix} = {module}_nope:X\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield suffix
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(module, None)
