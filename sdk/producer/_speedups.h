/* What the C files of sdk.producer._speedups share: the delivery handle's struct and type, the
 * one way a fast-path handle is made (_speedups.c defines them), and the producer's HotPath
 * (_hot.c); _send.c uses them. */
#ifndef SDK_PRODUCER_SPEEDUPS_H
#define SDK_PRODUCER_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *owner;  /* the producer while pending; None once resolved */
    PyObject *state;  /* None pending; the message (or a subclass's value); the error */
    PyObject *record; /* the ProducerRecord; None until asked for (new_handle) */
    PyObject *topic;
    PyObject *value;
    PyObject *key;
    PyObject *hot; /* the owner's _hot, kept by send()'s fast path; NULL: read from the owner */
} HandleCore;

extern PyTypeObject HandleCoreType;

/* One producer's per-record state (_hot.c says what each field is) */
typedef struct {
    PyObject_HEAD
    PyObject *produce;  /* None (or NULL): send()'s fast path closed */
    PyObject *known;
    PyObject *callback; /* None (or NULL): no on_delivery */
    Py_ssize_t delivered;
} HotPath;

extern PyTypeObject HotPathType;

/* -1, the partition argument of produce(topic, value, key, -1, on_delivery): the configured
 * partitioner. Every argument is passed positionally, never on_delivery=: a keyword makes
 * confluent-kafka's argument parser build a dict and look its optional parameters up by C
 * string (540 against 343 ns a call, sdk._client.positional_produce). */
extern PyObject *sdk_unassigned;

/* A pending handle of cls (a HandleCore subclass, not checked here) without __init__; hot is
 * owner's _hot or NULL. */
PyObject *sdk_make_handle(PyTypeObject *cls, PyObject *owner, PyObject *hot, PyObject *topic,
                          PyObject *value, PyObject *key);

/* Adds HotPath to the module (0, or -1 with an exception set). */
int sdk_hot_init(PyObject *module);

/* Adds FastSend to the module (0, or -1 with an exception set); after sdk_unassigned. */
int sdk_send_init(PyObject *module);

#endif
