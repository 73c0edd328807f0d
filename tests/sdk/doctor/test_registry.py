"""The doctor's schema-registry checks against a local HTTP server speaking the Confluent API.

The unit tier: no registry process, no broker. The server answers the paths the checks read
(``/subjects``, ``/subjects/{s}/versions/latest``, ``/config``, ``/config/{s}``) from what a
test put in it, through confluent-kafka's real client; an unreachable registry is a closed local
port. ``check()`` and the command line run against a closed broker port too: the brokers' one
FAIL, then the registry's checks, which do not depend on the brokers.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from sdk.__main__ import main as sdk_main
from sdk.doctor import Status, check
from sdk.doctor._registry import registry_checks, shown_url
from sdk.doctor._report import Check
from sdk.doctor._subject import Subject, subject_of
from sdk.profiles import ConsumerProfile, ProcessingProfile, ProducerProfile
from sdk.schemas import SchemaRegistryConfig

ORDER = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}'


@dataclass
class Registry:
    """What the fake registry holds, and every request it was sent."""

    versions: dict[str, list[int]] = field(default_factory=dict)  # subject -> schema ids
    levels: dict[str, str] = field(default_factory=dict)  # subject-level compatibility
    global_level: str = "BACKWARD"
    status: int | None = None  # answer every request with this error status
    config_status: int | None = None  # answer /config requests with this error status
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    def add(self, subject: str, *ids: int) -> None:
        self.versions[subject] = list(ids)


def _handler(registry: Registry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
            registry.requests.append(("GET", "/".join(path)))
            if registry.status is not None:
                self._send(registry.status, {"error_code": registry.status, "message": "refused"})
            elif path == ["subjects"]:
                self._send(200, sorted(registry.versions))
            elif len(path) == 4 and path[0] == "subjects" and path[2:] == ["versions", "latest"]:
                ids = registry.versions.get(path[1])
                if not ids:
                    self._send(404, {"error_code": 40401, "message": "Subject not found"})
                    return
                self._send(
                    200,
                    {
                        "subject": path[1],
                        "version": len(ids),
                        "id": ids[-1],
                        "schema": ORDER,
                        "schemaType": "AVRO",
                    },
                )
            elif path[0] == "config" and registry.config_status is not None:
                self._send(registry.config_status, {"error_code": 50001, "message": "store"})
            elif path == ["config"]:
                self._send(200, {"compatibilityLevel": registry.global_level})
            elif len(path) == 2 and path[0] == "config":
                level = registry.levels.get(path[1])
                if level is None:  # Confluent's answer for a subject without its own level
                    self._send(404, {"error_code": 40408, "message": "no subject-level config"})
                else:
                    self._send(200, {"compatibilityLevel": level})
            else:
                self._send(404, {"error_code": 404, "message": f"no route {self.path}"})

    return Handler


@pytest.fixture
def registry() -> Iterator[Registry]:
    state = Registry()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join(5)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


BS = "kafka-1:9092"


def producer(*topics: str) -> Subject:
    return subject_of(ProducerProfile(guarantee="at_least_once", bootstrap_servers=BS), topics)


def consumer(*topics: str, **extra: Any) -> Subject:
    profile = ConsumerProfile(
        guarantee="at_least_once", bootstrap_servers=BS, group_id="g", **extra
    )
    return subject_of(profile, topics)


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def run(s: Subject, url: str, **config: Any) -> dict[str, Check]:
    checks = registry_checks(s, SchemaRegistryConfig(url=url, **config), timeout_s=2)
    named = by_name(checks)
    assert len(named) == len(checks)  # no name twice
    return named


# ---------------------------------------------------------------- reachable, or not
def test_a_registry_that_answers_passes_with_its_url(registry: Registry) -> None:
    registry.add("other-value", 1)
    checks = run(producer(), registry.url)
    assert list(checks) == ["schema registry"]  # no topic, no subject
    reachable = checks["schema registry"]
    assert reachable.status is Status.PASS
    assert reachable.found == f"{registry.url} answered: 1 subject(s)"


def test_an_unreachable_registry_is_one_fail_and_skips_the_subjects() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    checks = run(producer("orders"), url, registry_timeout_s=30)
    assert list(checks) == ["schema registry"]
    failed = checks["schema registry"]
    assert failed.status is Status.FAIL
    assert failed.found.startswith(f"{url} did not answer GET /subjects: ConnectError")
    assert "registry_timeout_s (30 s)" in failed.why
    assert "send() raises SchemaRegistryUnavailableError" in failed.why
    assert failed.fix.endswith(f"curl {url}/subjects")


def test_a_refused_login_fails_naming_the_status(registry: Registry) -> None:
    registry.status = 401
    checks = run(producer("orders"), registry.url, basic_auth="app:secret")
    failed = checks["schema registry"]
    assert failed.status is Status.FAIL and list(checks) == ["schema registry"]
    assert "HTTP status code 401" in failed.found
    assert "secret" not in failed.found + failed.fix  # the password is never printed
    assert f"curl -u '<user>:<password>' {registry.url}/subjects" in failed.fix


def test_without_the_extra_one_fail_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka.schema_registry", None)
    checks = run(producer("orders"), "http://127.0.0.1:1")
    failed = checks["schema registry"]
    assert list(checks) == ["schema registry"] and failed.status is Status.FAIL
    assert "extra is not installed" in failed.found
    assert failed.fix == "pip install 'kafka-semantics[schema-registry]'"


def test_credentials_in_the_url_are_not_shown() -> None:
    assert shown_url("https://app:pw@reg-1:8081,http://reg-2:8081/x") == (
        "https://***@reg-1:8081,http://reg-2:8081/x"
    )


# ---------------------------------------------------------------- a subject that exists
@pytest.mark.parametrize(
    ("level", "where", "says"),
    [
        ("BACKWARD", "global", "upgrade consumers first: a new schema may delete fields"),
        ("BACKWARD_TRANSITIVE", "subject-level", "checked against every version"),
        ("FORWARD", "subject-level", "upgrade producers first: a new schema may add fields"),
        ("FORWARD_TRANSITIVE", "subject-level", "upgrade producers first"),
        ("FULL", "subject-level", "either order: a new schema may only add or delete optional"),
        ("FULL_TRANSITIVE", "global", "either order"),
    ],
)
def test_an_existing_subject_names_version_id_and_the_rollout_order(
    registry: Registry, level: str, where: str, says: str
) -> None:
    registry.add("orders-value", 3, 7)
    if where == "global":
        registry.global_level = level
    else:
        registry.levels["orders-value"] = level
    subject = run(consumer("orders"), registry.url)["topic orders: schema subject orders-value"]
    assert subject.status is Status.PASS
    assert subject.found.startswith(
        f"version 2 (schema id 7, AVRO); compatibility {level} ({where}): "
    )
    assert says in subject.found


def test_compatibility_none_warns_with_the_command_that_sets_one(registry: Registry) -> None:
    registry.add("orders-value", 5)
    registry.levels["orders-value"] = "NONE"
    subject = run(producer("orders"), registry.url)["topic orders: schema subject orders-value"]
    assert subject.status is Status.WARN
    assert subject.found == "version 1 (schema id 5, AVRO); compatibility NONE (subject-level)"
    assert "accepts any schema" in subject.why and "cannot read" in subject.why
    assert subject.fix.startswith("curl -X PUT ")
    assert subject.fix.endswith(f"{registry.url}/config/orders-value")


def test_an_unknown_or_unreadable_level_warns(registry: Registry) -> None:
    registry.add("orders-value", 5)
    registry.global_level = "SOMETIMES"
    subject = run(producer("orders"), registry.url)["topic orders: schema subject orders-value"]
    assert subject.status is Status.WARN and "not a level the doctor knows" in subject.found
    registry.config_status = 500
    subject = run(producer("orders"), registry.url)["topic orders: schema subject orders-value"]
    assert subject.status is Status.WARN
    assert "compatibility unreadable: SchemaRegistryError" in subject.found
    assert "HTTP status code 500" in subject.found
    assert subject.fix.endswith("/config/orders-value?defaultToGlobal=true")


def test_a_key_subject_is_checked_only_when_it_exists(registry: Registry) -> None:
    registry.add("orders-value", 1)
    registry.add("orders-key", 2)
    registry.add("totals-value", 3)
    checks = run(producer("orders", "totals"), registry.url)
    assert list(checks) == [
        "schema registry",
        "topic orders: schema subject orders-value",
        "topic orders: schema subject orders-key",
        "topic totals: schema subject totals-value",
    ]
    assert checks["topic orders: schema subject orders-key"].found.startswith(
        "version 1 (schema id 2, AVRO)"
    )


def test_the_checks_only_read(registry: Registry) -> None:
    registry.add("orders-value", 1)
    run(producer("orders", "missing"), registry.url)
    assert {method for method, _ in registry.requests} == {"GET"}
    assert ("GET", "config/orders-value") in registry.requests
    assert ("GET", "config") in registry.requests  # no subject-level one: the global


# ---------------------------------------------------------------- a subject that does not exist
def test_a_missing_output_subject_depends_on_auto_register(registry: Registry) -> None:
    registered = run(producer("orders"), registry.url)["topic orders: schema subject orders-value"]
    assert registered.status is Status.PASS
    assert "registered by the first send()" in registered.found
    refused = run(producer("orders"), registry.url, auto_register=False)[
        "topic orders: schema subject orders-value"
    ]
    assert refused.status is Status.FAIL
    assert refused.found == "does not exist, and auto_register is off"
    assert "every send() to orders fails with SerializationError" in refused.why
    assert f"{registry.url}/subjects/orders-value/versions" in refused.fix
    assert refused.fix.startswith("register the schema before the producers start")


def test_a_missing_input_subject_warns(registry: Registry) -> None:
    for auto in (True, False):
        checks = run(consumer("orders"), registry.url, auto_register=auto)
        subject = checks["topic orders: schema subject orders-value"]
        assert subject.status is Status.WARN and subject.found == "does not exist"
        assert "another subject_name_strategy" in subject.why


def test_processing_inputs_and_outputs_and_no_dead_letter_topic(registry: Registry) -> None:
    profile = ProcessingProfile(
        guarantee="at_least_once",
        bootstrap_servers=BS,
        consumer={
            "group_id": "g",
            "failure": {"on_failure": "dlq", "dlq_topic": "orders-dlq"},
        },
        producer={},
    )
    s = subject_of(profile, ["orders"], ["totals"])
    checks = run(s, registry.url, auto_register=False)
    assert list(checks) == [
        "schema registry",
        "topic orders: schema subject orders-value",
        "topic totals: schema subject totals-value",
    ]  # the dead-letter topic carries raw bytes: no subject
    assert checks["topic orders: schema subject orders-value"].status is Status.WARN  # input
    assert checks["topic totals: schema subject totals-value"].status is Status.FAIL  # output


@pytest.mark.parametrize("strategy", ["record", "topic_record"])
def test_record_strategies_cannot_be_derived_from_topics(registry: Registry, strategy: str) -> None:
    registry.add("orders-value", 1)
    checks = run(consumer("orders", "refunds"), registry.url, subject_name_strategy=strategy)
    assert list(checks) == ["schema registry", "schema subjects"]
    warned = checks["schema subjects"]
    assert warned.status is Status.WARN
    assert warned.found.startswith(f"subject_name_strategy {strategy}: ")
    assert warned.found.endswith("topics orders, refunds")
    assert "cannot be derived from topic names alone" in warned.why


# ---------------------------------------------------------------- check() and the command line
def test_check_appends_the_registry_whatever_the_brokers_answer(registry: Registry) -> None:
    registry.add("orders-value", 4)
    profile = ProducerProfile(
        guarantee="at_least_once", bootstrap_servers=f"127.0.0.1:{closed_port()}"
    )
    config = SchemaRegistryConfig(url=registry.url)
    report = check(profile, ["orders"], timeout_s=1, schema_registry=config)
    statuses = [(c.name, c.status) for c in report.checks]
    assert statuses == [
        ("brokers reachable", Status.FAIL),
        ("schema registry", Status.PASS),
        ("topic orders: schema subject orders-value", Status.PASS),
    ]


def test_the_command_line_checks_the_profiles_registry(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "defaults:\n"
        f"  bootstrap_servers: 127.0.0.1:{closed_port()}\n"
        "profiles:\n"
        "  plain: at_least_once\n"
        "  payments:\n"
        "    guarantee: at_least_once\n"
        f"    schema_registry: {{url: '{registry.url}', auto_register: false}}\n"
    )
    args = ["doctor", "--file", str(path), "--topic", "payments", "--timeout-s", "1", "--json"]
    assert sdk_main([*args[:1], "payments", *args[1:]]) == 1
    names = {c["name"]: c["status"] for c in json.loads(capsys.readouterr().out)["checks"]}
    assert names["schema registry"] == "PASS"
    assert names["topic payments: schema subject payments-value"] == "FAIL"  # auto_register off
    assert sdk_main([*args[:1], "plain", *args[1:]]) == 1  # the brokers' FAIL
    names = {c["name"]: c["status"] for c in json.loads(capsys.readouterr().out)["checks"]}
    assert "schema registry" not in names  # no section: no registry checked


def test_verify_refuses_a_registry_fail(registry: Registry) -> None:
    from sdk.doctor import verify
    from sdk.errors import DoctorError

    profile = ProducerProfile(
        guarantee="at_least_once", bootstrap_servers=f"127.0.0.1:{closed_port()}"
    )
    config = SchemaRegistryConfig(url=registry.url, auto_register=False)
    with pytest.raises(DoctorError) as info:
        verify(profile, ["orders"], timeout_s=1, schema_registry=config)
    assert info.value.checks == ["brokers reachable", "topic orders: schema subject orders-value"]


def test_a_listed_subject_whose_latest_version_is_unreadable_warns(registry: Registry) -> None:
    registry.add("orders-value")  # listed, but its latest version answers 404
    subject = run(producer("orders"), registry.url)["topic orders: schema subject orders-value"]
    assert subject.status is Status.WARN
    assert subject.found.startswith("listed, but its latest version could not be read: ")
    assert "HTTP status code 404" in subject.found
    assert subject.fix == f"curl {registry.url}/subjects/orders-value/versions/latest"
