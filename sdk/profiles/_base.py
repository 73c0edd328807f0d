"""The base of every profile model: frozen, strict about unknown keys, SDK errors only."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from sdk.errors import ConfigurationError

__all__ = ["ProfileModel", "configuration_error"]


def configuration_error(exc: ValidationError, prefix: str = "") -> ConfigurationError:
    """Turn a pydantic ``ValidationError`` into a :class:`ConfigurationError` naming each field.

    Input values are left out of the message on purpose: they may be secrets.
    """
    problems = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"])
        problems.append(f"{prefix}{loc}: {error['msg']}")
    first = exc.errors()[0]["loc"] if exc.errors() else ()
    field = prefix + ".".join(str(part) for part in first) if first else None
    return ConfigurationError("; ".join(problems), field=field)


class ProfileModel(BaseModel):
    """Frozen pydantic model whose validation failures are :class:`ConfigurationError`."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise configuration_error(exc) from None

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate ``obj`` (a mapping), raising :class:`ConfigurationError` on failure."""
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            raise configuration_error(exc) from None
