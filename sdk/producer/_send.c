/* FastSend: Producer.send() with its fast path compiled (issue #16); optional, and its twin is
 * the Python method itself.
 *
 * FastSend(func, handle_cls) wraps the Python function Producer.send. It is a method descriptor
 * (Py_TPFLAGS_METHOD_DESCRIPTOR: producer.send(...) calls it with the producer as the first
 * argument, and producer.send binds like a function), and it passes everything it does not take
 * to func unchanged, so the Python method stays the one definition of what send() does.
 *
 * It takes the call send()'s own fast path takes, and does the same. The call: the producer's
 * _hot.produce is set (the client's produce: open, bytes in, librdkafka places, plain handles,
 * nothing observed), the topic is an exact str in _hot.known, the value bytes or None, the
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

static PyObject *s_hot;
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

/* The fast path of producer.send(*args) (args without the producer; hot is producer._hot, or
 * NULL: read it here). Returns the handle, NULL with an error, or NULL without one: not taken. */
static PyObject *
send_fast(FastSend *self, PyObject *producer, PyObject *hot, PyObject *const *args,
          Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *topic, *value = Py_None, *key = Py_None;
    PyObject *produce, *known, *handle, *r;
    Py_ssize_t i, nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    int contains;

    if (nargs < 1 || nargs > 2) {
        return NULL; /* func says what is wrong */
    }
    topic = args[0];
    if (nargs == 2) {
        value = args[1];
    }
    for (i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i), *arg = args[nargs + i];
        if (is_name(name, s_key)) {
            key = arg;
        }
        else if (nargs == 1 && is_name(name, s_value)) {
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
    if (hot != NULL) {
        Py_INCREF(hot);
    }
    else if ((hot = PyObject_GetAttr(producer, s_hot)) == NULL) {
        return NULL;
    }
    /* the C HotPath (a Python one: this build's twin was not used, so func decides) */
    produce = Py_IS_TYPE(hot, &HotPathType) ? ((HotPath *)hot)->produce : NULL;
    known = produce == NULL ? NULL : ((HotPath *)hot)->known;
    if (produce == NULL || produce == Py_None || known == NULL) { /* known: a set (HotPath_new) */
        Py_DECREF(hot);
        return NULL;
    }
    contains = PySet_Contains(known, topic);
    if (contains <= 0) {
        Py_DECREF(hot);
        return NULL;
    }
    Py_INCREF(produce); /* ours: the call below may run code that reopens the path */
    handle = sdk_make_handle((PyTypeObject *)self->handle_cls, producer, hot, topic, value, key);
    Py_DECREF(hot);
    if (handle == NULL) {
        Py_DECREF(produce);
        return NULL;
    }
    {
        PyObject *call[6] = {NULL, topic, value, key, sdk_unassigned, handle};
        r = PyObject_Vectorcall(produce, call + 1, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
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

/* Producer.send(producer, ...), and producer.send(...) (the interpreter calls a method
 * descriptor with the producer first, binding nothing) */
static PyObject *
FastSend_vectorcall(FastSend *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *handle = nargs < 1 ? NULL : send_fast(self, args[0], NULL, args + 1, nargs - 1,
                                                    kwnames);
    if (handle != NULL || PyErr_Occurred()) {
        return handle;
    }
    return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
}

/* BoundSend: producer.send kept as a value (send = producer.send), the method object of the
 * producer's send. It behaves as a bound method (__self__, __func__, signature, equality), and
 * it keeps producer._hot, which is made with the producer and never replaced, so a call reads
 * no producer attribute: the idiom of a hot loop (the raw peer binds produce the same way)
 * saves the per-record _hot lookup (about 15 ns, offline). */
typedef struct {
    PyObject_HEAD
    FastSend *send;
    PyObject *producer;
    PyObject *hot;
    vectorcallfunc vectorcall;
} BoundSend;

static PyTypeObject BoundSendType;

static PyObject *
BoundSend_vectorcall(BoundSend *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *handle, *method, *r;
    handle = send_fast(self->send, self->producer, self->hot, args, PyVectorcall_NARGS(nargsf),
                       kwnames);
    if (handle != NULL || PyErr_Occurred()) {
        return handle;
    }
    method = PyMethod_New(self->send->func, self->producer); /* every other call: func's */
    if (method == NULL) {
        return NULL;
    }
    r = PyObject_Vectorcall(method, args, nargsf, kwnames);
    Py_DECREF(method);
    return r;
}

static int
BoundSend_traverse(BoundSend *self, visitproc visit, void *arg)
{
    Py_VISIT(self->send);
    Py_VISIT(self->producer);
    Py_VISIT(self->hot);
    return 0;
}

static int
BoundSend_clear(BoundSend *self)
{
    Py_CLEAR(self->send);
    Py_CLEAR(self->producer);
    Py_CLEAR(self->hot);
    return 0;
}

static void
BoundSend_dealloc(BoundSend *self)
{
    PyObject_GC_UnTrack(self);
    BoundSend_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* __self__, __func__ and __wrapped__ (a method object: inspect.signature drops self, as for a
 * bound method); __name__, __qualname__, __module__ and __doc__ are the Python method's */
static PyObject *
BoundSend_getattro(BoundSend *self, PyObject *name)
{
    if (PyUnicode_Check(name)) {
        if (PyUnicode_CompareWithASCIIString(name, "__self__") == 0) {
            Py_INCREF(self->producer);
            return self->producer;
        }
        if (PyUnicode_CompareWithASCIIString(name, "__func__") == 0) {
            Py_INCREF(self->send);
            return (PyObject *)self->send;
        }
        if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
            return PyMethod_New(self->send->func, self->producer);
        }
        if (PyUnicode_CompareWithASCIIString(name, "__name__") == 0
            || PyUnicode_CompareWithASCIIString(name, "__qualname__") == 0
            || PyUnicode_CompareWithASCIIString(name, "__module__") == 0
            || PyUnicode_CompareWithASCIIString(name, "__doc__") == 0) {
            return PyObject_GetAttr(self->send->func, name);
        }
    }
    return PyObject_GenericGetAttr((PyObject *)self, name);
}

static PyObject *
BoundSend_repr(BoundSend *self)
{
    PyObject *name = PyObject_GetAttrString(self->send->func, "__qualname__"), *r;
    if (name == NULL) {
        return NULL;
    }
    r = PyUnicode_FromFormat("<bound method %S of %R>", name, self->producer);
    Py_DECREF(name);
    return r;
}

/* equal: the same send of the same producer (a bound method's rule) */
static PyObject *
BoundSend_richcompare(PyObject *a, PyObject *b, int op)
{
    int eq;
    if ((op != Py_EQ && op != Py_NE) || !Py_IS_TYPE(a, &BoundSendType)
        || !Py_IS_TYPE(b, &BoundSendType)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    eq = ((BoundSend *)a)->producer == ((BoundSend *)b)->producer
         && ((BoundSend *)a)->send == ((BoundSend *)b)->send;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t
BoundSend_hash(BoundSend *self)
{
    Py_hash_t h = (Py_hash_t)((size_t)self->producer >> 4) ^ (Py_hash_t)((size_t)self->send >> 4);
    return h == -1 ? -2 : h;
}

static PyTypeObject BoundSendType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sdk.producer._speedups.BoundSend",
    .tp_basicsize = sizeof(BoundSend),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)BoundSend_dealloc,
    .tp_traverse = (traverseproc)BoundSend_traverse,
    .tp_clear = (inquiry)BoundSend_clear,
    .tp_getattro = (getattrofunc)BoundSend_getattro,
    .tp_repr = (reprfunc)BoundSend_repr,
    .tp_richcompare = BoundSend_richcompare,
    .tp_hash = (hashfunc)BoundSend_hash,
    .tp_vectorcall_offset = offsetof(BoundSend, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* producer.send: a BoundSend; a plain method object where the producer has no _hot yet */
static PyObject *
FastSend_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type))
{
    BoundSend *bound;
    PyObject *hot;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    hot = PyObject_GetAttr(obj, s_hot);
    if (hot == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL;
        }
        PyErr_Clear(); /* during __init__: the method itself */
        return PyMethod_New(self, obj);
    }
    bound = PyObject_GC_New(BoundSend, &BoundSendType);
    if (bound == NULL) {
        Py_DECREF(hot);
        return NULL;
    }
    Py_INCREF(self);
    bound->send = (FastSend *)self;
    Py_INCREF(obj);
    bound->producer = obj;
    bound->hot = hot;
    bound->vectorcall = (vectorcallfunc)BoundSend_vectorcall;
    PyObject_GC_Track(bound);
    return (PyObject *)bound;
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
    if (PyType_Ready(&FastSendType) < 0 || PyType_Ready(&BoundSendType) < 0) {
        return -1;
    }
    s_hot = PyUnicode_InternFromString("_hot");
    s_send_general = PyUnicode_InternFromString("_send_general");
    s_value = PyUnicode_InternFromString("value");
    s_key = PyUnicode_InternFromString("key");
    s_headers = PyUnicode_InternFromString("headers");
    s_partition = PyUnicode_InternFromString("partition");
    s_timestamp_ms = PyUnicode_InternFromString("timestamp_ms");
    if (!s_hot || !s_send_general || !s_value || !s_key
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
