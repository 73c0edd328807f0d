/* The compiled core of a delivery handle (issue #16): optional, with a pure-Python twin.
 *
 * sdk/producer/_handle.py holds the same class in Python (PyHandleCore) and exports this one
 * as HandleCore where it was built. Both must behave the same: tests/sdk/producer/test_handle.py
 * runs its contract on both.
 *
 * Why compiled: per record, the Python handle cost send() a Python frame for the delivery
 * callback (librdkafka calls the handle), a class instantiation, and a garbage-collected object
 * per record in flight. Here the callback is a C function and a handle made by new_handle is
 * not tracked by the collector. That is safe because a handle drops its producer reference
 * (and the producer's HotPath, which send()'s fast path gives it) when it resolves: what it
 * keeps after that (topic, bytes, the delivered message or the translated error) cannot lead
 * back to it, so it is never part of a reference cycle the collector would have to find.
 */
#include "_speedups.h"
#include <structmember.h>

static PyObject *s_delivered;
static PyObject *s_hot;
static PyObject *s_callback;
static PyObject *s_failed;
static PyObject *s_one;

static void
HandleCore_dealloc(HandleCore *self)
{
    Py_XDECREF(self->owner);
    Py_XDECREF(self->state);
    Py_XDECREF(self->record);
    Py_XDECREF(self->topic);
    Py_XDECREF(self->value);
    Py_XDECREF(self->key);
    Py_XDECREF(self->hot);
    /* a Python subclass's dealloc (subtype_dealloc) releases its heap type itself */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* hot.delivered += 1 on a HotPath other than the C one (0, or -1 with an exception set) */
static int
count_on(PyObject *hot)
{
    int r;
    PyObject *count = PyObject_GetAttr(hot, s_delivered);
    if (count == NULL) {
        return -1;
    }
    Py_SETREF(count, PyNumber_Add(count, s_one));
    if (count == NULL) {
        return -1;
    }
    r = PyObject_SetAttr(hot, s_delivered, count);
    Py_DECREF(count);
    return r;
}

/* The delivery callback: keep the outcome, let go of the owner, count, tell on_delivery.
 * The outcome is on _state before _owner becomes None, so a thread in result() that sees no
 * owner sees the outcome too. */
static PyObject *
deliver(HandleCore *self, PyObject *err, PyObject *msg)
{
    PyObject *owner = self->owner, *hot;
    PyObject *result = NULL;
    if (owner == NULL || owner == Py_None) {
        Py_RETURN_NONE; /* resolved already: librdkafka reports a record once */
    }
    Py_INCREF(owner); /* ours until the end, whatever the callbacks do to the handle */
#if defined(__GNUC__)
    /* The record's value and key were last touched when it was sent, thousands of records
     * ago, and the handle's dealloc decrements them right after this callback: a cache miss
     * each (perf on a broker run: 6% of the producing process, on those two decrements).
     * Loading them now overlaps the misses with on_delivery. */
    __builtin_prefetch(self->value, 1, 1);
    __builtin_prefetch(self->key, 1, 1);
#endif
    hot = self->hot; /* ours now (or NULL): a resolved handle keeps nothing of its producer */
    self->hot = NULL;
    if (err == Py_None) {
        PyObject *callback = NULL, *r;
        Py_INCREF(msg);
        Py_XSETREF(self->state, msg);
        Py_INCREF(Py_None);
        Py_XSETREF(self->owner, Py_None); /* resolved: no reference to the producer */
        if (hot == NULL && (hot = PyObject_GetAttr(owner, s_hot)) == NULL) {
            goto done;
        }
        if (Py_IS_TYPE(hot, &HotPathType)) { /* the producer's: C fields, no lookups */
            ((HotPath *)hot)->delivered++;
            callback = ((HotPath *)hot)->callback;
            Py_XINCREF(callback);
        }
        else if (count_on(hot) < 0 || (callback = PyObject_GetAttr(hot, s_callback)) == NULL) {
            goto done; /* any other (the Python twin's): hot.delivered += 1 */
        }
        if (callback != NULL && callback != Py_None) {
            r = PyObject_CallOneArg(callback, (PyObject *)self);
            Py_DECREF(callback);
            if (r == NULL) {
                goto done;
            }
            Py_DECREF(r);
        }
        else {
            Py_XDECREF(callback);
        }
    }
    else {
        /* the owner translates the error, keeps it, sets _state and calls on_delivery */
        PyObject *r = PyObject_CallMethodObjArgs(owner, s_failed, (PyObject *)self, err, NULL);
        Py_INCREF(Py_None);
        Py_XSETREF(self->owner, Py_None);
        if (r == NULL) {
            goto done;
        }
        Py_DECREF(r);
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(hot);
    Py_DECREF(owner);
    return result;
}

static PyObject *
HandleCore_call(HandleCore *self, PyObject *args, PyObject *kwargs)
{
    PyObject *err, *msg;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "a delivery handle takes (err, msg)");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "DeliveryHandle", 2, 2, &err, &msg)) {
        return NULL;
    }
    return deliver(self, err, msg);
}

static PyObject *
HandleCore_deliver(HandleCore *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_deliver takes (err, msg)");
        return NULL;
    }
    return deliver(self, args[0], args[1]);
}

static PyMethodDef HandleCore_methods[] = {
    {"_deliver", (PyCFunction)(void (*)(void))HandleCore_deliver, METH_FASTCALL,
     "The librdkafka delivery callback of this record (the handle itself is callable too)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef HandleCore_members[] = {
    {"_owner", T_OBJECT_EX, offsetof(HandleCore, owner), 0, NULL},
    {"_state", T_OBJECT_EX, offsetof(HandleCore, state), 0, NULL},
    {"_record", T_OBJECT_EX, offsetof(HandleCore, record), 0, NULL},
    {"_topic", T_OBJECT_EX, offsetof(HandleCore, topic), 0, NULL},
    {"_value", T_OBJECT_EX, offsetof(HandleCore, value), 0, NULL},
    {"_key", T_OBJECT_EX, offsetof(HandleCore, key), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject HandleCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sdk.producer._speedups.HandleCore",
    .tp_doc = "The compiled core of DeliveryHandle: its slots and its delivery callback.",
    .tp_basicsize = sizeof(HandleCore),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)HandleCore_dealloc,
    .tp_call = (ternaryfunc)HandleCore_call,
    .tp_methods = HandleCore_methods,
    .tp_members = HandleCore_members,
};

PyObject *
sdk_make_handle(PyTypeObject *cls, PyObject *owner, PyObject *hot, PyObject *topic,
                PyObject *value, PyObject *key)
{
    /* A Python class is collected, so cls->tp_alloc would track the handle (and this would
     * untrack it: 25 ns a record between the two, perf). The collector can't see into this
     * struct's fields anyway (only a subclass's own slots, zeroed here), so a tracked handle
     * would cost a scan per collection and find nothing (see the header): it is made
     * untracked. */
    Py_ssize_t size = cls->tp_basicsize;
    HandleCore *self = PyType_IS_GC(cls) ? PyObject_GC_New(HandleCore, cls)
                                         : PyObject_New(HandleCore, cls);
    if (self == NULL) {
        return NULL;
    }
    if (size > (Py_ssize_t)sizeof(HandleCore)) {
        memset((char *)self + sizeof(HandleCore), 0, (size_t)size - sizeof(HandleCore));
    }
    Py_INCREF(owner);
    self->owner = owner;
    Py_INCREF(Py_None);
    self->state = Py_None;
    Py_INCREF(Py_None);
    self->record = Py_None;
    Py_INCREF(topic);
    self->topic = topic;
    Py_INCREF(value);
    self->value = value;
    Py_INCREF(key);
    self->key = key;
    Py_XINCREF(hot);
    self->hot = hot;
    return (PyObject *)self;
}

/* new_handle(cls, owner, topic, value, key): send()'s fast-path handle, without __init__ */
static PyObject *
new_handle(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *cls;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "new_handle(cls, owner, topic, value, key)");
        return NULL;
    }
    cls = (PyTypeObject *)args[0];
    if (!PyType_Check(cls) || !PyType_IsSubtype(cls, &HandleCoreType)) {
        PyErr_SetString(PyExc_TypeError, "new_handle: cls must be a HandleCore subclass");
        return NULL;
    }
    return sdk_make_handle(cls, args[1], NULL, args[2], args[3], args[4]);
}

/* Emitter(cls, produce, known, enqueue, span, callback): the Processor's output emitter, compiled.
 *
 * sdk/producer/_emitter.py holds the same function in Python (py_emitter) and says what it
 * does; tests/sdk/producer/test_emitter.py runs the contract on both. Per output: an output
 * with nothing to do (of class cls, headers and partition None, topic in known) goes straight to
 * produce(topic, value, key[, -1, callback]) with str encoded; any other output, and
 * any Exception from produce, goes to enqueue(out, span) (the general path, which waits on a
 * full queue and translates errors). A fast-path output is counted in the emitter's own
 * emitted (the span sums it when read: a call of span.add() per output cost ~100 ns, as much as
 * the rest of the emitter). */
typedef struct {
    PyObject_HEAD
    PyObject *cls;      /* OutputRecord: the exact class of a fast-path output */
    PyObject *produce;
    PyObject *known;    /* a set of topics */
    PyObject *enqueue;
    PyObject *span;     /* None or the transaction span */
    PyObject *callback; /* None: no delivery report asked */
    Py_ssize_t emitted; /* outputs queued on the fast path */
    vectorcallfunc vectorcall;
} Emitter;

PyObject *sdk_unassigned;

static int
Emitter_traverse(Emitter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->cls);
    Py_VISIT(self->produce);
    Py_VISIT(self->known);
    Py_VISIT(self->enqueue);
    Py_VISIT(self->span);
    Py_VISIT(self->callback);
    return 0;
}

static int
Emitter_clear(Emitter *self)
{
    Py_CLEAR(self->cls);
    Py_CLEAR(self->produce);
    Py_CLEAR(self->known);
    Py_CLEAR(self->enqueue);
    Py_CLEAR(self->span);
    Py_CLEAR(self->callback);
    return 0;
}

static void
Emitter_dealloc(Emitter *self)
{
    PyObject_GC_UnTrack(self);
    Emitter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* str as UTF-8 bytes (a new reference), anything else as it is */
static PyObject *
encoded(PyObject *o)
{
    if (PyUnicode_CheckExact(o)) {
        return PyUnicode_AsUTF8String(o);
    }
    Py_INCREF(o);
    return o;
}

/* the fast path: 1 queued, 0 not taken (no error set), -1 error */
static int
emit_fast(Emitter *self, PyObject *out)
{
    PyObject *topic, *value, *key, *r, *args[4];
    int known;
    if ((PyObject *)Py_TYPE(out) != self->cls || PyTuple_GET_SIZE(out) != 5
        || PyTuple_GET_ITEM(out, 3) != Py_None || PyTuple_GET_ITEM(out, 4) != Py_None) {
        return 0;
    }
    topic = PyTuple_GET_ITEM(out, 0);
    known = PySet_Contains(self->known, topic);
    if (known <= 0) {
        return known;
    }
    value = encoded(PyTuple_GET_ITEM(out, 1));
    if (value == NULL) {
        return -1;
    }
    key = encoded(PyTuple_GET_ITEM(out, 2));
    if (key == NULL) {
        Py_DECREF(value);
        return -1;
    }
    args[0] = NULL;
    args[1] = topic;
    args[2] = value;
    args[3] = key;
    if (self->callback == Py_None) {
        r = PyObject_Vectorcall(self->produce, args + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    else {
        PyObject *all[6] = {NULL, topic, value, key, sdk_unassigned, self->callback};
        r = PyObject_Vectorcall(self->produce, all + 1, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    Py_DECREF(value);
    Py_DECREF(key);
    if (r == NULL) {
        /* full queue, refusal: the general path waits / translates; KeyboardInterrupt and
         * the like propagate */
        if (PyErr_ExceptionMatches(PyExc_Exception)) {
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    Py_DECREF(r);
    self->emitted++;
    return 1;
}

static PyObject *
Emitter_vectorcall(Emitter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int done;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "an emitter takes one output record");
        return NULL;
    }
    done = emit_fast(self, args[0]);
    if (done < 0) {
        return NULL;
    }
    if (done) {
        Py_RETURN_NONE;
    }
    return PyObject_CallFunctionObjArgs(self->enqueue, args[0], self->span, NULL);
}

static PyObject *
Emitter_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    Emitter *self;
    PyObject *out_cls, *produce, *known, *enqueue, *span, *callback;
    static char *names[] = {"cls", "produce", "known", "enqueue", "span", "callback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO!OOO:Emitter", names, &PyType_Type,
                                     &out_cls, &produce, &PySet_Type, &known, &enqueue, &span,
                                     &callback)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)out_cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Emitter: cls must be a tuple subclass");
        return NULL;
    }
    self = (Emitter *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(out_cls);
    self->cls = out_cls;
    Py_INCREF(produce);
    self->produce = produce;
    Py_INCREF(known);
    self->known = known;
    Py_INCREF(enqueue);
    self->enqueue = enqueue;
    Py_INCREF(span);
    self->span = span;
    Py_INCREF(callback);
    self->callback = callback;
    self->vectorcall = (vectorcallfunc)Emitter_vectorcall;
    return (PyObject *)self;
}

static PyMemberDef Emitter_members[] = {
    {"emitted", T_PYSSIZET, offsetof(Emitter, emitted), READONLY,
     "Outputs queued on the fast path (the general path counts on the span itself)."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject EmitterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sdk.producer._speedups.Emitter",
    .tp_doc = "Emitter(cls, produce, known, enqueue, span, callback): queue one output record.",
    .tp_basicsize = sizeof(Emitter),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = Emitter_new,
    .tp_dealloc = (destructor)Emitter_dealloc,
    .tp_traverse = (traverseproc)Emitter_traverse,
    .tp_clear = (inquiry)Emitter_clear,
    .tp_vectorcall_offset = offsetof(Emitter, vectorcall),
    .tp_members = Emitter_members,
    .tp_call = PyVectorcall_Call,
};

static PyMethodDef module_methods[] = {
    {"new_handle", (PyCFunction)(void (*)(void))new_handle, METH_FASTCALL,
     "new_handle(cls, owner, topic, value, key) -> a pending handle of class cls."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sdk.producer._speedups",
    .m_doc = "The compiled core of the producer's delivery handle (optional).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *module;
    if (PyType_Ready(&HandleCoreType) < 0 || PyType_Ready(&EmitterType) < 0) {
        return NULL;
    }
    s_delivered = PyUnicode_InternFromString("delivered");
    s_hot = PyUnicode_InternFromString("_hot");
    s_callback = PyUnicode_InternFromString("callback");
    s_failed = PyUnicode_InternFromString("_failed");
    s_one = PyLong_FromLong(1);
    sdk_unassigned = PyLong_FromLong(-1);
    if (!s_delivered || !s_hot || !s_callback || !s_failed || !s_one || !sdk_unassigned) {
        return NULL;
    }
    module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&HandleCoreType);
    if (PyModule_AddObject(module, "HandleCore", (PyObject *)&HandleCoreType) < 0) {
        Py_DECREF(&HandleCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&EmitterType);
    if (PyModule_AddObject(module, "Emitter", (PyObject *)&EmitterType) < 0) {
        Py_DECREF(&EmitterType);
        Py_DECREF(module);
        return NULL;
    }
    if (sdk_hot_init(module) < 0 || sdk_send_init(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
