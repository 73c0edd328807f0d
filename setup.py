"""The optional compiled part of the SDK; everything else is in pyproject.toml.

``sdk.producer._speedups`` is the delivery handle's core, the output emitter and ``send()``'s
fast path in C, ``sdk.core._speedups`` the record
types' (issue #16). Both are optional: where no C compiler is found the build goes on and the SDK
uses their pure-Python twins (``sdk.producer._handle``, ``sdk.core.records``), which behave the
same, only slower per record.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sdk.producer._speedups",
            ["sdk/producer/_speedups.c", "sdk/producer/_send.c", "sdk/producer/_hot.c"],
            depends=["sdk/producer/_speedups.h"],
            optional=True,  # no compiler: the pure-Python handle is used
        ),
        Extension(
            "sdk.core._speedups",
            ["sdk/core/_speedups.c", "sdk/core/_run.c", "sdk/core/_output.c"],
            depends=["sdk/core/_speedups.h"],
            optional=True,  # no compiler: the pure-Python record core is used
        ),
    ]
)
