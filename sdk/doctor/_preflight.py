"""Refusing, at start, a feature the broker lacks: one ApiVersions request before the client.

A queue on a broker without share groups, or ``group_protocol="consumer"`` on one without the
consumer group protocol, otherwise shows up as whatever librdkafka does first (a raw error at
the first poll, or heartbeats refused forever). The front ends call :func:`require_broker` before
they create their client; it asks one bootstrap broker for its API versions and finalized
features (:mod:`sdk.doctor._wire`, the doctor's own request) and raises a
:class:`~sdk.errors.ConfigurationError` naming the feature, what the broker has and what it
needs. A broker that does not answer is left to the client (its own errors say unreachable).

Transactions are judged after the fact instead: every broker since Kafka 2.5 serves them, so
no API version tells a broker that refuses them; what does is a transaction coordinator that
never answers (a ``__transaction_state`` that cannot be created: a replication factor above
the brokers there are). :func:`refuse_transactions` runs when the first ``init_transactions``
timed out, asks the doctor why, and refuses by name, instead of retrying a call that cannot
succeed (five attempts of the call timeout, then an "ambiguous" timeout that names nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sdk.doctor._cluster import METADATA_VERSIONS, SHARE_GROUPS_USABLE_SINCE
from sdk.doctor._wire import (
    CONSUMER_GROUP_HEARTBEAT,
    SHARE_GROUP_HEARTBEAT,
    BrokerVersions,
    read_versions,
    tls_context,
)
from sdk.errors import ConfigurationError, KafkaClientError
from sdk.profiles import ProducerProfile, SecurityProfile

__all__ = ["BrokerFeature", "refuse_transactions", "release_of", "require_broker"]


@dataclass(frozen=True)
class BrokerFeature:
    """A broker feature a front end needs, and how to tell whether a broker has it.

    Attributes:
        name: What the user asked for, as the error names it.
        needs: The broker it needs, in words.
        api_key: The request only a broker with the feature serves.
        feature: The finalized feature level that turns it on (``share.version``).
        since_level: The lowest ``metadata.version`` level on which it works.
    """

    name: str
    needs: str
    api_key: int
    feature: str | None = None
    since_level: int = 0

    def missing(self, versions: BrokerVersions) -> str | None:
        """What the broker lacks, in words (None when it has the feature)."""
        if versions.legacy:
            return "no ApiVersions v3 (older than Kafka 2.4)"
        if self.api_key not in versions.apis:
            return f"the broker does not serve API key {self.api_key}"
        if self.feature is not None and versions.finalized.get(self.feature, 0) < 1:
            return f"{self.feature} is {versions.finalized.get(self.feature, 0)}"
        if versions.finalized.get("metadata.version", 0) < self.since_level:
            return "its share groups are a preview the share consumer gets no records from"
        return None


SHARE_GROUPS = BrokerFeature(
    "a queue (sdk.queue: share groups, KIP-932)",
    "Apache Kafka 4.2 or later (share groups on by default)",
    SHARE_GROUP_HEARTBEAT,
    "share.version",
    SHARE_GROUPS_USABLE_SINCE,  # 4.1 with share.version=1: joins, no records (measured)
)
CONSUMER_PROTOCOL = BrokerFeature(
    'group_protocol="consumer" (KIP-848)',
    "Apache Kafka 4.0 or later (or group_protocol: classic)",
    CONSUMER_GROUP_HEARTBEAT,
    "group.version",  # 3.9 serves the heartbeat (early access) with group.version 0
)


def release_of(finalized: Mapping[str, int]) -> str:
    """The Kafka release line a cluster's ``metadata.version`` level says, in words."""
    level = finalized.get("metadata.version", 0)
    name = METADATA_VERSIONS.get(level)
    if name is None:
        newest = max(METADATA_VERSIONS)
        side = "newer than" if level > newest else "older than"
        bound = METADATA_VERSIONS[newest if level > newest else min(METADATA_VERSIONS)]
        return f"Kafka {side} {bound.split('-')[0]} (metadata.version {level})"
    return f"Kafka {name.split('-')[0]} (metadata.version {name}, level {level})"


def require_broker(
    feature: BrokerFeature,
    bootstrap_servers: str,
    security: SecurityProfile,
    extras: Mapping[str, object],
    *,
    timeout_s: float = 5.0,
) -> None:
    """Raise if the first bootstrap broker that answers lacks ``feature``.

    Raises:
        ConfigurationError: The broker lacks it; the message names the feature, the broker
            found and the broker needed.
    """
    for address in bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            continue
        try:
            tls = tls_context(security, extras)
            versions = read_versions(host.strip("[]"), int(port), tls=tls, timeout_s=timeout_s)
        except (OSError, ValueError):
            continue  # not answering: the client's own connection errors will say so
        lacking = feature.missing(versions)
        if lacking is None:
            return
        raise ConfigurationError(
            f"{feature.name} needs {feature.needs}; the broker at {address.strip()} is "
            f"{release_of(versions.finalized)}: {lacking}. `python -m sdk doctor` reports "
            "the same as a FAIL with the fix (docs/compatibility.md)."
        )


def refuse_transactions(profile: ProducerProfile, cause: KafkaClientError) -> None:
    """Raise if the doctor finds why ``init_transactions`` got no answer; else return.

    Called once, after the first ``init_transactions`` failed with a transient error. A
    cluster the doctor cannot read, or one it finds nothing wrong with, returns: the caller
    goes on retrying as before (a coordinator still loading, a slow broker).

    Args:
        profile: The exactly_once producer profile (its connection settings and principal).
        cause: The error of that first call.

    Raises:
        ConfigurationError: A transaction check of the doctor failed; the message names it,
            what the cluster has, why no transaction can start and the fix.
    """
    from sdk.doctor._checks import check  # the admin client only when a start went wrong

    try:
        report = check(profile, timeout_s=5.0)
    except Exception:  # a diagnosis that fails must not hide the first error
        return
    failed = [c for c in report.failures if c.name.startswith("transaction")]
    if not failed:
        return
    details = "; ".join(f"{c.name}: {c.found}: {c.why} (fix: {c.fix})" for c in failed)
    raise ConfigurationError(
        "transactions (exactly_once) cannot start on this cluster: init_transactions() got "
        f"no answer ({cause}), and `python -m sdk doctor` finds why: {details} "
        "(docs/compatibility.md)"
    )
