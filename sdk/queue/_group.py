"""The share group's broker-side settings, applied through the admin API (KIP-932).

``share.auto.offset.reset``, ``share.isolation.level``, ``share.record.lock.duration.ms`` and
``share.delivery.count.limit`` are *group* configs: the broker reads them, no client setting
changes them. :func:`apply_group_config` sets the ones a :class:`~sdk.profiles.QueueProfile`
renders (incremental SET, so other group configs stay as they are).
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import KafkaError

# the names live in private modules: confluent_kafka.admin re-exports them without __all__
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType

from sdk._client import admin_client, admin_config, translating
from sdk._connection import BrokerContact
from sdk.errors import ConfigurationError, KafkaClientError, KafkaTimeoutError, SdkError
from sdk.profiles import QueueProfile

__all__ = ["NO_SHARE_GROUPS_HINT", "NO_SUPPORT_CODES", "apply_group_config", "with_hint"]

NO_SHARE_GROUPS_HINT = (
    "share groups need Apache Kafka 4.2 or later (on by default there; on 4.1, a preview, the "
    "share consumer gets no records: docs/compatibility.md)"
)

NO_SUPPORT_CODES = frozenset(
    (
        KafkaError.INVALID_REQUEST,
        KafkaError.UNSUPPORTED_VERSION,
        KafkaError._UNSUPPORTED_FEATURE,
    )
)
"""Codes with which a broker without share groups refuses their requests."""

_FIELDS = {
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
    "share.record.lock.duration.ms": "record_lock_duration_ms",
    "share.delivery.count.limit": "delivery_count_limit",
}


def apply_group_config(
    profile: QueueProfile,
    *,
    timeout_s: float = 30.0,
    stopped: Callable[[], bool] | None = None,
) -> dict[str, str] | None:
    """Set the share group's configs from ``profile`` (what ``profile explain`` shows).

    A broker must answer a metadata request first: if none of ``bootstrap_servers`` does for
    ``socket.connection.setup.timeout.ms`` (30 s unless set in the profile's ``extras``), the
    error names the address instead of a timeout of the admin call.

    Args:
        profile: The queue profile (its ``group_id`` and :meth:`QueueProfile.group_config`).
        timeout_s: Seconds to wait for the broker.
        stopped: Checked while waiting for a broker: a stop request (Ctrl-C) ends the wait.

    Returns:
        The configs that were set; None if ``stopped()`` became true before a broker answered.

    Raises:
        BrokerUnreachableError: No broker answered (the message names the address).
        ConfigurationError: The broker refused a value (e.g. a lock duration outside its
            ``group.share.min/max.record.lock.duration.ms``); the profile field is named.
        KafkaClientError: The broker could not set them (no share-group support: the message
            says what is needed; no ACL to alter group configs; unreachable).
    """
    configs = profile.group_config()
    config = admin_config(profile.bootstrap_servers, profile.security.render(), profile.extras)
    extras = profile.render()  # the bound, if the profile's extras set it
    if "socket.connection.setup.timeout.ms" in extras:
        config["socket.connection.setup.timeout.ms"] = extras["socket.connection.setup.timeout.ms"]
    contact = BrokerContact(config)
    admin = admin_client(config, logger=contact)  # librdkafka's log, repeats collapsed
    if not contact.wait(
        lambda t: admin.list_topics(timeout=t),
        stopped or (lambda: False),
        f"setting the share-group configs of {profile.group_id!r}",
        serve=lambda: admin.poll(0),
    ):
        return None
    resource = ConfigResource(
        ResourceType.GROUP,
        profile.group_id,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    context = f"setting the share-group configs of {profile.group_id!r} ({configs})"
    try:
        with translating(context):
            futures = admin.incremental_alter_configs([resource], request_timeout=timeout_s)
            futures[resource].result(timeout=timeout_s + 5)
    except KafkaClientError as exc:
        raise _explained(exc, configs) from exc
    except TimeoutError:  # concurrent.futures on Python 3.11
        raise KafkaTimeoutError(f"{context}: no answer within {timeout_s:g}s") from None
    return configs


def _explained(exc: KafkaClientError, configs: dict[str, str]) -> SdkError:
    """The translated error, said in the profile's terms where that helps."""
    if exc.code == KafkaError.INVALID_CONFIG:
        named = [key for key in configs if key in str(exc)]
        field = _FIELDS.get(named[0], "queue") if named else "queue"
        return ConfigurationError(f"{exc} (the broker refused a value)", field=field)
    if exc.code in NO_SUPPORT_CODES:
        return with_hint(exc)
    return exc


def with_hint(exc: KafkaClientError) -> KafkaClientError:
    """``exc`` again, its message saying what share groups need (the same type and code)."""
    hinted = type(exc)(f"{exc}: {NO_SHARE_GROUPS_HINT}", kafka_error=exc.kafka_error)
    hinted.__cause__ = exc
    return hinted
