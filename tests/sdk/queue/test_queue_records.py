"""``sdk.queue._records.Outstanding``: which records of a poll are not acknowledged yet."""

from __future__ import annotations

from sdk.queue._records import Outstanding


def test_an_index_is_taken_once() -> None:
    pending = Outstanding(3)
    assert pending.take(1) is True
    assert pending.take(1) is False  # the broker takes one acknowledgement
    assert pending.rest() == [0, 2]


def test_a_prefix_taken_at_once_leaves_the_rest_and_what_was_taken_after_it() -> None:
    pending = Outstanding(6)
    assert pending.take(4)
    pending.taken_before(3)
    assert pending.rest() == [3, 5]
    assert pending.take(2) is False and pending.take(4) is False and pending.take(3) is True
    pending.taken_before(1)  # never moves back
    assert pending.rest() == [5]


def test_clear_takes_every_index() -> None:
    pending = Outstanding(4)
    pending.clear()
    assert pending.rest() == [] and not any(pending.take(i) for i in range(4))


def test_an_empty_poll_has_nothing_outstanding() -> None:
    assert Outstanding(0).rest() == []
