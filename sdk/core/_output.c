/* OutputRecord's constructor in C (issue #16): optional, as the rest of sdk.core._speedups.
 *
 * sdk/core/records.py makes output_new the named tuple's __new__ and, with direct_calls, the
 * class's own call; tests/sdk/core/test_records_core.py checks both against the named tuple
 * Python would build (what it builds, what it refuses, a subclass, a patched class).
 */
#include "_speedups.h"

static PyObject *s_fields[5]; /* OutputRecord's field names, in order */

int
sdk_output_init(void)
{
    static const char *fields[5] = {"topic", "value", "key", "headers", "partition"};
    int i;
    for (i = 0; i < 5; i++) {
        s_fields[i] = PyUnicode_InternFromString(fields[i]);
        if (s_fields[i] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* A record of class cls from a call's arguments (topic, value, key=None, headers=None,
 * partition=None), positional args[0:nargs] then keyword values args[nargs:] named by kwnames:
 * what OutputRecord's named-tuple constructor builds and refuses. */
static PyObject *
build_output(PyTypeObject *cls, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *items[5] = {NULL, NULL, Py_None, Py_None, Py_None};
    PyObject *self;
    Py_ssize_t i, j, nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 5) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most 5 arguments (%zd given)",
                     cls->tp_name, nargs);
        return NULL;
    }
    for (i = 0; i < nargs; i++) {
        items[i] = args[i];
    }
    for (j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j);
        for (i = 0; i < 5; i++) {
            if (name == s_fields[i] || PyUnicode_Compare(name, s_fields[i]) == 0) {
                break;
            }
        }
        if (i == 5) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         cls->tp_name, name);
            return NULL;
        }
        if (i < nargs) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'",
                         cls->tp_name, name);
            return NULL;
        }
        items[i] = args[nargs + j];
    }
    for (i = 0; i < 2; i++) {
        if (items[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument: '%U'",
                         cls->tp_name, s_fields[i]);
            return NULL;
        }
    }
    self = cls->tp_alloc(cls, 5);
    if (self == NULL) {
        return NULL;
    }
    for (i = 0; i < 5; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(self, i, items[i]);
    }
    return self;
}

/* output_new(cls, topic, value, key=None, headers=None, partition=None): OutputRecord.__new__ */
PyObject *
sdk_output_new(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    if (nargs < 1 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "OutputRecord.__new__(cls, ...)");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "OutputRecord.__new__: cls must be a tuple subclass");
        return NULL;
    }
    return build_output((PyTypeObject *)args[0], args + 1, nargs - 1, kwnames);
}

/* The class direct_calls was given and its version tag then: CPython gives a class a new tag
 * whenever it (or a base of it) is changed, and an assignment to its __new__ or __init__ is such
 * a change (a test that patches it, say). */
static PyTypeObject *direct_class;
static unsigned int direct_version;

/* whether cls has a version tag now (0 is never one) */
static int
valid_tag(PyTypeObject *cls)
{
#ifdef Py_TPFLAGS_VALID_VERSION_TAG
    if (!(cls->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
        return 0;
    }
#endif
    return cls->tp_version_tag != 0;
}

/* Whether cls may be called directly: output_new as its __new__, object's __init__, no
 * instance dict, a tuple class of Python's (1, 0 if not, -1 with an exception set). Looking
 * __new__ up also gives cls a valid version tag if it had none. */
static int
fit(PyTypeObject *cls)
{
    PyObject *new = PyObject_GetAttrString((PyObject *)cls, "__new__");
    int ours;
    if (new == NULL) {
        return -1;
    }
    ours = PyCFunction_Check(new)
           && PyCFunction_GET_FUNCTION(new) == (PyCFunction)(void (*)(void))sdk_output_new;
    Py_DECREF(new);
    return ours && (cls->tp_flags & Py_TPFLAGS_HEAPTYPE) && PyType_IsSubtype(cls, &PyTuple_Type)
           && cls->tp_init == PyBaseObject_Type.tp_init
           && cls->tp_basicsize == PyTuple_Type.tp_basicsize && cls->tp_dictoffset == 0
           && valid_tag(cls);
}

/* OutputRecord(...) itself: the class's vectorcall (see direct_calls). */
static PyObject *
output_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyTypeObject *cls = (PyTypeObject *)callable;
    if (!valid_tag(cls) || cls->tp_version_tag != direct_version) {
        /* The class was changed since. Mostly harmless: pickle caches __slotnames__ on it the
         * first time it pickles a record. Still fit: go on with the new tag. Otherwise (a
         * patched __new__ or __init__): from now on called the usual way, which honours it. */
        int still = fit(cls); /* only direct_class has this vectorcall: never inherited */
        if (still < 0) {
            return NULL;
        }
        if (!still) {
            cls->tp_vectorcall = NULL;
            return PyObject_Vectorcall(callable, args, nargsf, kwnames);
        }
        direct_version = cls->tp_version_tag;
    }
    return build_output(cls, args, PyVectorcall_NARGS(nargsf), kwnames);
}

/* direct_calls(cls): OutputRecord(...) calls build_output at once.
 *
 * Why: a class whose __new__ is set in Python is called through type.__call__ (a tuple of the
 * arguments), its __new__ slot (the class looked up, a second tuple with cls in front) and the
 * staticmethod: ~150 ns a call measured here, against ~40 for a plain tuple, and a Processor
 * handler builds one per output. CPython calls a class through its tp_vectorcall where it has
 * one (never inherited: a subclass takes the usual way, through output_new). What
 * type.__call__ would add after __new__, __init__, is object's, which does nothing here. So
 * the class must be fit (above) and stay so: a change to it (a new version tag) is checked
 * again at the next call. */
PyObject *
sdk_direct_calls(PyObject *Py_UNUSED(module), PyObject *cls_obj)
{
    PyTypeObject *cls;
    int ok;
    if (!PyType_Check(cls_obj)) {
        PyErr_SetString(PyExc_TypeError, "direct_calls(cls): cls must be a class");
        return NULL;
    }
    cls = (PyTypeObject *)cls_obj;
    ok = fit(cls);
    if (ok < 0) {
        return NULL;
    }
    if (!ok || direct_class != NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "direct_calls(cls): cls must be a tuple class of Python's with "
                        "output_new as __new__, no __init__ and no instance dict (once)");
        return NULL;
    }
    Py_INCREF(cls);
    direct_class = cls;
    direct_version = cls->tp_version_tag;
    cls->tp_vectorcall = output_vectorcall;
    Py_RETURN_NONE;
}

/* calls_directly(cls): whether calls of cls take output_vectorcall now (tests, diagnostics) */
PyObject *
sdk_calls_directly(PyObject *Py_UNUSED(module), PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "calls_directly(cls): cls must be a class");
        return NULL;
    }
    return PyBool_FromLong(((PyTypeObject *)cls)->tp_vectorcall == output_vectorcall);
}
