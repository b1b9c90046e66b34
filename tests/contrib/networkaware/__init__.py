"""Tests of the network-aware plugins."""
