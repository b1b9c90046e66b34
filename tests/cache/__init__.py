"""Tests of the scheduler cache, node tree and snapshot."""
