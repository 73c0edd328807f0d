"""Shared test configuration: fixtures come from the sdk.testing pytest plugin (entry point)."""
