/* HotPath: what the per-record paths of one producer read (issue #16); optional, and its twin
 * is sdk/producer/_handle.py's PyHotPath.
 *
 * One per Producer (its _hot attribute, never replaced): produce, the client's produce while
 * send()'s fast path may be taken (None otherwise); known, the set of topics whose lookup
 * succeeded; callback, the user's on_delivery (None: none); delivered, the records
 * acknowledged so far (Producer.delivered reads it).
 *
 * Why: send() read two producer attributes per record, and each delivery callback read, added
 * and stored producer.delivered and read producer._user_callback; an attribute of a Python
 * object is a type lookup and a dict lookup (about 15 ns each, offline), and the count a new
 * int above 256. Here send() reads one attribute and the callback one, and the rest are C
 * fields.
 */
#include "_speedups.h"
#include <structmember.h>

static int
HotPath_traverse(HotPath *self, visitproc visit, void *arg)
{
    Py_VISIT(self->produce); /* the client's bound method: the client's callbacks may lead back */
    Py_VISIT(self->known);
    Py_VISIT(self->callback);
    return 0;
}

static int
HotPath_clear(HotPath *self)
{
    Py_CLEAR(self->produce);
    Py_CLEAR(self->known);
    Py_CLEAR(self->callback);
    return 0;
}

static void
HotPath_dealloc(HotPath *self)
{
    PyObject_GC_UnTrack(self);
    HotPath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
HotPath_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    HotPath *self;
    PyObject *known, *callback = Py_None;
    static char *names[] = {"known", "callback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|O:HotPath", names, &PySet_Type, &known,
                                     &callback)) {
        return NULL;
    }
    self = (HotPath *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(Py_None);
    self->produce = Py_None;
    Py_INCREF(known);
    self->known = known;
    Py_INCREF(callback);
    self->callback = callback;
    self->delivered = 0;
    return (PyObject *)self;
}

/* T_OBJECT: `del` leaves NULL, which Python reads as None and the C readers take as None */
static PyMemberDef HotPath_members[] = {
    {"produce", T_OBJECT, offsetof(HotPath, produce), 0,
     "The client's produce while send()'s fast path may be taken, else None."},
    {"known", T_OBJECT, offsetof(HotPath, known), READONLY,
     "The topics whose lookup succeeded (only these take the fast path)."},
    {"callback", T_OBJECT, offsetof(HotPath, callback), 0,
     "The user's on_delivery, or None."},
    {"delivered", T_PYSSIZET, offsetof(HotPath, delivered), 0, "Records acknowledged so far."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject HotPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sdk.producer._speedups.HotPath",
    .tp_doc = "HotPath(known, callback=None): what one producer's per-record paths read.",
    .tp_basicsize = sizeof(HotPath),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = HotPath_new,
    .tp_dealloc = (destructor)HotPath_dealloc,
    .tp_traverse = (traverseproc)HotPath_traverse,
    .tp_clear = (inquiry)HotPath_clear,
    .tp_members = HotPath_members,
};

int
sdk_hot_init(PyObject *module)
{
    if (PyType_Ready(&HotPathType) < 0) {
        return -1;
    }
    Py_INCREF(&HotPathType);
    if (PyModule_AddObject(module, "HotPath", (PyObject *)&HotPathType) < 0) {
        Py_DECREF(&HotPathType);
        return -1;
    }
    return 0;
}
