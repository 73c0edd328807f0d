"""The base of every profile model: frozen, strict about unknown keys, SDK errors only."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from sdk.errors import ConfigurationError

__all__ = [
    "BOOTSTRAP_ENV",
    "ProfileModel",
    "configuration_error",
    "did_you_mean",
    "unknown_keys",
]

BOOTSTRAP_ENV = "KSEM_BOOTSTRAP_SERVERS"
"""The environment variable a profile without ``bootstrap_servers`` takes it from."""

_NO_BOOTSTRAP = (
    f"not given, and {BOOTSTRAP_ENV} is not set; give bootstrap_servers='host:port', or export "
    f"{BOOTSTRAP_ENV}=host:port (python -m sdk.testing.cluster up prints the line for a local "
    "broker)"
)

# how deep profile constructors are nested: only the outermost turns pydantic's errors into a
# ConfigurationError, so that a nested model's error keeps its path (failure.attempts)
_depth: ContextVar[int] = ContextVar("sdk_profile_depth", default=0)


def _model_at(model: type[BaseModel], path: Sequence[str | int]) -> type[BaseModel] | None:
    """The profile model at ``path`` below ``model`` (``("failure",)``), or None."""
    for part in path:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def did_you_mean(key: str, known: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known key, or ``""``."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any], path: str = "") -> list[str]:
    """Every key of ``data`` (nested mappings too) that ``model`` does not know.

    Each as a message ``"path.key: unknown key (did you mean ...?)"``.
    """
    problems = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            hint = did_you_mean(key, list(model.model_fields))
            problems.append(f"{path}{key}: unknown key{hint}")
            continue
        sub = _model_at(model, [key])
        if sub is not None and isinstance(value, Mapping):
            problems += unknown_keys(sub, value, f"{path}{key}.")
    return problems


def configuration_error(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> ConfigurationError:
    """Turn a pydantic ``ValidationError`` into a :class:`ConfigurationError` naming each field.

    An unknown key comes first, with the closest known key (``did you mean``); a required
    field reported missing because it was misspelt is left out. Input values are left out of
    the message on purpose: they may be secrets.
    """
    errors = exc.errors()
    unknown: list[tuple[tuple[Any, ...], str]] = []
    misspelt: set[tuple[Any, ...]] = set()
    for error in errors:
        if error["type"] != "extra_forbidden" or model is None:
            continue
        loc = tuple(error["loc"])
        parent = _model_at(model, loc[:-1])
        known = list(parent.model_fields) if parent is not None else []
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if close:
            misspelt.add((*loc[:-1], close[0]))
        unknown.append((loc, f"unknown key{hint}"))
    problems = [(loc, msg) for loc, msg in unknown]
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "extra_forbidden" and model is not None:
            continue
        if error["type"] == "missing" and loc in misspelt:
            continue
        message = error["msg"]
        if error["type"] == "missing" and loc and loc[-1] == "bootstrap_servers":
            message = _NO_BOOTSTRAP
        problems.append((loc, message))
    text = "; ".join(f"{prefix}{'.'.join(str(p) for p in loc)}: {msg}" for loc, msg in problems)
    first = problems[0][0] if problems else ()
    field = prefix + ".".join(str(part) for part in first) if first else None
    return ConfigurationError(text, field=field)


class ProfileModel(BaseModel):
    """Frozen pydantic model whose validation failures are :class:`ConfigurationError`."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    def __init__(self, **data: Any) -> None:
        token = _depth.set(_depth.get() + 1)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            if _depth.get() > 1:  # nested: pydantic adds this model's place to the path
                raise
            raise configuration_error(exc, model=type(self)) from None
        finally:
            _depth.reset(token)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate ``obj`` (a mapping), raising :class:`ConfigurationError` on failure."""
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            raise configuration_error(exc, model=cls) from None

    @model_validator(mode="before")
    @classmethod
    def _bootstrap_from_environment(cls, data: Any) -> Any:
        """A required ``bootstrap_servers`` left out comes from ``KSEM_BOOTSTRAP_SERVERS``."""
        field = cls.model_fields.get("bootstrap_servers")
        if field is None or not field.is_required() or not isinstance(data, Mapping):
            return data
        servers = os.environ.get(BOOTSTRAP_ENV, "").strip()
        if data.get("bootstrap_servers") is None and servers:
            data = {**data, "bootstrap_servers": servers}
        return data
