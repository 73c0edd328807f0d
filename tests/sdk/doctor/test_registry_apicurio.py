"""The doctor's registry checks against a real Apicurio registry and a real broker.

The unit tests (test_registry.py) answer the Confluent API from a small local server; here the
command line reads a YAML profile with a ``schema_registry`` section and asks Apicurio's
Confluent-compatible API: a subject the producers registered passes with its version and the
compatibility level the test set, a missing output subject with ``auto_register: false`` fails,
and a stopped registry is one FAIL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sdk.doctor import main as doctor
from sdk.schemas import SchemaRegistryConfig
from sdk.schemas._config import registry_client
from sdk.testing.registry import SchemaRegistryServer
from tests.sdk.schemas.test_registry_consumer import V1, _produce

pytestmark = [pytest.mark.broker, pytest.mark.registry]


def _profiles(path: Path, bs: str, url: str, group: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "profiles": {
                    "billing": {
                        "guarantee": "exactly_once",
                        "bootstrap_servers": bs,
                        "group_id": group,
                        "transactional_id_prefix": f"{group}-",
                        "schema_registry": {"url": url, "auto_register": False},
                    }
                }
            }
        )
    )
    return path


def _report(capsys: Any, argv: list[str]) -> tuple[int, dict[str, dict[str, str]]]:
    status = doctor(argv)
    out = json.loads(capsys.readouterr().out)
    return status, {c["name"]: c for c in out["checks"]}


def test_the_doctor_reads_subjects_and_levels_from_apicurio(
    kafka_cluster: Any,
    make_topic: Any,
    make_group: Any,
    schema_registry: str,
    schema_registry_server: SchemaRegistryServer,
    tmp_path: Path,
    capsys: Any,
) -> None:
    bs, orders, invoices, group = (
        kafka_cluster.bootstrap_servers,
        make_topic(1),
        make_topic(1),
        make_group(),
    )
    config = SchemaRegistryConfig(url=schema_registry)
    _produce(bs, orders, config, V1, range(3))  # registers <orders>-value
    registry_client(config).set_compatibility(f"{orders}-value", "BACKWARD")
    profiles = _profiles(tmp_path / "profiles.yaml", bs, schema_registry, group)
    argv = ["billing", "--file", str(profiles), "--topic", orders]
    argv += ["--output-topic", invoices, "--json"]
    status, checks = _report(capsys, argv)
    assert checks["schema registry"]["status"] == "PASS"
    read = checks[f"topic {orders}: schema subject {orders}-value"]
    assert read["status"] == "PASS", read
    assert read["found"].startswith("version 1 (schema id ")
    assert "compatibility BACKWARD (subject-level)" in read["found"]
    assert "upgrade consumers first" in read["found"]
    written = checks[f"topic {invoices}: schema subject {invoices}-value"]
    assert (written["status"], written["found"]) == (
        "FAIL",
        "does not exist, and auto_register is off",
    )
    assert status == 1  # a FAIL
    schema_registry_server.stop()
    try:
        status, checks = _report(capsys, argv)
    finally:
        schema_registry_server.start()
    assert checks["schema registry"]["status"] == "FAIL"
    assert not any(name.endswith(f"{orders}-value") for name in checks)  # subjects skipped
    assert status == 1
