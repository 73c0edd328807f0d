"""Partitioners strategies and clients of kafka-semantics."""
