"""The optional compiled part of the SDK; everything else is in pyproject.toml.

``sdk.producer._speedups`` is the delivery handle's core in C (issue #16). It is optional: where
no C compiler is found the build goes on and the SDK uses the pure-Python twin of the same class
(``sdk.producer._handle``), which behaves the same, only slower per record.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sdk.producer._speedups",
            ["sdk/producer/_speedups.c"],
            optional=True,  # no compiler: the pure-Python handle is used
        )
    ]
)
