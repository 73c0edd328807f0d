/* What the C files of sdk.core._speedups share: the record view (_speedups.c defines it), the
 * per-record loop (_run.c) and OutputRecord's constructor (_output.c). */
#ifndef SDK_CORE_SPEEDUPS_H
#define SDK_CORE_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Whether cls is a RecordCore subclass (else TypeError, and 0 returned). */
int sdk_record_class(PyObject *cls, const char *caller);

/* A record of class cls (checked by sdk_record_class) over the message msg. */
PyObject *sdk_new_view(PyTypeObject *cls, PyObject *msg);

/* The same, made in the view *spare (a reference the caller gives up: *spare becomes NULL)
 * where the caller alone holds it; otherwise *spare is released and a new view made. */
PyObject *sdk_next_view(PyObject **spare, PyTypeObject *cls, PyObject *msg);

/* handle_run(records, i, n, stop, handler, emit, cls, due_at, clock): the module function. */
PyObject *sdk_handle_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* Keeps time.monotonic, which handle_run reads in C when it is the clock it is given (0, or -1
 * with an exception set). */
int sdk_run_init(void);

/* OutputRecord's constructor (_output.c): output_new(cls, topic, value, key=None,
 * headers=None, partition=None), direct_calls(cls), calls_directly(cls); the module functions. */
PyObject *sdk_output_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames);
PyObject *sdk_direct_calls(PyObject *module, PyObject *cls);
PyObject *sdk_calls_directly(PyObject *module, PyObject *cls);

/* Interns OutputRecord's field names (0, or -1 with an exception set). */
int sdk_output_init(void);

#endif
