"""One in-process SparkSession for the whole test session (the kill tests run their own
drivers as subprocesses)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark_integration._support import ROOT


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from sdk.testing.spark_jars import resolve_spark_kafka_jars
    from spark_integration import local_session

    paths = [str(ROOT), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)  # Python workers import tests.*
    session = local_session("kafka-semantics-tests", jars=resolve_spark_kafka_jars().jars)
    yield session
    session.stop()
