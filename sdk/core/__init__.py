"""The guarantee core every front end composes (see docs/architecture.md).

* :mod:`sdk.core.session`: the transactional session (begin / produce / commit steps / abort /
  recreate) and the one recovery decision it executes;
* :mod:`sdk.core.recovery`: that decision as a pure function of the error;
* :mod:`sdk.core.failure`: the failure policy (handler retries, then dead letter or stop) and
  the one dead-letter format;
* :mod:`sdk.core.records`: the record every handler gets (:class:`ConsumerRecord`), the one it
  returns (:class:`OutputRecord`), and the transaction counters;
* :mod:`sdk.core.lifecycle`: the one lifecycle enum of every client.

Front ends (``sdk.producer``, ``sdk.consumer``, ``sdk.processor``, ``spark_integration``)
decide *when* to call the core; the core decides *what* a guarantee requires. Only the session
knows the Producer (it holds one); nothing here imports a consuming front end.
"""
