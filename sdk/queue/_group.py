"""The share group's broker-side settings, applied through the admin API (KIP-932).

``share.auto.offset.reset``, ``share.isolation.level``, ``share.record.lock.duration.ms`` and
``share.delivery.count.limit`` are *group* configs: the broker reads them, no client setting
changes them. :func:`apply_group_config` sets the ones a :class:`~sdk.profiles.QueueProfile`
renders (incremental SET, so other group configs stay as they are).
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

# the names live in private modules: confluent_kafka.admin re-exports them without __all__
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType

from sdk.errors import ConfigurationError, KafkaClientError, from_kafka_error
from sdk.profiles import QueueProfile

__all__ = ["NO_SHARE_GROUPS_HINT", "apply_group_config"]

NO_SHARE_GROUPS_HINT = (
    "share groups need Apache Kafka 4.1 or later with share groups enabled (Kafka 4.2+ enables "
    "them by default; on 4.1 set the feature share.version=1)"
)

_FIELDS = {
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
    "share.record.lock.duration.ms": "record_lock_duration_ms",
    "share.delivery.count.limit": "delivery_count_limit",
}


def apply_group_config(profile: QueueProfile, *, timeout_s: float = 30.0) -> dict[str, str]:
    """Set the share group's configs from ``profile`` (what ``profile explain`` shows).

    Args:
        profile: The queue profile (its ``group_id`` and :meth:`QueueProfile.group_config`).
        timeout_s: Seconds to wait for the broker.

    Returns:
        The configs that were set.

    Raises:
        ConfigurationError: The broker refused a value (e.g. a lock duration outside its
            ``group.share.min/max.record.lock.duration.ms``); the profile field is named.
        KafkaClientError: The broker could not set them (no share-group support: the message
            says what is needed; no ACL to alter group configs; unreachable).
    """
    configs = profile.group_config()
    admin_config: dict[str, Any] = {"bootstrap.servers": profile.bootstrap_servers}
    admin_config.update(profile.security.render())
    admin = AdminClient(admin_config)
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
        future = admin.incremental_alter_configs([resource], request_timeout=timeout_s)[resource]
        future.result(timeout=timeout_s + 5)
    except KafkaException as exc:
        raise _translate(exc.args[0], context, configs) from None
    except TimeoutError:  # concurrent.futures on Python 3.11
        raise from_kafka_error(
            KafkaError(KafkaError._TIMED_OUT, "no answer from the cluster"), context=context
        ) from None
    return configs


def _translate(err: Any, context: str, configs: dict[str, str]) -> Exception:
    if not isinstance(err, KafkaError):
        return KafkaClientError(f"{context}: {err}")
    code, text = err.code(), err.str()
    if code == KafkaError.INVALID_CONFIG:
        named = [key for key in configs if key in text]
        field = _FIELDS.get(named[0], "queue") if named else "queue"
        return ConfigurationError(f"{context}: the broker refused a value: {text}", field=field)
    if code in (KafkaError.INVALID_REQUEST, KafkaError.UNSUPPORTED_VERSION):
        return from_kafka_error(err, context=f"{context}: {NO_SHARE_GROUPS_HINT}")
    return from_kafka_error(err, context=context)
