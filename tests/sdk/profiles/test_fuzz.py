"""Fuzzing the profile loader: any input is a profile set or a ConfigurationError, nothing else.

Hypothesis feeds ``load_profiles`` random YAML text (files) and random nested mappings that look
roughly like profile files, builds every side of every loaded profile, and checks that the only
exception is ``sdk.errors.ConfigurationError`` and that a secret value put in the input never
appears in its message (nor in the repr of a profile that loaded).

Found by this fuzzer and fixed in ``sdk/profiles`` (these tests guard the fixes):

* ``profiles``/``defaults``/``producer``/``consumer``/``processing`` that are not mappings
  escaped as ``AttributeError``/``TypeError``; now ``ConfigurationError`` naming the field.
* An unknown guarantee was echoed with ``repr`` (a mis-indented ``security`` block put the
  password in the message); it is no longer shown, only its length and a close match.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sdk.errors import ConfigurationError
from sdk.profiles import load_profiles

SECRET = "S3cr3t-fuzz-value-9f1c"

FIELDS = [
    "guarantee",
    "bootstrap_servers",
    "group_id",
    "transactional_id",
    "transactional_id_prefix",
    "acks",
    "retries",
    "linger_ms",
    "batch_size",
    "commit_interval_ms",
    "transaction_timeout_ms",
    "security",
    "extras",
    "producer",
    "consumer",
    "processing",
    "failure",
    "partitioner",
    "bogus",
]
GUARANTEES = ["exactly_once", "at-least-once", "AT_MOST_ONCE", "twice", "", "exactly once"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(GUARANTEES),
    st.text(max_size=12),
)
security = st.fixed_dictionaries(
    {},
    optional={
        "protocol": st.sampled_from(["SASL_SSL", "PLAINTEXT", "bogus", 7]),
        "sasl_mechanism": st.sampled_from(["SCRAM-SHA-512", "nope", None]),
        "sasl_username": scalars,
        "sasl_password": st.just(SECRET),
        "ssl_key_password": st.just(SECRET),
    },
)
values = st.recursive(
    st.one_of(scalars, security),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4),
    ),
    max_leaves=12,
)
entry = st.one_of(
    st.sampled_from(GUARANTEES),
    scalars,
    st.dictionaries(st.sampled_from(FIELDS), values, max_size=6),
    st.fixed_dictionaries(
        {"guarantee": st.sampled_from(GUARANTEES), "security": security},
        optional={k: values for k in FIELDS[1:] if k != "security"},
    ),
)
documents = st.one_of(
    values,
    st.fixed_dictionaries(
        {"profiles": st.one_of(values, st.dictionaries(st.text(max_size=6), entry, max_size=3))},
        optional={"defaults": st.one_of(values, st.dictionaries(st.sampled_from(FIELDS), values))},
    ),
)


def _exercise(source: Any) -> None:
    try:
        profiles = load_profiles(source)
        for name in profiles.names:
            for build in (profiles.producer, profiles.consumer, profiles.processing):
                assert SECRET not in repr(build(name))
    except ConfigurationError as exc:
        assert SECRET not in str(exc), str(exc)
        assert SECRET not in repr(exc.__cause__) if exc.__cause__ else True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example({"profiles": [None]})
@example({"profiles": {}, "defaults": True})
@given(documents.filter(lambda d: isinstance(d, dict)))
def test_any_mapping_loads_or_raises_configuration_error(document: Any) -> None:
    _exercise(document)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example("profiles: 5\n")
@given(st.one_of(st.text(max_size=200), documents.map(lambda d: __import__("yaml").dump(d))))
def test_any_yaml_file_loads_or_raises_configuration_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "profiles.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _exercise(path)


@pytest.mark.parametrize(
    "document",
    [
        {"profiles": {"x": {"guarantee": {"sasl_password": SECRET}}}},
        {"profiles": {"sasl_password": SECRET}},  # a security block one level too high
    ],
)
def test_rejected_guarantee_never_shows_a_secret(document: dict[str, Any]) -> None:
    _exercise(document)


def test_wrong_types_are_configuration_errors() -> None:
    bad = {"profiles": {"x": {"guarantee": "at_least_once", "linger_ms": "soon"}}}
    try:
        load_profiles(bad).producer("x")
    except ConfigurationError as exc:
        assert "linger_ms" in str(exc)
    else:
        raise AssertionError("linger_ms='soon' was accepted")
