"""TLS and SCRAM for test clusters: a throw-away CA, a broker keystore, SCRAM users and ACLs.

Example::

    tls = make_tls(tmp_path)                      # CA + broker cert for 127.0.0.1 (openssl CLI)
    cluster = LocalCluster(
        1, extra_listeners={"SASL_SSL": "SASL_SSL"}, broker_config=sasl_ssl_config(tls)
    ).start()
    create_scram_user(cluster.bootstrap_servers, "writer", "writer-pass")
    grant(cluster.bootstrap_servers, "writer", "orders", ["WRITE", "DESCRIBE"])
    # clients: security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512, ssl.ca.location=tls.ca

The PLAINTEXT listener stays the inter-broker and admin listener (its principal, ANONYMOUS, is a
super user), so the harness keeps working; only the SASL_SSL listener is subject to ACLs.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdk.testing.errors import ClusterError

__all__ = ["TlsFiles", "create_scram_user", "grant", "make_tls", "sasl_ssl_config"]

LISTENER = "SASL_SSL"
MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class TlsFiles:
    """A CA certificate (PEM) and a broker PKCS#12 keystore signed by it."""

    ca: Path
    keystore: Path
    password: str

    def __repr__(self) -> str:
        return f"TlsFiles(ca={str(self.ca)!r}, keystore={str(self.keystore)!r}, password=***)"


def _openssl(*args: str, cwd: Path) -> None:
    tool = shutil.which("openssl")
    if tool is None:
        raise ClusterError("the openssl command is needed to make test certificates")
    proc = subprocess.run([tool, *args], cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"openssl {args[0]} failed: {proc.stderr.decode(errors='replace')}")


def make_tls(directory: Path, host: str = "127.0.0.1") -> TlsFiles:
    """Make a CA and a broker certificate for ``host`` (and localhost), valid for two days.

    Raises:
        ClusterError: openssl is missing or failed.
    """
    directory.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(16)
    subject = ["-subj", "/CN=kafka-semantics-test-ca"]
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", *subject, cwd=directory,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
        "-subj", f"/CN={host}", cwd=directory,
    )  # fmt: skip
    (directory / "san.ext").write_text(f"subjectAltName=IP:{host},DNS:localhost\n")
    _openssl(
        "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "broker.pem", "-days", "2", "-extfile", "san.ext",
        cwd=directory,
    )  # fmt: skip
    _openssl(
        "pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-certfile", "ca.pem",
        "-out", "broker.p12", "-passout", f"pass:{password}", cwd=directory,
    )  # fmt: skip
    return TlsFiles(directory / "ca.pem", directory / "broker.p12", password)


def sasl_ssl_config(tls: TlsFiles, super_users: Sequence[str] = ("admin",)) -> dict[str, Any]:
    """Broker settings for a ``SASL_SSL`` listener (SCRAM-SHA-512) with the StandardAuthorizer.

    Pass them as ``broker_config`` together with ``extra_listeners={"SASL_SSL": "SASL_SSL"}``.
    """
    prefix = f"listener.name.{LISTENER.lower()}"
    users = ";".join(["User:ANONYMOUS", *(f"User:{u}" for u in super_users)])
    return {
        "sasl.enabled.mechanisms": MECHANISM,
        f"{prefix}.sasl.enabled.mechanisms": MECHANISM,
        f"{prefix}.{MECHANISM.lower()}.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        f"{prefix}.ssl.keystore.type": "PKCS12",
        f"{prefix}.ssl.keystore.location": str(tls.keystore),
        f"{prefix}.ssl.keystore.password": tls.password,
        f"{prefix}.ssl.key.password": tls.password,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": users,
    }


def create_scram_user(bootstrap: str, user: str, password: str, iterations: int = 8192) -> None:
    """Create (or update) a SCRAM-SHA-512 credential through the Admin API.

    Raises:
        ClusterError: The broker refused.
    """
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations)
    upsert = UserScramCredentialUpsertion(user, info, password.encode())
    try:
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
    except Exception as exc:  # KafkaException: name the user, never the password
        raise ClusterError(f"creating SCRAM user {user!r} failed: {type(exc).__name__}") from None


def grant(
    bootstrap: str,
    user: str,
    topic: str | None,
    operations: Sequence[str],
    *,
    group: str | None = None,
) -> None:
    """Allow ``User:<user>`` the ``operations`` (e.g. ``WRITE``, ``DESCRIBE``) on ``topic``.

    ``topic=None`` grants on the cluster resource (e.g. ``IDEMPOTENT_WRITE``), unless ``group``
    names a consumer group (e.g. ``READ`` for a consumer that commits offsets).

    Raises:
        ClusterError: The broker refused.
    """
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    if topic and group:
        raise ValueError("grant: name a topic or a group, not both")
    if topic:
        resource, name = ResourceType.TOPIC, topic
    elif group:
        resource, name = ResourceType.GROUP, group
    else:
        resource, name = ResourceType.BROKER, "kafka-cluster"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    bindings = [
        AclBinding(
            resource,
            name,
            ResourcePatternType.LITERAL,
            f"User:{user}",
            "*",
            AclOperation[op],
            AclPermissionType.ALLOW,
        )
        for op in operations
    ]
    try:
        for future in admin.create_acls(bindings).values():
            future.result(30)
    except Exception as exc:
        raise ClusterError(
            f"granting {list(operations)} on {resource.name.lower()} {name} to {user} failed: {exc}"
        ) from exc
