"""The guarantee core every front end composes (see docs/architecture.md).

* :mod:`sdk.core.session`: the transactional session (begin / produce / commit steps / abort /
  recreate) and the one recovery decision it executes;
* :mod:`sdk.core.recovery`: that decision as a pure function of the error;
* :mod:`sdk.core.failure`: the failure policy (handler retries, then dead letter or stop) and
  the one dead-letter format.

The record types (:mod:`sdk.records`) and the lifecycle enum (:mod:`sdk.lifecycle`) sit in
the layer below, beside the errors: the producer and the consumer use them too.

Front ends (``sdk.producer``, ``sdk.consumer``, ``sdk.processor``, ``spark_integration``)
decide *when* to call the core; the core decides *what* a guarantee requires. Only the session
knows the Producer (it holds one); nothing here imports a consuming front end.
"""
