"""Tests of the framework integrations."""
