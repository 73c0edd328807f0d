"""The doctor's verdicts: one :class:`Check` per finding, gathered in a :class:`Report`."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Check", "Report", "Status"]


class Status(StrEnum):
    """How a check came out.

    * ``PASS``: the value was read and keeps the guarantee.
    * ``WARN``: a risk to the guarantee or to availability, or a value that could not be read
      (the check then says why).
    * ``FAIL``: the cluster cannot keep the guarantee as configured; the client would fail or
      lose records.
    """

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"


_ORDER = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}


@dataclass(frozen=True)
class Check:
    """One finding.

    Attributes:
        name: What was checked, e.g. ``"topic orders: min.insync.replicas"``.
        status: PASS, WARN or FAIL.
        found: What the cluster said (the values read), or why nothing could be read.
        why: Why it matters for this profile's guarantee.
        fix: The command or admin call that fixes it (empty for a PASS).
    """

    name: str
    status: Status
    found: str
    why: str = ""
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        """The check as plain JSON values."""
        return {
            "name": self.name,
            "status": self.status.value,
            "found": self.found,
            "why": self.why,
            "fix": self.fix,
        }


def worst(*checks: Check) -> Check:
    """The check with the worst status (the first of equals)."""
    return max(checks, key=lambda c: _ORDER[c.status])


@dataclass
class Report:
    """Every check of one doctor run, in the order they ran.

    Attributes:
        subject: What was checked, e.g. ``"profile 'orders' (processing, exactly_once)"``.
        guarantee: The profile's guarantee.
        checks: The findings.
        cluster_id: The cluster's id ("" if it could not be read).
        duration_s: How long the run took.
    """

    subject: str
    guarantee: str
    checks: list[Check] = field(default_factory=list)
    cluster_id: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """No check failed (warnings allowed)."""
        return not self.failures

    @property
    def failures(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if c.status is Status.FAIL]

    @property
    def warnings(self) -> list[Check]:
        """The checks that warned."""
        return [c for c in self.checks if c.status is Status.WARN]

    def counts(self) -> dict[str, int]:
        """How many checks came out PASS, WARN and FAIL."""
        return {s.value: sum(c.status is s for c in self.checks) for s in Status}

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON values (what ``--json`` prints)."""
        return {
            "subject": self.subject,
            "guarantee": self.guarantee,
            "cluster_id": self.cluster_id,
            "ok": self.ok,
            "counts": self.counts(),
            "duration_s": round(self.duration_s, 3),
            "checks": [c.to_dict() for c in self.checks],
        }

    def __str__(self) -> str:
        cluster = f" on cluster {self.cluster_id}" if self.cluster_id else ""
        lines = [f"doctor: {self.subject}{cluster}", ""]
        width = min(max((len(c.name) for c in self.checks), default=0), 44)
        for c in self.checks:
            lines.append(f"{c.status.value}  {c.name:<{width}}  {c.found}")
            if c.status is not Status.PASS:
                if c.why:
                    lines += textwrap.wrap(
                        f"why: {c.why}",
                        width=100,
                        initial_indent="      ",
                        subsequent_indent="           ",
                        break_on_hyphens=False,
                    )
                if c.fix:  # one line per command, unwrapped, so that it can be pasted
                    first, *more = c.fix.split("\n")
                    lines += [f"      fix: {first}", *(f"           {line}" for line in more)]
        n = self.counts()
        lines += [
            "",
            f"{n['FAIL']} FAIL, {n['WARN']} WARN, {n['PASS']} PASS in {self.duration_s:.2f}s",
        ]
        return "\n".join(lines)
