"""Runs inside the Quix Streams venv (not the SDK's): copy N records exactly-once, print JSON."""

import json
import sys
import time

import quixstreams
from quixstreams import Application


def main() -> None:
    spec = json.loads(sys.argv[1])
    app = Application(
        broker_address=spec["bootstrap"],
        consumer_group=spec["group"],
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        commit_interval=0.1,
        auto_create_topics=False,
        loglevel="WARNING",
        consumer_extra_config={"fetch.queue.backoff.ms": spec["fetch_backoff_ms"]},
    )
    source = app.topic(spec["source"], key_deserializer="bytes", value_deserializer="bytes")
    output = app.topic(spec["output"], key_serializer="bytes", value_serializer="bytes")
    state = {"seen": 0, "first": 0.0}
    n = spec["n"]

    def count(value: bytes) -> bytes:
        if not state["first"]:
            state["first"] = time.perf_counter()
        state["seen"] += 1
        if state["seen"] >= n:
            app.stop()
        return value

    sdf = app.dataframe(source)
    sdf = sdf.apply(count)
    sdf.to_topic(output)
    app.run()
    seconds = time.perf_counter() - state["first"]
    print(
        json.dumps(
            {"records": state["seen"], "seconds": seconds, "version": quixstreams.__version__}
        )
    )


if __name__ == "__main__":
    main()
