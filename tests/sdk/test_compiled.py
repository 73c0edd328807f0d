"""``sdk._compiled.extension``: the one rule that picks a compiled core or its Python twin."""

from __future__ import annotations

import pytest

from sdk._compiled import extension
from sdk.core import records


def test_a_module_that_was_not_built_is_none() -> None:
    assert extension("sdk.core._no_such_extension") is None


def test_sdk_pure_python_picks_the_twins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDK_PURE_PYTHON", "1")
    assert extension("sdk.core._speedups") is None


@pytest.mark.skipif(not records.COMPILED, reason="the record core was not built here")
def test_a_built_extension_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SDK_PURE_PYTHON", raising=False)
    module = extension("sdk.core._speedups")
    assert module is not None and module.view is records.view
