/* What the two C files of sdk.producer._speedups share: the delivery handle's struct and type,
 * and the one way a fast-path handle is made (_speedups.c defines them; _send.c uses them). */
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
} HandleCore;

extern PyTypeObject HandleCoreType;

/* ("on_delivery",): the kwnames of produce(topic, value, key, on_delivery=...) */
extern PyObject *sdk_on_delivery_names;

/* A pending handle of cls (a HandleCore subclass, not checked here) without __init__. */
PyObject *sdk_make_handle(PyTypeObject *cls, PyObject *owner, PyObject *topic, PyObject *value,
                          PyObject *key);

/* Adds FastSend to the module (0, or -1 with an exception set); after sdk_on_delivery_names. */
int sdk_send_init(PyObject *module);

#endif
