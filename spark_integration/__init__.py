"""PySpark helpers for exactly-once Kafka read-process-write jobs (see issue #7)."""
