"""``sdk._deprecation.RenamedAttribute``: an attribute read under its old name warns."""

from __future__ import annotations

import subprocess
import sys
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


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("sdk.core.records", "sdk.records", "ConsumerRecord"),
        ("sdk.core.lifecycle", "sdk.lifecycle", "Lifecycle"),
        ("sdk.core.failure", "sdk.failure", "HandlerRunner"),
        ("sdk.core.recovery", "sdk.recovery", "decide"),
    ],
)
def test_a_moved_module_still_imports_from_its_old_place_and_warns(
    old: str, new: str, name: str
) -> None:
    """In a fresh interpreter: an import already cached here would not warn again."""
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        f"assert getattr(old, {name!r}) is getattr(new, {name!r})\n"
        "print([str(x.message) for x in w if x.category is DeprecationWarning])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"{old} is deprecated, import from {new}" in done.stdout
