"""Loading named profiles from a dict, a YAML file or the environment.

A profile file looks like::

    defaults:                      # merged into every profile
      bootstrap_servers: 127.0.0.1:9092
    profiles:
      orders:
        guarantee: exactly_once
        group_id: orders-service   # shared keys go to each side that has such a field
        transactional_id_prefix: orders-
        producer: {linger_ms: 10}  # side-specific keys
        consumer: {batch_size: 100}
        processing: {commit_interval_ms: 100}
      jobs:
        guarantee: at_least_once
        group_id: jobs-workers
        queue: {record_lock_duration_ms: 60000}   # a share group (sdk.queue)
      metrics: at_most_once        # shorthand: just the guarantee
      payments:
        guarantee: at_least_once
        schema_registry: {url: "http://registry:8081", auto_register: false}

Environment: ``KSEM_PROFILE_FILE`` names a file; ``KSEM_BOOTSTRAP_SERVERS`` overrides
``defaults.bootstrap_servers``; ``KSEM_PROFILES__ORDERS__GUARANTEE=exactly_once`` (any nested key,
``__`` between levels) adds or overrides profile entries.

``schema_registry`` (in a profile or in ``defaults``) holds the fields of
:class:`~sdk.schemas.SchemaRegistryConfig`: validated at load, returned by
:meth:`ProfileSet.schema_registry`, and ignored by the side builders (a registry configures
the (de)serializers, not a client).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic_settings import BaseSettings, SettingsConfigDict

from sdk.errors import ConfigurationError
from sdk.profiles._base import ProfileModel, did_you_mean, unknown_keys
from sdk.profiles._common import Guarantee, parse_guarantee
from sdk.profiles._consumer import ConsumerProfile
from sdk.profiles._processing import ProcessingProfile
from sdk.profiles._producer import ProducerProfile
from sdk.profiles._queue import QueueProfile
from sdk.schemas import REGISTRY_URL_ENV, SchemaRegistryConfig

__all__ = ["ProfileSet", "load_profiles"]

_M = TypeVar("_M", bound=ProfileModel)

_SIDES = ("producer", "consumer", "processing", "queue")

_REGISTRY = "schema_registry"
"""The section of a profile (or of ``defaults``) that configures its schema registry."""


class _EnvProfiles(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="KSEM_", env_nested_delimiter="__", extra="ignore", case_sensitive=False
    )
    profile_file: str | None = None
    bootstrap_servers: str | None = None
    profiles: dict[str, Any] = {}


def _side(
    model: type[ProducerProfile | ConsumerProfile | QueueProfile], raw: Mapping[str, object]
) -> dict[str, object]:
    shared = {
        k: v
        for k, v in raw.items()
        if k in model.model_fields and k not in _SIDES and k != "extras"
    }
    return shared


class ProfileSet:
    """Named profiles, each turned into producer/consumer/processing profiles on demand."""

    def __init__(
        self, profiles: Mapping[str, object], defaults: Mapping[str, object] | None = None
    ):
        self._defaults = dict(defaults or {})
        self._raw: dict[str, dict[str, Any]] = {}
        self._registries: dict[str, SchemaRegistryConfig | None] = {}
        for name, entry in profiles.items():
            if isinstance(entry, str | Guarantee):
                entry = {"guarantee": entry}
            if not isinstance(entry, Mapping):
                raise ConfigurationError(
                    f"profiles.{name}: expected a guarantee name or a mapping, got "
                    f"{type(entry).__name__}",
                    field=f"profiles.{name}",
                )
            self._raw[str(name)] = {**self._defaults, **entry}
        for name in self._raw:  # fail at load time, not on first use
            self._registries[name] = self._registry(name, self._entry(name))

    @property
    def names(self) -> list[str]:
        """The profile names, sorted."""
        return sorted(self._raw)

    def _entry(self, name: str) -> dict[str, Any]:
        if name not in self._raw:
            raise ConfigurationError(
                f"profile {name!r} is not defined; defined: {', '.join(self.names) or 'none'}",
                field="profiles",
            )
        raw = self._raw[name]
        self._check_keys(name, raw)
        if "guarantee" not in raw:
            raise ConfigurationError(
                f"profiles.{name}.guarantee: every profile needs a guarantee",
                field=f"profiles.{name}.guarantee",
            )
        try:
            raw["guarantee"] = parse_guarantee(raw["guarantee"])
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"profiles.{name}.{exc}", field=f"profiles.{name}.guarantee"
            ) from None
        return raw

    @staticmethod
    def _check_keys(name: str, raw: dict[str, Any]) -> None:
        """Every key known, at any depth (a side's settings, ``failure``, ``security``).

        Raises:
            ConfigurationError: The unknown keys with their full paths, each with the
                closest known key.
        """
        models: dict[str, type[ProfileModel]] = {
            "producer": ProducerProfile,
            "consumer": ConsumerProfile,
            "processing": ProcessingProfile,
            "queue": QueueProfile,
        }
        known = {key for model in models.values() for key in model.model_fields} | set(_SIDES)
        known.add(_REGISTRY)
        problems = []
        for key, value in raw.items():
            if key == _REGISTRY:
                if isinstance(value, Mapping):
                    problems += unknown_keys(SchemaRegistryConfig, value, f"{key}.")
                elif value is not None:
                    raise ConfigurationError(
                        f"profiles.{name}.{key}: expected a mapping of SchemaRegistryConfig "
                        f"fields, got {type(value).__name__}",
                        field=f"profiles.{name}.{key}",
                    )
            elif key not in known:
                problems.append(f"{key}: unknown key{did_you_mean(key, sorted(known))}")
            elif key in _SIDES:
                if value is None:
                    raw[key] = {}
                elif not isinstance(value, Mapping):
                    raise ConfigurationError(
                        f"profiles.{name}.{key}: expected a mapping of settings, got "
                        f"{type(value).__name__}",
                        field=f"profiles.{name}.{key}",
                    )
                else:
                    problems += unknown_keys(models[key], value, f"{key}.")
            elif isinstance(value, Mapping):
                owner = next(m for m in models.values() if key in m.model_fields)
                problems += unknown_keys(owner, {key: value})
        if problems:
            raise ConfigurationError(
                "; ".join(f"profiles.{name}.{problem}" for problem in problems),
                field=f"profiles.{name}.{problems[0].split(':', 1)[0]}",
            )

    @staticmethod
    def _registry(name: str, raw: Mapping[str, Any]) -> SchemaRegistryConfig | None:
        """The ``schema_registry`` section of a checked entry, built (None if it has none).

        An empty section (``schema_registry:``) is a registry with every default, its url from
        ``$KSEM_SCHEMA_REGISTRY_URL``.

        Raises:
            ConfigurationError: A value is invalid, or the fields contradict each other; the
                message and ``field`` name ``profiles.<name>.schema_registry.<field>``.
        """
        if _REGISTRY not in raw:
            return None
        section = raw[_REGISTRY] or {}
        path = f"profiles.{name}.{_REGISTRY}"
        try:
            return SchemaRegistryConfig.from_mapping(dict(section))
        except ConfigurationError as exc:
            # the config names the field as "schema registry <field>: <why>"; a contradiction
            # between fields has no single field and names the section
            where = f"{path}.{exc.field}" if exc.field else path
            why = str(exc).split(": ", 1)[-1].removeprefix("Value error, ")
            if exc.field == "url" and "required" in why:
                why = f"not given, and ${REGISTRY_URL_ENV} is not set"
            raise ConfigurationError(f"{where}: {why}", field=where) from None

    def schema_registry(self, name: str) -> SchemaRegistryConfig | None:
        """The schema registry of profile ``name`` (its ``schema_registry`` section).

        Example::

            registry = profiles.schema_registry("orders")
            if registry is not None:
                serializer = avro_serializer(registry, ORDER_SCHEMA)

        Returns:
            The config, validated when the file was loaded; None when neither the profile nor
            ``defaults`` has the section.

        Raises:
            ConfigurationError: ``name`` is not defined.
        """
        self._entry(name)
        return self._registries[name]

    def producer(self, name: str, **overrides: object) -> ProducerProfile:
        """Build the producer profile of ``name`` (keyword overrides win).

        Raises:
            ConfigurationError: Unknown name or invalid settings (the field is named).
        """
        raw = self._entry(name)
        data = {**_side(ProducerProfile, raw), **raw.get("producer", {}), **overrides}
        return self._build(ProducerProfile, data, name, "producer")

    def consumer(self, name: str, **overrides: object) -> ConsumerProfile:
        """Build the consumer profile of ``name`` (keyword overrides win).

        Raises:
            ConfigurationError: Unknown name or invalid settings (the field is named).
        """
        raw = self._entry(name)
        data = {**_side(ConsumerProfile, raw), **raw.get("consumer", {}), **overrides}
        return self._build(ConsumerProfile, data, name, "consumer")

    def queue(self, name: str, **overrides: object) -> QueueProfile:
        """Build the queue (share group) profile of ``name`` (keyword overrides win).

        Raises:
            ConfigurationError: Unknown name, invalid settings, or an exactly_once profile
                (a share group cannot be exactly-once; the message says why).
        """
        raw = self._entry(name)
        data = {**_side(QueueProfile, raw), **raw.get("queue", {}), **overrides}
        return self._build(QueueProfile, data, name, "queue")

    def processing(self, name: str, **overrides: object) -> ProcessingProfile:
        """Build the processing profile of ``name``.

        Raises:
            ConfigurationError: Unknown name or invalid settings (the field is named).
        """
        raw = self._entry(name)
        data = {
            "guarantee": raw["guarantee"],
            "producer": self.producer(name),
            "consumer": self.consumer(name),
            **raw.get("processing", {}),
            **overrides,
        }
        return self._build(ProcessingProfile, data, name, "processing")

    def guarantee(self, name: str) -> Guarantee:
        """Return the guarantee of profile ``name``."""
        return Guarantee(self._entry(name)["guarantee"])

    @staticmethod
    def _build(model: type[_M], data: dict[str, object], name: str, side: str) -> _M:
        try:
            return model(**data)
        except ConfigurationError as exc:
            raise ConfigurationError(f"profile {name!r} ({side}): {exc}", field=exc.field) from None


def load_profiles(source: str | Path | Mapping[str, object] | None = None) -> ProfileSet:
    """Load named profiles from a mapping, a YAML file, or (``None``) the environment.

    Args:
        source: A mapping with ``profiles`` (and optional ``defaults``), a YAML file path, or
            None to read ``KSEM_*`` environment variables (see the module docstring).

    Returns:
        The :class:`ProfileSet`.

    Raises:
        ConfigurationError: The file is missing or malformed, or a profile is invalid.
    """
    if source is None:
        env = _EnvProfiles()
        data: dict[str, object] = _read_yaml(Path(env.profile_file)) if env.profile_file else {}
        defaults = _mapping(data.get("defaults") or {}, "defaults")
        if env.bootstrap_servers:
            defaults["bootstrap_servers"] = env.bootstrap_servers
        profiles = _mapping(data.get("profiles") or {}, "profiles")
        for name, entry in env.profiles.items():
            base = profiles.get(name, {})
            base = {"guarantee": base} if isinstance(base, str) else dict(base)
            profiles[name] = {
                **base,
                **(entry if isinstance(entry, dict) else {"guarantee": entry}),
            }
        return ProfileSet(profiles, defaults)
    data = _read_yaml(Path(source)) if isinstance(source, str | Path) else _mapping(source, "")
    unknown = set(data) - {"defaults", "profiles"}
    if unknown:
        raise ConfigurationError(
            f"unknown top-level key(s) {sorted(unknown)}; expected 'defaults' and 'profiles'",
            field=sorted(unknown)[0],
        )
    return ProfileSet(
        _mapping(data.get("profiles") or {}, "profiles"),
        _mapping(data.get("defaults") or {}, "defaults"),
    )


def _mapping(value: object, field: str) -> dict[str, Any]:  # YAML entries
    """``value`` as a dict with str keys, or a ConfigurationError naming ``field``."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        what = field or "the profile document"
        raise ConfigurationError(
            f"{what}: expected a mapping of names, got {type(value).__name__}",
            field=field or "profiles",
        )
    return dict(value)


def _read_yaml(path: Path) -> dict[str, object]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigurationError(f"cannot read profile file {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"profile file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"profile file {path} must hold a mapping with 'profiles', got {type(data).__name__}"
        )
    return data
