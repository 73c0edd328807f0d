"""The consume machinery the SDK's front ends share: an internal interface, not public API.

Every consuming front end (``Consumer``, ``Processor``, ``QueueConsumer``, ``DatabaseSink``)
runs on these pieces, so that a feature added here reaches every front end
(docs/architecture.md). They are offered to the SDK's own packages from this module rather than
from the private modules that implement them; none is in ``sdk.consumer.__all__``, and any of
them may change in any release.

* the engine: :class:`ConsumeLoop` (the client, stop and SIGTERM, the run's limits, closing),
  over a :class:`Source` (:class:`GroupSource` for a consumer group; the queue has its own)
  and a front end's :class:`Commits` (:class:`GroupCommits` with its part of each rebalance);
* the failure path: :class:`RecordDecoder` (a message to a record, a poison pill recognised),
  :class:`DeadLetterSink` / :func:`dead_letter_sink` (the dead-letter producer of a profile),
  :class:`FailurePath` (the handler's retries, then dead letter or stop), :class:`RegistryWait`
  (a record retried while the schema registry does not answer; a stop ends the wait, and
  :meth:`ConsumeLoop.running` ends the run as stopped);
* key-ordered concurrency: :class:`KeyScheduler` (one record per ordering key at a time, in
  offset order, on worker threads it owns), :func:`check_concurrency` (``run(concurrency=N)``'s
  arguments) and :func:`timed_out` (the error of a handler given up at its timeout);
* the at-most-once commit before handling: :func:`commit_before_handling`, the
  :class:`HandledMarks` that keep a record from being handed out twice, :func:`member_id`.
"""

from sdk.consumer._at_most_once import HandledMarks as HandledMarks
from sdk.consumer._at_most_once import commit_before_handling as commit_before_handling
from sdk.consumer._at_most_once import member_id as member_id
from sdk.consumer._concurrent import check_concurrency as check_concurrency
from sdk.consumer._failure import DeadLetterSink as DeadLetterSink
from sdk.consumer._failure import FailurePath as FailurePath
from sdk.consumer._failure import RecordDecoder as RecordDecoder
from sdk.consumer._failure import dead_letter_sink as dead_letter_sink
from sdk.consumer._loop import Commits as Commits
from sdk.consumer._loop import ConsumeLoop as ConsumeLoop
from sdk.consumer._loop import GroupCommits as GroupCommits
from sdk.consumer._loop import GroupSource as GroupSource
from sdk.consumer._loop import LoopCounts as LoopCounts
from sdk.consumer._loop import Source as Source
from sdk.consumer._registry_wait import RegistryWait as RegistryWait
from sdk.consumer._scheduler import KeyScheduler as KeyScheduler
from sdk.consumer._scheduler import timed_out as timed_out
