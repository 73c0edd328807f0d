"""The report, the ApiVersions parser, verify() and the clients' opt-in, without a broker."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

import sdk.doctor
from sdk.__main__ import main as sdk_main
from sdk.consumer import Consumer
from sdk.doctor import Check, Report, Status
from sdk.doctor._wire import parse_response, tls_context
from sdk.errors import ConfigurationError, DoctorError, SdkError
from sdk.processor import Processor
from sdk.profiles import ConsumerProfile, ProcessingProfile, SecurityProfile
from sdk.testing.fakes import FakeConsumerClient, FakeProducerFactory


def report() -> Report:
    return Report(
        "profile 'orders' (producer, at_least_once)",
        "at_least_once",
        [
            Check("brokers reachable", Status.PASS, "3 brokers answered"),
            Check("topic t: replication", Status.WARN, "replication factor 1", "one disk", "fix"),
            Check(
                "topic t: unclean leader election",
                Status.FAIL,
                "unclean.leader.election.enable=true (set on the topic)",
                "truncated " * 20,
                "kafka-configs.sh --bootstrap-server h:1 --entity-type topics --entity-name t "
                "--alter --add-config unclean.leader.election.enable=false\nor another command",
            ),
        ],
        cluster_id="abc",
        duration_s=0.25,
    )


def test_report_verdicts_and_json() -> None:
    r = report()
    assert not r.ok
    assert [c.name for c in r.failures] == ["topic t: unclean leader election"]
    assert [c.name for c in r.warnings] == ["topic t: replication"]
    data = json.loads(json.dumps(r.to_dict()))
    assert data["ok"] is False and data["counts"] == {"PASS": 1, "WARN": 1, "FAIL": 1}
    assert data["checks"][2]["status"] == "FAIL" and data["cluster_id"] == "abc"


def test_the_table_keeps_each_fix_command_on_one_line() -> None:
    text = str(report())
    lines = text.splitlines()
    assert lines[0] == "doctor: profile 'orders' (producer, at_least_once) on cluster abc"
    assert any(line.startswith("FAIL  topic t: unclean leader election  ") for line in lines)
    assert (
        "      fix: kafka-configs.sh --bootstrap-server h:1 --entity-type topics --entity-name t "
        "--alter --add-config unclean.leader.election.enable=false"
    ) in lines
    assert "           or another command" in lines
    assert all(len(line) <= 100 for line in lines if "why:" in line or line.startswith(" " * 11))
    assert lines[-1] == "1 FAIL, 1 WARN, 1 PASS in 0.25s"
    assert "fix" not in text.split("brokers reachable")[1].split("\n")[0]  # PASS: no fix line


def api_versions_response(apis: list[tuple[int, int, int]], finalized: dict[str, int]) -> bytes:
    def uvarint(n: int) -> bytes:
        out = bytearray()
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        return bytes(out)

    body = struct.pack(">ih", 4711, 0) + uvarint(len(apis) + 1)
    for key, low, high in apis:
        body += struct.pack(">hhh", key, low, high) + b"\x00"
    body += struct.pack(">i", 0)
    features = uvarint(len(finalized) + 1)
    for name, level in finalized.items():
        features += uvarint(len(name) + 1) + name.encode() + struct.pack(">hh", level, level)
        features += b"\x00"
    return body + uvarint(1) + uvarint(2) + uvarint(len(features)) + features


def test_api_versions_parser_reads_apis_and_finalized_features() -> None:
    data = api_versions_response([(18, 0, 4), (76, 1, 1)], {"share.version": 1})
    parsed = parse_response(data)
    assert parsed.apis == {18: (0, 4), 76: (1, 1)}
    assert parsed.finalized == {"share.version": 1}
    assert parse_response(struct.pack(">ih", 4711, 35)).legacy  # a broker older than 2.4
    with pytest.raises(ValueError, match="another request"):
        parse_response(struct.pack(">ih", 1, 0))
    with pytest.raises(ValueError, match="malformed"):
        parse_response(data[:12])


def test_tls_only_for_ssl_listeners() -> None:
    assert tls_context(SecurityProfile(), {}) is None
    assert tls_context(SecurityProfile(protocol="SASL_PLAINTEXT"), {}) is None
    context = tls_context(
        SecurityProfile(protocol="SSL"), {"enable.ssl.certificate.verification": False}
    )
    assert context is not None and not context.check_hostname


def test_verify_raises_a_doctor_error_naming_the_failing_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sdk.doctor._checks, "check", lambda *a, **k: report())
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers="x:1", group_id="g")
    with pytest.raises(DoctorError) as info:
        sdk.doctor.verify(profile, ["t"])
    assert isinstance(info.value, SdkError)
    assert info.value.checks == ["topic t: unclean leader election"]
    assert info.value.report.failures[0].status is Status.FAIL
    assert "topic t: unclean leader election: unclean.leader.election.enable=true" in str(
        info.value
    )


def test_check_refuses_what_is_not_a_profile() -> None:
    with pytest.raises(ConfigurationError, match="expected a producer, consumer"):
        sdk.doctor.check({"guarantee": "at_least_once"}, ["t"])  # type: ignore[arg-type]
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers="x:1", group_id="g")
    with pytest.raises(ConfigurationError, match="output_topics"):
        sdk.doctor.check(profile, ["t"], output_topics=["o"])


# ---------------------------------------------------------------- the clients' opt-in
class Calls:
    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.seen: list[tuple[Any, list[str]]] = []

    def __call__(self, profile: Any, topics: Any, **kw: Any) -> None:
        self.seen.append((profile, list(topics)))
        if self.fail:
            raise DoctorError("topic t: exists: it does not exist", checks=["topic t: exists"])


def test_consumer_verifies_at_first_run_not_in_init(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(fail=True)
    monkeypatch.setattr(sdk.doctor, "verify", calls)
    made: list[Any] = []
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers="x:1", group_id="g")

    def factory(config: dict[str, Any]) -> FakeConsumerClient:
        made.append(config)
        return FakeConsumerClient([], assign_on_subscribe=[("t", 0)])

    consumer = Consumer(profile, ["t"], client_factory=factory, verify_cluster=True)
    assert calls.seen == []  # no network in __init__
    with pytest.raises(DoctorError, match="topic t: exists"):
        consumer.run(lambda r: None, idle_timeout_s=0.1, handle_sigterm=False)
    assert calls.seen == [(profile, ["t"])] and made == []  # refused before any client
    calls.fail = False
    consumer.run(lambda r: None, idle_timeout_s=0.1, handle_sigterm=False)
    consumer.run(lambda r: None, idle_timeout_s=0.1, handle_sigterm=False)
    assert len(calls.seen) == 2 and len(made) == 1  # verified once it passed
    consumer.close()


def test_consumer_does_not_verify_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(fail=True)
    monkeypatch.setattr(sdk.doctor, "verify", calls)
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers="x:1", group_id="g")
    client = FakeConsumerClient([], assign_on_subscribe=[("t", 0)])
    with Consumer(profile, ["t"], client_factory=lambda c: client) as consumer:
        consumer.run(lambda r: None, idle_timeout_s=0.1, handle_sigterm=False)
    assert calls.seen == []


def test_processor_verifies_before_its_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(fail=True)
    monkeypatch.setattr(sdk.doctor, "verify", calls)
    made: list[Any] = []
    profile = ProcessingProfile(
        guarantee="at_least_once",
        bootstrap_servers="x:1",
        consumer={"group_id": "g"},
        producer={},
    )
    processor = Processor(
        profile,
        ["in"],
        consumer_factory=lambda c: made.append(c) or FakeConsumerClient([]),
        producer_factory=FakeProducerFactory(),
        verify_cluster=True,
    )
    with pytest.raises(DoctorError):
        processor.run(lambda r: [], max_duration_s=0.1, handle_sigterm=False)
    assert calls.seen == [(profile, ["in"])] and made == []


# ---------------------------------------------------------------- the command line's routing
def test_restart_commands_go_to_the_restart_module(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    seen: list[list[str]] = []
    fake = types.ModuleType("sdk.doctor._restart")
    fake.main = lambda argv: seen.append(argv) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sdk.doctor._restart", fake)
    assert sdk_main(["doctor", "restart-check", "--broker", "2"]) == 0
    assert sdk_main(["doctor", "preferred-leaders"]) == 0
    assert seen == [["restart-check", "--broker", "2"], ["preferred-leaders"]]


def test_restart_commands_without_their_module_are_not_available(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sdk.doctor._restart", None)  # import fails by name
    assert sdk_main(["doctor", "restart-check", "--broker", "2"]) == 2
    assert "not available" in capsys.readouterr().err


def test_doctor_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert sdk_main(["doctor"]) == 2
    assert sdk_main(["doctor", "--help"]) == 0
    assert "--topic" in capsys.readouterr().out


def test_an_unknown_profile_exits_2(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text("profiles:\n  orders: at_least_once\n")
    assert sdk_main(["doctor", "nope", "--file", str(path)]) == 2
    assert "'nope' is not defined" in capsys.readouterr().err
    assert sdk_main(["doctor", "nope", "--file", str(path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["ok"] is False
