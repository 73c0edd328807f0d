"""Testing support: a real local Kafka cluster (Maven-resolved jars), backends and fixtures.

See :class:`sdk.testing.cluster.LocalCluster` and the pytest plugin in
:mod:`sdk.testing.pytest_plugin`. Unit tests without a broker use the fake clients of
:mod:`sdk.testing.fakes`.
"""
