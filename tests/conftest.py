"""Shared test configuration: the sdk.testing fixtures, opted into as any user would.

pytest honours ``pytest_plugins`` only in a conftest it loads at start-up; this one sits above
every test directory, so it is, and its fixtures reach every conftest and test below it.
"""

pytest_plugins = ["sdk.testing.pytest_plugin"]
