"""Peer benchmarks of kafka-semantics (scripts, not tests): ``python -m benchmarks.run``."""
