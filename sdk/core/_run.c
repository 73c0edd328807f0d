/* handle_run: the per-record loop of the Processor, Consumer.run() and the queue's
 * at_least_once run() (issue #16); optional, and its twin is sdk/core/records.py's
 * _py_handle_run, which says what it does and returns.
 *
 * The clock: each record ends with a clock read (the caller's deadline: a commit interval, the
 * stop window, a lock budget). When the clock given is time.monotonic itself, it is read here
 * with clock_gettime(CLOCK_MONOTONIC), the clock time.monotonic reads on Linux, and turned into
 * seconds the way CPython does: the same value without a Python call and a float per record
 * (measured on this VM: time.monotonic() from Python 42 ns, clock_gettime alone 24 ns). Any
 * other clock (a test's, another platform's) is called.
 */
#include "_speedups.h"
#include <time.h>

#if defined(__linux__) && defined(CLOCK_MONOTONIC)
#define SDK_DIRECT_MONOTONIC 1
#endif

static PyObject *monotonic; /* time.monotonic */

int
sdk_run_init(void)
{
    PyObject *time_module = PyImport_ImportModule("time");
    if (time_module == NULL) {
        return -1;
    }
    monotonic = PyObject_GetAttrString(time_module, "monotonic");
    Py_DECREF(time_module);
    return monotonic == NULL ? -1 : 0;
}

/* now = clock() in seconds: 0, or -1 with an exception set */
static int
read_clock(PyObject *clock, double *now)
{
    PyObject *r;
#ifdef SDK_DIRECT_MONOTONIC
    if (clock == monotonic) {
        struct timespec ts;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        /* as CPython: nanoseconds as one integer, then a double divided by 1e9 */
        *now = (double)((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec) / 1e9;
        return 0;
    }
#endif
    r = PyObject_CallNoArgs(clock);
    if (r == NULL) {
        return -1;
    }
    *now = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return *now == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* The raised exception, normalized, with its traceback on it (a new reference); clears it. */
static PyObject *
take_error(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* (i, produced, record or None, error): handle_run's result */
static PyObject *
run_result(Py_ssize_t i, Py_ssize_t produced, PyObject *record, PyObject *error)
{
    return Py_BuildValue("(nnOO)", i, produced, record == NULL ? Py_None : record,
                         error == NULL ? Py_None : error);
}

/* handle_run(records, i, n, stop, handler, emit, cls, due_at, clock): the Processor's hot loop;
 * sdk/core/records.py's _py_handle_run says what it does and returns. */
PyObject *
sdk_handle_run(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *records, *handler, *emit, *clock;
    PyTypeObject *cls;
    PyObject *record = NULL, *outputs = NULL, *error = NULL, *result, *spare = NULL;
    Py_ssize_t i, n, stop, produced = 0;
    double due_at;
    if (nargs != 9 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "handle_run(records: list, i, n, stop, handler, emit, cls, due_at, clock)");
        return NULL;
    }
    records = args[0];
    handler = args[4];
    emit = args[5];
    clock = args[8];
    i = PyLong_AsSsize_t(args[1]);
    n = PyLong_AsSsize_t(args[2]);
    stop = PyLong_AsSsize_t(args[3]);
    due_at = PyFloat_AsDouble(args[7]);
    if (PyErr_Occurred() || !sdk_record_class(args[6], "handle_run")) {
        return NULL;
    }
    cls = (PyTypeObject *)args[6]; /* checked once here, not per record */
    while (i < n) {
        double now;
        Py_ssize_t j;
        if (i < 0 || i >= PyList_GET_SIZE(records)) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            error = take_error();
            break;
        }
        record = sdk_next_view(&spare, cls, PyList_GET_ITEM(records, i));
        if (record == NULL) {
            error = take_error();
            break;
        }
        outputs = PyObject_CallOneArg(handler, record);
        if (outputs != NULL && emit != Py_None && !PyList_CheckExact(outputs)) {
            /* list(outputs or ()) */
            int truth = PyObject_IsTrue(outputs);
            Py_SETREF(outputs, truth < 0 ? NULL : truth ? PySequence_List(outputs) : PyList_New(0));
        }
        if (outputs == NULL) {
            error = take_error();
            break; /* the handler failed: record stays for the failure policy */
        }
        /* no emit: what the handler returns is ignored (the loop below does not run) */
        for (j = 0; emit != Py_None && j < PyList_GET_SIZE(outputs); j++) {
            PyObject *out = PyList_GET_ITEM(outputs, j), *r;
            Py_INCREF(out);
            r = PyObject_CallOneArg(emit, out);
            Py_DECREF(out);
            if (r == NULL) {
                error = take_error();
                break;
            }
            Py_DECREF(r);
            produced++;
        }
        Py_CLEAR(outputs);
        if (error != NULL) {
            Py_CLEAR(record);
            break;
        }
        /* the next record's view is made in it if nobody else kept it (sdk_next_view) */
        spare = record;
        record = NULL;
        i++;
        if (i >= stop) {
            break;
        }
        if (clock == Py_None) {
            continue; /* no clock: runs to stop */
        }
        if (read_clock(clock, &now) < 0) {
            error = take_error();
            break;
        }
        if (now >= due_at) {
            break;
        }
    }
    Py_XDECREF(spare);
    result = run_result(i, produced, record, error);
    Py_XDECREF(record);
    Py_XDECREF(error);
    return result;
}

