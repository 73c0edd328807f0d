"""The guarantee core every front end composes (see docs/architecture.md).

* :mod:`sdk.core.session`: the transactional session (begin / produce / commit steps / abort /
  recreate) and the one recovery decision it executes;
* :mod:`sdk.core.recovery`: that decision as a pure function of the error;
* :mod:`sdk.core.records`: the record a handler returns (:class:`OutputRecord`) and the
  transaction counters.

Front ends (``sdk.producer``, ``sdk.processor``, ``spark_integration``) decide *when* to call the
core; the core decides *what* a guarantee requires. This package imports no front end.
"""
