/* FastSend: Producer.send() with its fast path compiled (issue #16); optional, and its twin is
 * the Python method itself.
 *
 * FastSend(func, handle_cls) wraps the Python function Producer.send. It is a method descriptor
 * (Py_TPFLAGS_METHOD_DESCRIPTOR: producer.send(...) calls it with the producer as the first
 * argument, and producer.send binds like a function), and it passes everything it does not take
 * to func unchanged, so the Python method stays the one definition of what send() does.
 *
 * It takes the call send()'s own fast path takes, and does the same. The call: the producer's
 * _hot_produce is set (the client's produce: open, bytes in, librdkafka places, plain handles,
 * nothing observed), the topic is an exact str in _known_topics, the value bytes or None, the
 * key None or bytes, and there are no headers, timestamp or partition (a handle keeps only
 * topic, value and key, from which it builds its record). What it does: the record goes
 * straight to produce with a handle made without __init__ (sdk_make_handle); any Exception
 * from produce (a full queue, a refusal) goes on to
 * producer._send_general(topic, value, key, None, None, None, handle), which waits or
 * translates. tests/sdk/producer/test_send.py holds both to this.
 *
 * Why compiled: the Python fast path cost a Python frame with keyword arguments and seven tests
 * per record, about 0.3 us of the 0.9 us send() took per record against 0.6 us for a bare
 * produce() loop (offline, 100 B).
 */
#include "_speedups.h"
#include <stddef.h> /* offsetof */

typedef struct {
    PyObject_HEAD
    PyObject *func;       /* the Python Producer.send: every call this does not take */
    PyObject *handle_cls; /* DeliveryHandle: the class of a fast-path handle */
    vectorcallfunc vectorcall;
} FastSend;

static PyObject *s_hot_produce;
static PyObject *s_known_topics;
static PyObject *s_send_general;
static PyObject *s_value;
static PyObject *s_key;
static PyObject *s_headers;
static PyObject *s_partition;
static PyObject *s_timestamp_ms;

static int
FastSend_traverse(FastSend *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->handle_cls);
    return 0;
}

static int
FastSend_clear(FastSend *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->handle_cls);
    return 0;
}

static void
FastSend_dealloc(FastSend *self)
{
    PyObject_GC_UnTrack(self);
    FastSend_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* kwnames[i] is name: interned names compare by identity; any other str by value */
static int
is_name(PyObject *kwname, PyObject *name)
{
    return kwname == name || PyUnicode_Compare(kwname, name) == 0;
}

/* The fast path. Returns the handle, NULL with an error, or NULL without one: not taken. */
static PyObject *
send_fast(FastSend *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *producer, *topic, *value = Py_None, *key = Py_None;
    PyObject *produce, *known, *handle, *r;
    Py_ssize_t i, nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    int contains;

    if (nargs < 2 || nargs > 3) {
        return NULL; /* func says what is wrong */
    }
    producer = args[0];
    topic = args[1];
    if (nargs == 3) {
        value = args[2];
    }
    for (i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i), *arg = args[nargs + i];
        if (is_name(name, s_key)) {
            key = arg;
        }
        else if (nargs == 2 && is_name(name, s_value)) {
            value = arg;
        }
        else if (arg != Py_None
                 || !(is_name(name, s_headers) || is_name(name, s_timestamp_ms)
                      || is_name(name, s_partition))) {
            return NULL; /* headers, a timestamp, a partition, a name func refuses */
        }
    }
    if (!PyUnicode_CheckExact(topic) || !(value == Py_None || PyBytes_CheckExact(value))
        || !(key == Py_None || PyBytes_CheckExact(key))) {
        return NULL;
    }
    produce = PyObject_GetAttr(producer, s_hot_produce);
    if (produce == NULL) {
        return NULL;
    }
    if (produce == Py_None) {
        Py_DECREF(produce);
        return NULL;
    }
    known = PyObject_GetAttr(producer, s_known_topics);
    if (known == NULL) {
        Py_DECREF(produce);
        return NULL;
    }
    contains = PySet_Check(known) ? PySet_Contains(known, topic) : 0;
    Py_DECREF(known);
    if (contains <= 0) {
        Py_DECREF(produce);
        return NULL;
    }
    handle = sdk_make_handle((PyTypeObject *)self->handle_cls, producer, topic, value, key);
    if (handle == NULL) {
        Py_DECREF(produce);
        return NULL;
    }
    {
        PyObject *call[5] = {NULL, topic, value, key, handle};
        r = PyObject_Vectorcall(produce, call + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                sdk_on_delivery_names);
    }
    Py_DECREF(produce);
    if (r != NULL) {
        Py_DECREF(r);
        return handle;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
        Py_DECREF(handle); /* KeyboardInterrupt and the like propagate */
        return NULL;
    }
    /* full queue, refusal: the general path retries / translates, with this handle */
    PyErr_Clear();
    {
        PyObject *call[8] = {producer, topic, value, key, Py_None, Py_None, Py_None, handle};
        r = PyObject_VectorcallMethod(s_send_general, call, 8 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      NULL);
    }
    Py_DECREF(handle);
    return r;
}

static PyObject *
FastSend_vectorcall(FastSend *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *handle = send_fast(self, args, PyVectorcall_NARGS(nargsf), kwnames);
    if (handle != NULL || PyErr_Occurred()) {
        return handle;
    }
    return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
}

/* producer.send: bound like a function (a method object of this and the producer) */
static PyObject *
FastSend_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type))
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
FastSend_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    FastSend *self;
    PyObject *func, *handle_cls;
    static char *names[] = {"func", "handle_cls", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!:FastSend", names, &func, &PyType_Type,
                                     &handle_cls)) {
        return NULL;
    }
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "FastSend: func must be callable");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)handle_cls, &HandleCoreType)) {
        PyErr_SetString(PyExc_TypeError, "FastSend: handle_cls must be a HandleCore subclass");
        return NULL;
    }
    self = (FastSend *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(func);
    self->func = func;
    Py_INCREF(handle_cls);
    self->handle_cls = handle_cls;
    self->vectorcall = (vectorcallfunc)FastSend_vectorcall;
    return (PyObject *)self;
}

/* __doc__, __name__, __qualname__, __module__ and __wrapped__ are func's: help() and
 * inspect.signature() show the Python method */
static PyObject *
FastSend_getattro(FastSend *self, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr((PyObject *)self, name);
    if (r != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return r;
    }
    if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
        PyErr_Clear();
        Py_INCREF(self->func);
        return self->func;
    }
    if (PyUnicode_CompareWithASCIIString(name, "__name__") == 0
        || PyUnicode_CompareWithASCIIString(name, "__qualname__") == 0
        || PyUnicode_CompareWithASCIIString(name, "__module__") == 0) {
        PyErr_Clear();
        return PyObject_GetAttr(self->func, name);
    }
    return NULL;
}

static PyObject *
FastSend_doc(FastSend *self, void *Py_UNUSED(closure))
{
    return PyObject_GetAttrString(self->func, "__doc__");
}

static PyGetSetDef FastSend_getset[] = {
    {"__doc__", (getter)FastSend_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FastSendType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sdk.producer._speedups.FastSend",
    .tp_basicsize = sizeof(FastSend),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = FastSend_new,
    .tp_dealloc = (destructor)FastSend_dealloc,
    .tp_traverse = (traverseproc)FastSend_traverse,
    .tp_clear = (inquiry)FastSend_clear,
    .tp_getattro = (getattrofunc)FastSend_getattro,
    .tp_getset = FastSend_getset,
    .tp_descr_get = FastSend_get,
    .tp_vectorcall_offset = offsetof(FastSend, vectorcall),
    .tp_call = PyVectorcall_Call,
};

int
sdk_send_init(PyObject *module)
{
    if (PyType_Ready(&FastSendType) < 0) {
        return -1;
    }
    s_hot_produce = PyUnicode_InternFromString("_hot_produce");
    s_known_topics = PyUnicode_InternFromString("_known_topics");
    s_send_general = PyUnicode_InternFromString("_send_general");
    s_value = PyUnicode_InternFromString("value");
    s_key = PyUnicode_InternFromString("key");
    s_headers = PyUnicode_InternFromString("headers");
    s_partition = PyUnicode_InternFromString("partition");
    s_timestamp_ms = PyUnicode_InternFromString("timestamp_ms");
    if (!s_hot_produce || !s_known_topics || !s_send_general || !s_value || !s_key
        || !s_headers || !s_partition || !s_timestamp_ms) {
        return -1;
    }
    Py_INCREF(&FastSendType);
    if (PyModule_AddObject(module, "FastSend", (PyObject *)&FastSendType) < 0) {
        Py_DECREF(&FastSendType);
        return -1;
    }
    return 0;
}
