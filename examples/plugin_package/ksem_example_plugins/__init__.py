"""Example kafka-semantics plugins (a partitioner and an assignor)."""
