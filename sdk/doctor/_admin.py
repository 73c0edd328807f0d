"""Reading the cluster as a profile's principal sees it: the admin API, translated.

A :class:`ClusterReader` connects with the profile's bootstrap servers and security settings
only (its principal is the one whose permissions the doctor judges) and reads each fact at
most once. A fact that cannot be read comes back as :class:`Unreadable` with the reason, never
as an exception: a check then says what it could not read and why, instead of passing.
confluent-kafka's exceptions are translated through :mod:`sdk._client`.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from confluent_kafka import KafkaError, TopicCollection

# the names live in private modules: confluent_kafka.admin re-exports them without __all__
from confluent_kafka.admin._acl import AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._config import ConfigResource, ConfigSource
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

from sdk._client import admin_client, call_kafka, timeout_error, translating
from sdk._config import ConfigMapping
from sdk.doctor._facts import (
    AclEntry,
    BrokerNode,
    ClusterFacts,
    ConfigValue,
    GroupFacts,
    PartitionFacts,
    TopicFacts,
    Unreadable,
)
from sdk.doctor._wire import BrokerVersions, read_versions, tls_context
from sdk.errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerUnreachableError,
    ConfigurationError,
    KafkaTimeoutError,
    SdkError,
    UnknownTopicError,
    from_kafka_error,
)
from sdk.profiles import SecurityProfile

__all__ = ["ClusterReader"]

_log = logging.getLogger("sdk.doctor")
T = TypeVar("T")


def _names(operations: Iterable[AclOperation] | None) -> frozenset[str] | None:
    """Authorized operations as names; None when the broker did not report any.

    confluent-kafka turns an empty list into None, so for the cluster resource None can also
    mean "no operation allowed": callers say so rather than guess.
    """
    if not operations:
        return None
    return frozenset(op.name for op in operations)


class ClusterReader:
    """Reads and caches the facts the checks judge; every failure becomes :class:`Unreadable`.

    Args:
        config: The ``AdminClient`` config (:func:`sdk._admin.admin_config`).
        security: The profile's security settings (for the raw ApiVersions connection).
        extras: The profile's extra librdkafka keys (TLS verification switches).
        timeout_s: Seconds each request may take.

    Raises:
        ConfigurationError: librdkafka refused the connection settings.
    """

    _client_errors: list[KafkaError]

    def __init__(
        self,
        config: ConfigMapping,
        security: SecurityProfile,
        extras: ConfigMapping,
        *,
        timeout_s: float,
    ) -> None:
        self._client_errors = []
        try:
            self._admin = admin_client(
                config,
                logger=_log,  # librdkafka's connection noise: silent by default
                # a refused login only shows here: the admin call itself just times out
                error_cb=self._client_errors.append,
            )
        except Exception as exc:  # KafkaException for a bad librdkafka key or value
            raise ConfigurationError(
                f"librdkafka refused the connection settings of the profile: {exc}"
            ) from None
        self._security = security
        self._extras = dict(extras)
        self.timeout_s = timeout_s
        self._cache: dict[tuple[str, str], Any] = {}

    # ------------------------------------------------------------------ helpers
    def _wait(self, future: concurrent.futures.Future[Any], context: str) -> Any:
        try:
            with translating(context):
                return future.result(timeout=self.timeout_s + 5)
        except concurrent.futures.TimeoutError:
            raise from_kafka_error(
                timeout_error(f"no answer within {self.timeout_s:g}s"), context=context
            ) from None

    def _cached(self, kind: str, key: str, read: Callable[[], T], denied: str) -> T | Unreadable:
        if (kind, key) not in self._cache:
            self._cache[kind, key] = self._attempt(read, denied)
        result: T | Unreadable = self._cache[kind, key]
        return result

    @staticmethod
    def _attempt(read: Callable[[], T], denied: str) -> T | Unreadable:
        try:
            return read()
        except AuthorizationError as exc:
            return Unreadable(f"not authorized: needs {denied}", exc)
        except UnknownTopicError as exc:
            return Unreadable("it does not exist", exc)
        except KafkaTimeoutError as exc:
            return Unreadable(f"no answer in time ({exc})", exc)
        except (BrokerUnreachableError, AuthenticationError) as exc:
            return Unreadable(str(exc), exc)
        except SdkError as exc:
            return Unreadable(str(exc), exc)

    # ------------------------------------------------------------------ the cluster
    def cluster(self) -> ClusterFacts | Unreadable:
        """``describe_cluster`` with the principal's authorized operations on the cluster."""

        def read() -> ClusterFacts:
            result = self._wait(
                self._admin.describe_cluster(
                    include_authorized_operations=True, request_timeout=self.timeout_s
                ),
                "describe_cluster",
            )
            nodes = tuple(
                sorted(
                    (BrokerNode(int(n.id), str(n.host), int(n.port), n.rack) for n in result.nodes),
                    key=lambda n: n.node_id,
                )
            )
            controller = result.controller.id if result.controller is not None else None
            return ClusterFacts(
                str(result.cluster_id or ""),
                controller,
                nodes,
                _names(result.authorized_operations),
            )

        facts = self._cached("cluster", "", read, "DESCRIBE on the cluster")
        if isinstance(facts, Unreadable) and facts.error is not None:
            self._admin.poll(0)  # serves error_cb
            cause = self._client_cause()
            if cause is not None:
                facts = Unreadable(str(cause), cause)
                self._cache["cluster", ""] = facts
        return facts

    def _client_cause(self) -> SdkError | None:
        """The most telling error librdkafka reported on its own (a refused login first)."""
        translated = [from_kafka_error(err, context="connecting") for err in self._client_errors]
        for kind in (AuthenticationError, BrokerUnreachableError):
            for err in translated:
                if isinstance(err, kind):
                    return err
        return None

    def broker_configs(self) -> dict[str, ConfigValue] | Unreadable:
        """The configs of one broker (the lowest node id; they are set alike on every broker)."""
        cluster = self.cluster()
        if isinstance(cluster, Unreadable):
            return cluster
        if not cluster.nodes:
            return Unreadable("the cluster metadata lists no broker")
        node = str(cluster.nodes[0].node_id)
        return self._cached(
            "broker-configs",
            node,
            lambda: self._configs(ResourceType.BROKER, node),
            "DESCRIBE_CONFIGS on the cluster",
        )

    def versions(self) -> dict[int, BrokerVersions | Unreadable]:
        """Every broker's ApiVersions answer (feature levels, APIs), by node id."""
        cluster = self.cluster()
        if isinstance(cluster, Unreadable):
            return {}
        out: dict[int, BrokerVersions | Unreadable] = {}
        for node in cluster.nodes:
            key = ("versions", str(node.node_id))
            if key not in self._cache:
                self._cache[key] = self._versions(node)
            out[node.node_id] = self._cache[key]
        return out

    def _versions(self, node: BrokerNode) -> BrokerVersions | Unreadable:
        try:
            tls = tls_context(self._security, self._extras)
            return read_versions(node.host, node.port, tls=tls, timeout_s=min(self.timeout_s, 10.0))
        except (OSError, ValueError) as exc:
            return Unreadable(f"{node.host}:{node.port} did not answer ApiVersions ({exc})")

    # ------------------------------------------------------------------ topics
    def topics(self, names: Sequence[str]) -> dict[str, TopicFacts | Unreadable]:
        """``describe_topics`` (authorized operations included) of ``names``, one request."""
        todo = [n for n in dict.fromkeys(names) if ("topic", n) not in self._cache]
        if todo:
            try:
                with translating("describe_topics"):
                    futures = self._admin.describe_topics(
                        TopicCollection(todo),
                        include_authorized_operations=True,
                        request_timeout=self.timeout_s,
                    )
            except SdkError as exc:
                futures = {}
                for n in todo:
                    self._cache["topic", n] = Unreadable(str(exc), exc)
            for name, future in futures.items():
                self._cache["topic", name] = self._attempt(
                    lambda f=future, n=name: self._topic(f, n),  # type: ignore[misc]
                    f"DESCRIBE on topic {name} (or it does not exist)",
                )
        return {n: self._cache["topic", n] for n in names}

    def _topic(self, future: concurrent.futures.Future[Any], name: str) -> TopicFacts:
        result = self._wait(future, f"describe_topics {name}")
        partitions = tuple(
            PartitionFacts(
                int(p.id),
                int(p.leader.id) if p.leader is not None and p.leader.id >= 0 else None,
                tuple(int(r.id) for r in p.replicas),
                tuple(int(r.id) for r in p.isr),
            )
            for p in sorted(result.partitions, key=lambda p: p.id)
        )
        return TopicFacts(name, partitions, _names(result.authorized_operations))

    def topic_configs(self, name: str) -> dict[str, ConfigValue] | Unreadable:
        """The effective configs of topic ``name`` (its own and the broker defaults)."""
        return self._cached(
            "topic-configs",
            name,
            lambda: self._configs(ResourceType.TOPIC, name),
            f"DESCRIBE_CONFIGS on topic {name}",
        )

    def _configs(self, kind: ResourceType, name: str) -> dict[str, ConfigValue]:
        resource = ConfigResource(kind, name)
        context = f"describe_configs {kind.name.lower()} {name}"
        with translating(context):
            futures = self._admin.describe_configs([resource], request_timeout=self.timeout_s)
        entries = self._wait(futures[resource], context)
        return {k: ConfigValue(e.value, _source(e.source)) for k, e in entries.items()}

    # ------------------------------------------------------------------ groups
    def group(self, group_id: str) -> GroupFacts | Unreadable:
        """``describe_consumer_groups`` of ``group_id`` (a group that never existed is DEAD).

        Retried while the coordinator is loading or moving (a fresh cluster answers
        COORDINATOR_LOAD_IN_PROGRESS while it creates ``__consumer_offsets``).
        """

        def read() -> GroupFacts:
            def once() -> Any:
                futures = self._admin.describe_consumer_groups(
                    [group_id], include_authorized_operations=True, request_timeout=self.timeout_s
                )
                return futures[group_id].result(timeout=self.timeout_s + 5)

            result = call_kafka(once, context=f"describe_consumer_groups {group_id}")
            return GroupFacts(
                group_id,
                result.state.name if result.state is not None else "UNKNOWN",
                result.type.name if result.type is not None else "UNKNOWN",
                tuple(sorted(str(m.client_id) for m in result.members or ())),
                str(result.partition_assignor or ""),
                _names(result.authorized_operations),
            )

        return self._cached(
            "group", group_id, _timeout_to_error(read), f"DESCRIBE on group {group_id}"
        )

    def group_configs(self, group_id: str) -> dict[str, ConfigValue] | Unreadable:
        """The configs of group ``group_id`` (share groups: ``share.*``)."""
        return self._cached(
            "group-configs",
            group_id,
            lambda: self._configs(ResourceType.GROUP, group_id),
            f"DESCRIBE_CONFIGS on group {group_id}",
        )

    # ------------------------------------------------------------------ ACLs
    def transactional_id_acls(self) -> list[AclEntry] | Unreadable:
        """Every ACL on transactional ids (needs DESCRIBE on the cluster)."""

        def read() -> list[AclEntry]:
            anything: Any = None  # a filter's None matches every name (the stubs say str)
            acl_filter = AclBindingFilter(
                ResourceType.TRANSACTIONAL_ID,
                anything,
                ResourcePatternType.ANY,
                anything,
                anything,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
            bindings = self._wait(
                self._admin.describe_acls(acl_filter, request_timeout=self.timeout_s),
                "describe_acls",
            )
            return [
                AclEntry(
                    b.restype.name,
                    str(b.name),
                    b.resource_pattern_type.name,
                    str(b.principal),
                    str(b.host),
                    b.operation.name,
                    b.permission_type.name,
                )
                for b in bindings
            ]

        return self._cached("acls", "transactional-id", read, "DESCRIBE on the cluster")


def _source(source: object) -> str:
    try:
        return ConfigSource(source).name
    except ValueError:
        return "UNKNOWN_CONFIG"


def _timeout_to_error(read: Callable[[], T]) -> Callable[[], T]:
    """``read`` with a ``concurrent.futures`` timeout turned into the SDK's timeout error."""

    def wrapped() -> T:
        try:
            return read()
        except concurrent.futures.TimeoutError:
            raise from_kafka_error(
                timeout_error("no answer in time"), context="describe_consumer_groups"
            ) from None

    return wrapped
