"""The guarantee core every exactly-once front end composes (see docs/architecture.md).

* :mod:`sdk.core.session`: the transactional session (begin / produce / commit steps / abort /
  recreate) and the one recovery decision it executes.

The pure decisions the session and the clients take sit in the layer below, beside the errors,
because the consumer uses them too: the recovery decision (:mod:`sdk.recovery`), the failure
policy and the one dead-letter format (:mod:`sdk.failure`), the record types
(:mod:`sdk.records`) and the lifecycle enum (:mod:`sdk.lifecycle`). ``sdk.core.failure``,
``sdk.core.recovery``, ``sdk.core.records`` and ``sdk.core.lifecycle`` still import until
0.3, with a DeprecationWarning (deprecated, removed in 0.3).

Front ends (``sdk.processor``, ``spark_integration``) decide *when* to call the session; the
session decides *what* a guarantee requires. It holds one Producer and imports no consuming
front end.
"""
