"""Tests of the Trimaran plugins."""
