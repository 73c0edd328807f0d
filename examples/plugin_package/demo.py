"""Use the plugins by name from a YAML profile (install this package first; see README.md)."""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from pathlib import Path

from sdk.assignors import Member, TopicPartition, resolve_assignor
from sdk.producer import Producer
from sdk.profiles import load_profiles
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers


def main() -> None:
    with bootstrap_servers() as bootstrap, tempfile.TemporaryDirectory() as tmp:
        topic = create_topic(bootstrap, f"accounts-{time.time_ns()}", 9)
        path = Path(tmp) / "profiles.yaml"
        path.write_text(
            f"defaults: {{bootstrap_servers: '{bootstrap}'}}\n"
            "profiles:\n  accounts: {guarantee: at_least_once, partitioner: region}\n"
        )
        placed: dict[str, set[int]] = defaultdict(set)
        with Producer(load_profiles(path).producer("accounts"), key_serializer="str") as producer:
            handles = [
                (region, producer.send(topic, b"{}", key=f"{region}-{i}"))
                for region in ("eu", "us", "ap")
                for i in range(30)
            ]
        for region, handle in handles:
            placed[region].add(handle.result().partition)
        print(
            "region partitioner (entry point 'region'):", {r: sorted(p) for r, p in placed.items()}
        )
        if (
            placed["eu"] & placed["us"]
            or placed["us"] & placed["ap"]
            or placed["eu"] & placed["ap"]
        ):
            raise SystemExit("regions overlap")

    assignor = resolve_assignor("weighted")
    members = [
        Member.of("big", ["t"], metadata={"weight": "3"}),
        Member.of("small", ["t"], metadata={"weight": "1"}),
    ]
    plan = assignor.assign(members, [TopicPartition("t", p) for p in range(8)])
    print("weighted assignor (entry point 'weighted'):", {m: len(tps) for m, tps in plan.items()})
    if (len(plan["big"]), len(plan["small"])) != (6, 2):
        raise SystemExit("weights not respected")


if __name__ == "__main__":
    main()
