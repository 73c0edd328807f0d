"""``python -m sdk profile explain``: settings, reasons, unsafe defaults, secrets masked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import load_profiles
from sdk.profiles._explain import explain

ROOT = Path(__file__).resolve().parents[3]

YAML = """
defaults:
  bootstrap_servers: broker-1:9092
profiles:
  orders:
    guarantee: exactly_once
    group_id: orders-svc
    transactional_id_prefix: orders-
    security:
      protocol: SASL_SSL
      sasl_mechanism: SCRAM-SHA-512
      sasl_username: svc
      sasl_password: hunter2-secret
  metrics:
    guarantee: at_most_once
    group_id: metrics
    producer:
      extras:
        linger.ms: 50
"""


def test_guarantee_lists_critical_settings_with_reasons() -> None:
    text = explain("at_least_once")
    assert "acks" in text and "= all" in text
    assert "[guarantee]" in text
    assert "why: the broker de-duplicates retries" in text
    assert "enable.auto.offset.store  = false" in text
    assert "producer partitioner (librdkafka default consistent_random): overridden" in text


def test_at_most_once_warns_about_idempotence_off() -> None:
    text = explain("at_most_once")
    assert "enable.idempotence (librdkafka default false): WARNING, in effect -> false" in text


def test_named_profile_masks_secrets_and_marks_extras(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(YAML)
    profiles = load_profiles(path)
    orders = explain("orders", profiles)
    assert "hunter2" not in orders
    assert "sasl.password" in orders and "********" in orders
    assert "transactional.id" in orders and "orders-<instance>" in orders
    metrics = explain("metrics", profiles)
    assert "linger.ms" in metrics and "[extras]" in metrics


def test_unknown_target_names_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(YAML)
    with pytest.raises(ConfigurationError, match="metrics, orders") as info:
        explain("nope", load_profiles(path))
    assert info.value.field == "profile"


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(YAML)
    ok = subprocess.run(
        [sys.executable, "-m", "sdk", "profile", "explain", "orders", "--file", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert "profile 'orders': guarantee exactly_once" in ok.stdout
    assert "hunter2" not in ok.stdout + ok.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "sdk", "profile", "explain", "exactly_twice"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: 'exactly_twice' is neither a profile name")
    assert "Traceback" not in bad.stderr


def test_profile_reference_page_is_current() -> None:
    from sdk.profiles._reference import reference_markdown

    page = (ROOT / "docs" / "profiles.md").read_text()
    assert page == reference_markdown(), (
        "docs/profiles.md is stale: run `python -m sdk profile reference > docs/profiles.md`"
    )
    assert "| `guarantee` |" in page and "**required**" in page


def test_processing_settings_are_explained_with_their_cost() -> None:
    text = explain("exactly_once")
    section = text.split("processing (sdk.Processor):", 1)[1].split("\n\n", 1)[0]
    assert "commit_interval_ms             = 100" in section
    assert "max_records_per_transaction    = 100000" in section
    assert "consumer max_poll_interval_ms  = 60000" in section
    assert section.count("why:") == 3
    alo = explain("at_least_once").split("processing (sdk.Processor):", 1)[1]
    assert "consumer max_poll_interval_ms  = 300000" in alo
