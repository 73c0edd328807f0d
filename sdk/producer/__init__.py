"""Producer strategies and clients of kafka-semantics."""
