"""The consume machinery the SDK's front ends share: an internal interface, not public API.

The ``Consumer`` owns these pieces; the ``Processor``, the ``QueueConsumer`` and the
``DatabaseSink`` use the same ones, so that a feature added here reaches every front end
(docs/architecture.md). They are offered to the SDK's own packages from this module rather than
from the private modules that implement them; none is in ``sdk.consumer.__all__``, and any of
them may change in any release.

* the failure path: :class:`RecordDecoder` (a message to a record, a poison pill recognised),
  :class:`DeadLetterSink` / :func:`dead_letter_sink` (the dead-letter producer of a profile),
  :class:`FailurePath` (the handler's retries, then dead letter or stop);
* the client's health and polling: :class:`ClientHealth` (the ``error_cb``, when an idle run
  ends), :func:`poll_records` (one poll, error events translated), :func:`subscribed_client`
  (the client created, subscribed with the rebalance callbacks);
* the at-most-once commit before handling: :func:`commit_before_handling`, the
  :class:`HandledMarks` that keep a record from being handed out twice, :func:`member_id`.
"""

from sdk.consumer._at_most_once import HandledMarks as HandledMarks
from sdk.consumer._at_most_once import commit_before_handling as commit_before_handling
from sdk.consumer._at_most_once import member_id as member_id
from sdk.consumer._failure import DeadLetterSink as DeadLetterSink
from sdk.consumer._failure import FailurePath as FailurePath
from sdk.consumer._failure import RecordDecoder as RecordDecoder
from sdk.consumer._failure import dead_letter_sink as dead_letter_sink
from sdk.consumer._health import ClientHealth as ClientHealth
from sdk.consumer._health import poll_records as poll_records
from sdk.consumer._health import subscribed_client as subscribed_client
from sdk.consumer._loop import Commits as Commits
from sdk.consumer._loop import ConsumeLoop as ConsumeLoop
from sdk.consumer._loop import GroupCommits as GroupCommits
from sdk.consumer._loop import GroupSource as GroupSource
from sdk.consumer._loop import LoopCounts as LoopCounts
from sdk.consumer._loop import Source as Source
