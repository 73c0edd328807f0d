"""``sdk.doctor``: checks a cluster against a profile, because a guarantee is only as strong as it.

A profile fixes the client side of a guarantee; the brokers decide whether an acknowledged
record survives (replication, ``min.insync.replicas``, unclean leader election), whether a
transaction can start (the transaction log, ``transaction.max.timeout.ms``), whether a queue
works at all (share groups) and whether the principal may do what the profile needs (ACLs).
:func:`check` reads all of it with the profile's own connection settings and returns a
:class:`Report`; :func:`verify` raises :class:`~sdk.errors.DoctorError` on a FAIL. The command
line is ``python -m sdk doctor NAME --file profiles.yaml [--topic T ...] [--json]``
(docs/doctor.md). :func:`create_topics` creates the topics a check found missing.

An internal interface, in no ``__all__``: ``main``, that command line (``sdk.__main__`` hands
it every argument after ``doctor``); ``require_broker`` with ``SHARE_GROUPS`` and
``CONSUMER_PROTOCOL``, the start-up check of the front ends (a feature the broker lacks is
refused by name); ``refuse_transactions``, the same for a cluster whose transaction
coordinator never answers (run after the first ``init_transactions`` timed out).
"""

from sdk.doctor._checks import check, verify
from sdk.doctor._cli import main as main
from sdk.doctor._create import create_topics
from sdk.doctor._preflight import CONSUMER_PROTOCOL as CONSUMER_PROTOCOL
from sdk.doctor._preflight import SHARE_GROUPS as SHARE_GROUPS
from sdk.doctor._preflight import refuse_transactions as refuse_transactions
from sdk.doctor._preflight import require_broker as require_broker
from sdk.doctor._report import Check, Report, Status

__all__ = ["Check", "Report", "Status", "check", "create_topics", "verify"]
