"""Consumer strategies and clients of kafka-semantics."""
