"""Assignors strategies and clients of kafka-semantics."""
