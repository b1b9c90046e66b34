"""Resilience sweeps: one simulation per failure, in parallel."""
