/* The compiled core of the one record type in and the one out (issue #16): optional.
 *
 * sdk/core/records.py holds the same code in Python (PyRecordCore, _py_view, _py_last_positions
 * and OutputRecord's own named-tuple constructor, whose C twin is in _output.c) and uses these
 * where they were built. Both must behave the same: tests/sdk/core/test_records_core.py runs
 * the contract on both.
 *
 * Why compiled: per record, the Consumer, the Processor and the queue consumer build a
 * ConsumerRecord view, the handler reads its key and value, a Processor handler builds an
 * OutputRecord, and the Processor remembers the next offset per partition. In Python those are
 * a few hundred nanoseconds each (a property call per attribute read, a named tuple's
 * constructor frame, a tuple and a dict store per record); here they are C calls.
 */
#include "_speedups.h"
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *key;   /* the deserialized key (bytes for a raw view) */
    PyObject *value; /* the deserialized value */
    PyObject *raw;   /* the confluent_kafka.Message */
} RecordCore;

static PyObject *s_key;
static PyObject *s_value;
static PyObject *s_topic;
static PyObject *s_partition;
static PyObject *s_offset;
static PyObject *s_one;

static int
RecordCore_traverse(RecordCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->key);
    Py_VISIT(self->value);
    Py_VISIT(self->raw);
    return 0;
}

static int
RecordCore_clear(RecordCore *self)
{
    Py_CLEAR(self->key);
    Py_CLEAR(self->value);
    Py_CLEAR(self->raw);
    return 0;
}

static void
RecordCore_dealloc(RecordCore *self)
{
    PyObject_GC_UnTrack(self);
    RecordCore_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
call_raw(RecordCore *self, PyObject *name)
{
    if (self->raw == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_raw");
        return NULL;
    }
    return PyObject_CallMethodNoArgs(self->raw, name);
}

static PyObject *
RecordCore_topic(RecordCore *self, void *Py_UNUSED(closure))
{
    return call_raw(self, s_topic);
}

static PyObject *
RecordCore_partition(RecordCore *self, void *Py_UNUSED(closure))
{
    return call_raw(self, s_partition);
}

static PyObject *
RecordCore_offset(RecordCore *self, void *Py_UNUSED(closure))
{
    return call_raw(self, s_offset);
}

static PyGetSetDef RecordCore_getset[] = {
    {"topic", (getter)RecordCore_topic, NULL, "The topic.", NULL},
    {"partition", (getter)RecordCore_partition, NULL, "The partition.", NULL},
    {"offset", (getter)RecordCore_offset, NULL, "The offset.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* the same field twice: read-only for handlers, settable for the SDK's own loops. T_OBJECT_EX,
 * as the Python core's properties (AttributeError on a record whose field was never set, not
 * None): CPython 3.11+ specializes a read of such a member in the handler's bytecode
 * (LOAD_ATTR_SLOT) and not that of a T_OBJECT one, measured here 28 ns a read before, 17 after */
static PyMemberDef RecordCore_members[] = {
    {"key", T_OBJECT_EX, offsetof(RecordCore, key), READONLY, "The deserialized key."},
    {"value", T_OBJECT_EX, offsetof(RecordCore, value), READONLY, "The deserialized value."},
    {"raw", T_OBJECT_EX, offsetof(RecordCore, raw), READONLY, "The confluent_kafka.Message."},
    {"_key", T_OBJECT_EX, offsetof(RecordCore, key), 0, NULL},
    {"_value", T_OBJECT_EX, offsetof(RecordCore, value), 0, NULL},
    {"_raw", T_OBJECT_EX, offsetof(RecordCore, raw), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject RecordCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sdk.core._speedups.RecordCore",
    .tp_doc = "The compiled core of ConsumerRecord: key, value and the message it came from.",
    .tp_basicsize = sizeof(RecordCore),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)RecordCore_dealloc,
    .tp_traverse = (traverseproc)RecordCore_traverse,
    .tp_clear = (inquiry)RecordCore_clear,
    .tp_members = RecordCore_members,
    .tp_getset = RecordCore_getset,
};

static int
plain(PyObject *o)
{
    return o == Py_None || PyBytes_CheckExact(o);
}

/* cls is a RecordCore subclass (else TypeError, and 0 returned) */
int
sdk_record_class(PyObject *cls, const char *caller)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &RecordCoreType)) {
        PyErr_Format(PyExc_TypeError, "%s: cls must be a RecordCore subclass", caller);
        return 0;
    }
    return 1;
}

/* confluent_kafka.Message and its key and value methods (NULL: not found, by name only) */
static PyTypeObject *message_type;
static PyObject *message_key;
static PyObject *message_value;
static PyObject *message_topic;     /* for last_positions, as key and value for views */
static PyObject *message_partition;
static PyObject *message_offset;

static void
find_message_methods(void)
{
    PyObject *module = PyImport_ImportModule("confluent_kafka");
    PyObject *type = module == NULL ? NULL : PyObject_GetAttrString(module, "Message");
    Py_XDECREF(module);
    if (type != NULL && PyType_Check(type)) {
        message_key = PyObject_GetAttr(type, s_key);
        message_value = message_key == NULL ? NULL : PyObject_GetAttr(type, s_value);
        message_topic = message_value == NULL ? NULL : PyObject_GetAttr(type, s_topic);
        message_partition = message_topic == NULL ? NULL : PyObject_GetAttr(type, s_partition);
        message_offset = message_partition == NULL ? NULL : PyObject_GetAttr(type, s_offset);
    }
    if (message_offset == NULL) {
        Py_CLEAR(message_key);
        Py_CLEAR(message_value);
        Py_CLEAR(message_topic);
        Py_CLEAR(message_partition);
        Py_CLEAR(type);
        PyErr_Clear(); /* views and positions still work: by name */
    }
    message_type = (PyTypeObject *)type;
}

/* msg.name(): an exact confluent_kafka.Message through the method itself, without a lookup by
 * name per record (~14 ns of a queue worker's record in perf: _PyType_Lookup and
 * _PyObject_GetMethod, twice); a subclass (which may override it) or anything else by name */
static PyObject *
call_part(PyObject *msg, PyObject *method, PyObject *name)
{
    if (method != NULL && Py_IS_TYPE(msg, message_type)) {
        return PyObject_Vectorcall(method, &msg, 1, NULL);
    }
    return PyObject_CallMethodNoArgs(msg, name);
}

/* a view of class cls over msg with its key and value (both stolen) */
static PyObject *
make_view(PyTypeObject *cls, PyObject *msg, PyObject *key, PyObject *value)
{
    RecordCore *self;
    /* bytes (or None) and librdkafka's message cannot lead back to the view, so it can never
     * be part of a cycle: it is made untracked, out of the collector's young generation (the
     * loops make one per record; tp_alloc would track it, and untracking it after cost ~25 ns
     * a record between the two, perf). A view of deserialized objects is tracked. */
    if (plain(key) && plain(value) && PyType_IS_GC(cls)) {
        self = PyObject_GC_New(RecordCore, cls);
        if (self != NULL && cls->tp_basicsize > (Py_ssize_t)sizeof(RecordCore)) {
            memset((char *)self + sizeof(RecordCore), 0,
                   (size_t)cls->tp_basicsize - sizeof(RecordCore));
        }
    }
    else {
        self = (RecordCore *)cls->tp_alloc(cls, 0);
    }
    if (self == NULL) {
        Py_DECREF(key);
        Py_DECREF(value);
        return NULL;
    }
    self->key = key;
    self->value = value;
    Py_INCREF(msg);
    self->raw = msg;
    return (PyObject *)self;
}

PyObject *
sdk_next_view(PyObject **spare, PyTypeObject *cls, PyObject *msg)
{
    PyObject *key, *value, *old = *spare;
    *spare = NULL;
    key = call_part(msg, message_key, s_key);
    value = key == NULL ? NULL : call_part(msg, message_value, s_value);
    if (value == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(old);
        return NULL;
    }
    /* Nobody else holds old (the handler kept no reference): it is refilled instead of
     * freed and another allocated (alloc, dealloc and the collector's count, ~25 ns a
     * record offline). Nothing can tell: pymalloc hands the freed view's memory to the next
     * one anyway, so even id() is the same as without. Untracked and of cls, over bytes, so
     * it stays what make_view would have made. */
    if (old != NULL && Py_TYPE(old) == cls && Py_REFCNT(old) == 1
        && !(PyType_IS_GC(cls) && PyObject_GC_IsTracked(old)) && plain(key) && plain(value)) {
        RecordCore *self = (RecordCore *)old;
        Py_SETREF(self->key, key);
        Py_SETREF(self->value, value);
        Py_INCREF(msg);
        Py_SETREF(self->raw, msg);
        return old;
    }
    Py_XDECREF(old);
    return make_view(cls, msg, key, value);
}

PyObject *
sdk_new_view(PyTypeObject *cls, PyObject *msg)
{
    PyObject *spare = NULL;
    return sdk_next_view(&spare, cls, msg);
}

/* view(cls, msg): a record of class cls over msg, key and value as msg has them */
static PyObject *
view(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "view(cls, msg)");
        return NULL;
    }
    if (!sdk_record_class(args[0], "view")) {
        return NULL;
    }
    return sdk_new_view((PyTypeObject *)args[0], args[1]);
}

/* last_positions(messages, into): into[(topic, partition)] = offset + 1 of each partition's
 * last message. Walked from the end, so each partition's offset is read once; a message of the
 * same partition as the one after it (the common case: a fetch is runs of one partition) costs
 * two calls and a comparison. */
static PyObject *
last_positions(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq, *into, *seen = NULL, *prev_topic = NULL, *prev_part = NULL;
    Py_ssize_t i, n;
    if (nargs != 2 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "last_positions(messages, into: dict)");
        return NULL;
    }
    into = args[1];
    seq = PySequence_Fast(args[0], "last_positions: messages must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    seen = PySet_New(NULL);
    if (seen == NULL) {
        goto error;
    }
    for (i = n - 1; i >= 0; i--) {
        PyObject *m = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *topic, *part, *tp, *offset, *next;
        int same = 0, found;
        /* through the methods themselves, as a view reads key and value (offline, 500
         * records of 4 partitions: 51 ns a record by name, 32 this way) */
        part = call_part(m, message_partition, s_partition);
        if (part == NULL) {
            goto error;
        }
        topic = call_part(m, message_topic, s_topic);
        if (topic == NULL) {
            Py_DECREF(part);
            goto error;
        }
        if (prev_part != NULL) {
            same = PyObject_RichCompareBool(part, prev_part, Py_EQ);
            if (same == 1) {
                same = PyObject_RichCompareBool(topic, prev_topic, Py_EQ);
            }
            if (same < 0) {
                Py_DECREF(part);
                Py_DECREF(topic);
                goto error;
            }
        }
        Py_XSETREF(prev_part, part);
        Py_XSETREF(prev_topic, topic);
        if (same) {
            continue; /* a later message of this partition was counted */
        }
        tp = PyTuple_Pack(2, topic, part);
        if (tp == NULL) {
            goto error;
        }
        found = PySet_Contains(seen, tp);
        if (found != 0) {
            Py_DECREF(tp);
            if (found < 0) {
                goto error;
            }
            continue;
        }
        if (PySet_Add(seen, tp) < 0) {
            Py_DECREF(tp);
            goto error;
        }
        offset = call_part(m, message_offset, s_offset);
        if (offset == NULL) {
            Py_DECREF(tp);
            goto error;
        }
        next = PyNumber_Add(offset, s_one);
        Py_DECREF(offset);
        if (next == NULL || PyDict_SetItem(into, tp, next) < 0) {
            Py_XDECREF(next);
            Py_DECREF(tp);
            goto error;
        }
        Py_DECREF(next);
        Py_DECREF(tp);
    }
    Py_XDECREF(prev_part);
    Py_XDECREF(prev_topic);
    Py_DECREF(seen);
    Py_DECREF(seq);
    Py_RETURN_NONE;
error:
    Py_XDECREF(prev_part);
    Py_XDECREF(prev_topic);
    Py_XDECREF(seen);
    Py_DECREF(seq);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"view", (PyCFunction)(void (*)(void))view, METH_FASTCALL,
     "view(cls, msg) -> a record of class cls over msg (key and value as msg has them)."},
    {"output_new", (PyCFunction)(void (*)(void))sdk_output_new, METH_FASTCALL | METH_KEYWORDS,
     "output_new(cls, topic, value, key=None, headers=None, partition=None): a new record."},
    {"direct_calls", (PyCFunction)sdk_direct_calls, METH_O,
     "direct_calls(cls): calls of cls (OutputRecord) build the record without type.__call__."},
    {"calls_directly", (PyCFunction)sdk_calls_directly, METH_O,
     "calls_directly(cls) -> whether calls of cls build the record without type.__call__ now."},
    {"last_positions", (PyCFunction)(void (*)(void))last_positions, METH_FASTCALL,
     "last_positions(messages, into): into[(topic, partition)] = last offset + 1."},
    {"handle_run", (PyCFunction)(void (*)(void))sdk_handle_run, METH_FASTCALL,
     "handle_run(records, i, n, stop, handler, emit, cls, due_at, clock) -> "
     "(i, produced, record, error): the Processor's hot loop."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sdk.core._speedups",
    .m_doc = "The compiled core of the SDK's record types (optional).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *module;
    if (PyType_Ready(&RecordCoreType) < 0 || sdk_run_init() < 0 || sdk_output_init() < 0) {
        return NULL;
    }
    s_key = PyUnicode_InternFromString("key");
    s_value = PyUnicode_InternFromString("value");
    s_topic = PyUnicode_InternFromString("topic");
    s_partition = PyUnicode_InternFromString("partition");
    s_offset = PyUnicode_InternFromString("offset");
    s_one = PyLong_FromLong(1);
    if (!s_key || !s_value || !s_topic || !s_partition || !s_offset || !s_one) {
        return NULL;
    }
    find_message_methods();
    module = PyModule_Create(&speedups_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&RecordCoreType);
    if (PyModule_AddObject(module, "RecordCore", (PyObject *)&RecordCoreType) < 0) {
        Py_DECREF(&RecordCoreType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
