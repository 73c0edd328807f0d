"""``sdk._deprecation.RenamedAttribute``: an attribute read under its old name warns."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sdk._deprecation import RenamedAttribute
from spark_integration._batch import BatchJobResult
from spark_integration._task import RangeResult


@dataclass
class _Result:
    duration_s: float = 0.0
    seconds = RenamedAttribute[float]("duration_s")


def test_the_old_name_reads_the_new_one_and_warns_naming_both() -> None:
    result = _Result(duration_s=2.5)
    with pytest.warns(DeprecationWarning, match=r"_Result\.seconds is deprecated, use duration_s"):
        assert result.seconds == 2.5
    assert isinstance(_Result.seconds, RenamedAttribute)  # on the class: the descriptor
    assert "seconds" not in {f for f in _Result.__dataclass_fields__}  # not a field


@pytest.mark.parametrize("cls", [BatchJobResult, RangeResult])
def test_spark_results_keep_seconds_for_one_release(cls: type) -> None:
    assert "seconds" not in cls.__dataclass_fields__
    assert isinstance(cls.__dict__["seconds"], RenamedAttribute)
