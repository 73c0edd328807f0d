"""The admin client's seam (sdk._admin): one config builder, one factory, one Protocol."""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka.admin import AdminClient

import sdk._admin
from sdk._admin import AdminApi, admin_client, admin_config, client_config, connection_keys


def test_connection_keys_are_tls_and_sasl_only() -> None:
    config = {
        "bootstrap.servers": "b:9092",
        "client.id": "c",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/ca",
        "enable.ssl.certificate.verification": False,
        "sasl.mechanism": "PLAIN",
        "linger.ms": 5,
        "acks": "all",
    }
    assert connection_keys(config) == {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/ca",
        "enable.ssl.certificate.verification": False,
        "sasl.mechanism": "PLAIN",
    }


def test_admin_config_keeps_the_connection_and_the_security_wins() -> None:
    extras = {"ssl.ca.location": "/extra-ca", "linger.ms": 5, "security.protocol": "SSL"}
    security = {"security.protocol": "SASL_SSL", "sasl.username": "u"}
    assert admin_config("b:9092", security, extras) == {
        "bootstrap.servers": "b:9092",
        "ssl.ca.location": "/extra-ca",
        "security.protocol": "SASL_SSL",
        "sasl.username": "u",
    }
    with_id = admin_config("b:9092", {}, {}, client_id="doctor")
    assert with_id == {"bootstrap.servers": "b:9092", "client.id": "doctor"}


def test_the_factory_makes_an_admin_client_that_satisfies_the_protocol() -> None:
    client = admin_client({"bootstrap.servers": "localhost:1"}, logger=logging.getLogger("t"))
    assert isinstance(client, AdminClient) and isinstance(client, AdminApi)


def test_the_factory_adds_the_callbacks_and_the_configs_own_logger_wins() -> None:
    quiet, own = logging.getLogger("test.admin"), logging.getLogger("test.admin.own")
    errors: list[Any] = []
    base = {"bootstrap.servers": "b:9092"}
    assert client_config(base, logger=quiet, error_cb=errors.append) == {
        **base,
        "logger": quiet,
        "error_cb": errors.append,
    }
    assert client_config({**base, "logger": own}, logger=quiet)["logger"] is own
    assert client_config(base) == base


def test_a_string_or_a_mapping_is_no_admin_client() -> None:
    assert not isinstance("localhost:9092", AdminApi)
    assert not isinstance({"bootstrap.servers": "localhost:9092"}, AdminApi)


def test_no_other_module_builds_an_admin_client() -> None:
    """``AdminClient(`` appears once in sdk (outside sdk.testing) and spark_integration."""
    from pathlib import Path

    root = Path(sdk._admin.__file__).resolve().parents[1]
    sites = [
        f"{path.relative_to(root)}:{n}"
        for package in ("sdk", "spark_integration")
        for path in sorted((root / package).rglob("*.py"))
        if "testing" not in path.relative_to(root).parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "AdminClient(" in line or "or AdminClient)" in line
    ]
    assert [site.split(":")[0] for site in sites] == ["sdk/_admin.py"], sites
