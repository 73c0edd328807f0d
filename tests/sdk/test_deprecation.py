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
    with pytest.warns(
        DeprecationWarning,
        match=r"_Result\.seconds is deprecated and removed in 0\.3: use duration_s",
    ):
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
    assert f"{old} is deprecated and removed in 0.3: import from {new}" in done.stdout


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("sdk.consumer", "ConsumerState", "sdk.lifecycle.Lifecycle"),
        ("sdk.producer", "ProducerState", "sdk.lifecycle.Lifecycle"),
        ("sdk.processor", "ProcessorState", "sdk.lifecycle.Lifecycle"),
        ("sdk.observability", "Outcome", "sdk.observability.TransactionOutcome"),
        ("sdk.observability", "Headers", "sdk.observability.HeadersLike"),
        ("sdk.queue", "Outcome", "sdk.queue.AckOutcome"),
        ("spark_integration", "transactional_id_for", "spark_integration.range_transactional_id"),
    ],
)
def test_a_renamed_name_is_the_new_one_and_warns_once_with_its_removal(
    module: str, old: str, new: str
) -> None:
    """Both spellings of the access, in a fresh interpreter: one warning each, at the user's
    line (not importlib's), naming the new spelling and the removal."""
    new_module, _, new_name = new.rpartition(".")
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    from {module} import {old} as by_from\n"
        f"    by_attr = getattr(importlib.import_module({module!r}), {old!r})\n"
        f"now = getattr(importlib.import_module({new_module!r}), {new_name!r})\n"
        "assert by_from is by_attr is now\n"
        f"assert {old!r} not in importlib.import_module({module!r}).__all__\n"
        "print([(str(x.message), x.filename) for x in w if x.category is DeprecationWarning])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    said = f"{module}.{old} is deprecated and removed in 0.3: use {new}"
    assert done.stdout.strip() == repr([(said, "<string>"), (said, "<string>")])


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import sdk.consumer

    with pytest.raises(AttributeError, match=r"sdk\.consumer.*NoSuchName"):
        sdk.consumer.NoSuchName  # noqa: B018


def test_every_deprecation_helper_names_the_removal() -> None:
    from sdk._deprecation import REMOVED_IN, moved, renamed, warn_renamed

    assert REMOVED_IN == "0.3"
    with pytest.warns(DeprecationWarning, match=r"^f\(old=\) is deprecated and removed in 0\.3"):
        warn_renamed("f", "old", "new")
    with pytest.warns(DeprecationWarning, match=r"is deprecated and removed in 0\.3$"):
        moved("handler", "X()", "run()")
    with pytest.warns(DeprecationWarning, match=r"removed in 0\.3: use new="):
        assert renamed("f", "old", 1, "new", None) == 1


def test_the_producer_s_old_timeouts_name_the_removal() -> None:
    from sdk.producer import Producer
    from sdk.profiles import ProducerProfile

    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers="127.0.0.1:1")
    with pytest.warns(DeprecationWarning, match=r"deprecated and removed in 0\.3: use queue_full"):
        Producer(profile, queue_full_timeout=5.0).close()


PENDING_DOCSTRINGS: dict[str, int] = {}
"""Deprecated spellings whose docstring does not say the removal yet, per file (none left)."""


def test_every_deprecated_spelling_s_docstring_names_the_removal() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    silent: dict[str, int] = {}
    for package in ("sdk", "spark_integration"):
        for path in sorted((root / package).rglob("*.py")):
            for line in path.read_text(encoding="utf-8").splitlines():
                said = line.strip()
                deprecates = said.split(":", 1)[-1].strip().startswith("Deprecated")
                if deprecates and "removed in 0.3" not in said:
                    name = path.relative_to(root).as_posix()
                    silent[name] = silent.get(name, 0) + 1
    assert silent == PENDING_DOCSTRINGS


@pytest.mark.parametrize(
    ("name", "private"),
    [
        ("session", "spark_integration._session"),
        ("slice_of", "spark_integration._slicing"),
        ("write_slice", "spark_integration._streaming"),
    ],
)
def test_spark_s_internals_are_no_longer_exported_and_warn_until_removed(
    name: str, private: str
) -> None:
    import importlib

    import spark_integration

    assert name not in spark_integration.__all__
    assert name not in vars(spark_integration)
    with pytest.warns(DeprecationWarning, match=rf"spark_integration\.{name} .*removed in 0\.3"):
        old = getattr(spark_integration, name)
    assert old is getattr(importlib.import_module(private), name)


DEPRECATING_PACKAGES = [
    "sdk.assignors",
    "sdk.consumer",
    "sdk.observability",
    "sdk.partitioners",
    "sdk.processor",
    "sdk.producer",
    "sdk.profiles",
    "sdk.queue",
    "sdk.sink",
    "spark_integration",
]


def _deprecated_names() -> list[tuple[str, str]]:
    import importlib

    return [
        (package, name)
        for package in DEPRECATING_PACKAGES
        for name in sorted(importlib.import_module(package)._DEPRECATED)
    ]


@pytest.mark.parametrize(("package", "name"), _deprecated_names())
def test_every_deprecated_name_is_out_of_the_surface_and_warns_with_the_removal(
    package: str, name: str
) -> None:
    import importlib

    module = importlib.import_module(package)
    assert name not in module.__all__
    assert name not in vars(module)  # only through __getattr__, so every use warns
    advice, obj = module._DEPRECATED[name]
    with pytest.warns(
        DeprecationWarning, match=rf"^{package}\.{name} is deprecated and removed in 0\.3: "
    ):
        assert getattr(module, name) is obj
    assert advice.strip()
