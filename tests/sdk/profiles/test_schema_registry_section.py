"""The ``schema_registry`` section of a profile file: validated at load, ignored by the sides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import load_profiles
from sdk.schemas import SchemaRegistryConfig

BS = {"bootstrap_servers": "kafka-1:9092"}


def document(section: Any, **entry: Any) -> dict[str, Any]:
    return {
        "defaults": BS,
        "profiles": {
            "orders": {"guarantee": "at_least_once", "schema_registry": section, **entry},
            "plain": "at_least_once",
        },
    }


def test_a_valid_section_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "defaults: {bootstrap_servers: 'kafka-1:9092'}\n"
        "profiles:\n"
        "  orders:\n"
        "    guarantee: exactly_once\n"
        "    group_id: orders-service\n"
        "    transactional_id_prefix: orders-\n"
        "    schema_registry:\n"
        "      url: http://registry:8081\n"
        "      basic_auth: 'svc:s3cret'\n"
        "      auto_register: false\n"
        "      use_latest_version: true\n"
        "      registry_timeout_s: 30\n"
        "  plain: at_least_once\n"
    )
    profiles = load_profiles(path)
    registry = profiles.schema_registry("orders")
    assert isinstance(registry, SchemaRegistryConfig)
    assert (registry.url, registry.auto_register, registry.use_latest_version) == (
        "http://registry:8081",
        False,
        True,
    )
    assert registry.registry_timeout_s == 30
    assert registry.basic_auth is not None and registry.basic_auth.get_secret_value() == (
        "svc:s3cret"
    )
    assert profiles.schema_registry("plain") is None  # no section anywhere
    # the sides never see the key: a client is configured by its profile alone
    processing = profiles.processing("orders")
    assert processing.producer.transactional_id_prefix == "orders-"
    assert profiles.consumer("orders").group_id == "orders-service"
    assert profiles.producer("orders").guarantee.value == "exactly_once"


def test_a_queue_side_ignores_it_too() -> None:
    profiles = load_profiles(document({"url": "http://r:8081"}, group_id="jobs"))
    assert profiles.queue("orders").group_id == "jobs"


def test_defaults_are_inherited_and_a_profiles_own_section_replaces_them() -> None:
    profiles = load_profiles(
        {
            "defaults": {**BS, "schema_registry": {"url": "http://shared:8081"}},
            "profiles": {
                "plain": "at_least_once",
                "own": {
                    "guarantee": "at_least_once",
                    "schema_registry": {"url": "http://own:8081", "normalize": True},
                },
            },
        }
    )
    inherited = profiles.schema_registry("plain")
    assert inherited is not None and inherited.url == "http://shared:8081"
    own = profiles.schema_registry("own")
    assert own is not None and (own.url, own.normalize) == ("http://own:8081", True)


@pytest.mark.parametrize(
    ("section", "field", "says"),
    [
        ({"url": "http://r", "request_timeout_s": 0}, "request_timeout_s", "greater than 0"),
        ({"url": "http://r", "subject_name_strategy": "name"}, "subject_name_strategy", "'topic'"),
        ({"url": "http://r", "auto_register": "perhaps"}, "auto_register", "boolean"),
        ({"url": "http://r", "client_config": {"url": "x"}}, None, "set url and basic_auth"),
        ({"url": "http://r", "use_latest_version": True}, None, "needs auto_register=False"),
    ],
)
def test_a_bad_value_is_refused_at_load_naming_the_field(
    section: dict[str, Any], field: str | None, says: str
) -> None:
    with pytest.raises(ConfigurationError) as err:
        load_profiles(document(section))  # at load, not at .schema_registry()
    where = "profiles.orders.schema_registry" + (f".{field}" if field else "")
    assert str(err.value).startswith(f"{where}: ")
    assert says in str(err.value) and "Value error" not in str(err.value)
    assert err.value.field == where


def test_an_unknown_key_gets_a_did_you_mean() -> None:
    with pytest.raises(ConfigurationError) as err:
        load_profiles(document({"url": "http://r", "auto_registr": False}))
    assert str(err.value) == (
        "profiles.orders.schema_registry.auto_registr: unknown key (did you mean 'auto_register'?)"
    )
    assert err.value.field == "profiles.orders.schema_registry.auto_registr"


def test_a_section_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"profiles\.orders\.schema_registry: expected"):
        load_profiles(document("http://registry:8081"))


def test_the_url_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSEM_SCHEMA_REGISTRY_URL", raising=False)
    with pytest.raises(ConfigurationError) as err:
        load_profiles(document({"auto_register": False}))
    assert str(err.value) == (
        "profiles.orders.schema_registry.url: not given, and $KSEM_SCHEMA_REGISTRY_URL is not set"
    )
    monkeypatch.setenv("KSEM_SCHEMA_REGISTRY_URL", "http://from-env:8081")
    registry = load_profiles(document(None)).schema_registry("orders")  # `schema_registry:`
    assert registry is not None and registry.url == "http://from-env:8081"


def test_the_section_from_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSEM_PROFILE_FILE", raising=False)
    monkeypatch.setenv("KSEM_BOOTSTRAP_SERVERS", "kafka-1:9092")
    monkeypatch.setenv("KSEM_PROFILES__BILLING__GUARANTEE", "at_least_once")
    monkeypatch.setenv("KSEM_PROFILES__BILLING__SCHEMA_REGISTRY__URL", "http://r:8081")
    monkeypatch.setenv("KSEM_PROFILES__BILLING__SCHEMA_REGISTRY__AUTO_REGISTER", "false")
    registry = load_profiles().schema_registry("billing")
    assert registry is not None and (registry.url, registry.auto_register) == (
        "http://r:8081",
        False,
    )


def test_an_undefined_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="'nope' is not defined"):
        load_profiles(document({"url": "http://r"})).schema_registry("nope")


def test_profiles_load_without_the_schema_registry_extra() -> None:
    # a fresh interpreter where confluent-kafka's registry package (httpx, fastavro...) is absent
    code = (
        "import sys\n"
        "sys.modules['confluent_kafka.schema_registry'] = None\n"
        "from sdk.profiles import load_profiles\n"
        "p = load_profiles({'defaults': {'bootstrap_servers': 'k:9092'}, 'profiles': {'o': "
        "{'guarantee': 'at_least_once', 'schema_registry': {'url': 'http://r'}}}})\n"
        "assert p.schema_registry('o').url == 'http://r'\n"
        "assert 'confluent_kafka.schema_registry.avro' not in sys.modules\n"
        "print('loaded')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loaded"


def test_the_reference_pages_example_loads() -> None:
    import yaml

    page = (Path(__file__).resolve().parents[3] / "docs" / "profiles.md").read_text()
    example = yaml.safe_load(page.split("```yaml\n", 1)[1].split("```", 1)[0])
    registry = load_profiles(example).schema_registry("payments")
    assert registry is not None and registry.auto_register is False
