#!/usr/bin/env bash
# The newcomer's entry point. Both commands set up .venv on first use (Python deps from PyPI,
# Apache Kafka broker jars from Maven Central into ~/.cache/kafka-semantics), then:
#   ./dev.sh demo   - run the main demo against an embedded local Kafka broker
#   ./dev.sh test   - run the whole test suite against real local brokers
# Targets beyond the two set-up commands:
#   ./dev.sh setup               - the set-up of `test` without running it (.ci/run)
#   ./dev.sh reliability [args]  - fault pipeline / soak target (python -m tests.reliability.run)
#   ./dev.sh compat [versions]   - the compatibility suite on each broker of the matrix (default:
#                                  all of them), its table into docs/compatibility.md
#   ./dev.sh bench [args]        - benchmarks against peers (python -m benchmarks.run)
# Needs (README.md, "Set-up"): python3 >= 3.11, java 17 or newer (the brokers and Spark), mvn
# (first run: broker jars; the tests: Spark's Kafka connector jars). `test`, `setup` and
# `reliability` also need go >= 1.22, once, to build toxiproxy-server (the network-fault proxy)
# into the cache, unless one is on PATH or in $KSEM_TOXIPROXY; `demo` and `bench` never do.
# `test` and `setup` fetch the schema registry (Apicurio) with mvn; its tests need java >= 21.
set -euo pipefail
cd "$(dirname "$0")"
PY=.venv/bin/python
# reinstalled when the package definition changes
stamp=.venv/.installed-$(sha1sum < pyproject.toml | cut -c1-12)

setup() {
  if [ ! -x "$PY" ]; then
    echo "dev.sh: creating .venv" >&2
    python3 -m venv .venv
  fi
  if [ ! -f "$stamp" ]; then
    echo "dev.sh: installing kafka-semantics[dev,spark] into .venv (first run, or its definition changed)" >&2
    "$PY" -m pip install -q --upgrade pip
    "$PY" -m pip install -q -e '.[dev,spark]'
    rm -f .venv/.installed-*
    touch "$stamp"
  fi
  "$PY" -m sdk.testing.cluster fetch >/dev/null
}

# the schema registry (Apicurio, from Maven Central), for the schema tests only: the demo
# never needs it; it runs on Java 21 or later (found by sdk.testing.registry)
schema_registry() {
  "$PY" -m sdk.testing.registry fetch >/dev/null
}

# toxiproxy-server, for the network-fault tests only: located, or built once with Go
network_proxy() {
  if ! "$PY" -m sdk.testing.toxiproxy install >/dev/null; then
    echo "dev.sh: '${1}' needs toxiproxy-server for the network-fault tests; see above for how" \
      "to get it (README.md, Set-up: Go >= 1.22 for ./dev.sh test). './dev.sh demo' does not" \
      "need it." >&2
    exit 2
  fi
}

case "${1:-}" in
  demo) shift; setup; exec "$PY" examples/guarantees_demo.py "$@" ;;
  test) shift; setup; network_proxy test; schema_registry; exec "$PY" -m pytest "$@" ;;
  reliability) shift; setup; network_proxy reliability; exec "$PY" -m tests.reliability.run "$@" ;;
  bench) shift; setup; exec "$PY" -m benchmarks.run "$@" ;;
  compat) shift; setup; exec "$PY" -m tests.compat.run "$@" ;;
  setup) setup; network_proxy setup; schema_registry ;;
  *) echo "usage: ./dev.sh demo|test|reliability|bench|compat [args...]" >&2; exit 2 ;;
esac
