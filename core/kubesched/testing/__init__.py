"""Test helpers for plugin authors (and kubesched's own tests): builders, harnesses, fixtures.

* builders: ``make_pod``, ``make_node`` (fluent, like upstream's ``st.MakePod()``);
* a framework around plugins: ``make_framework``, ``framework_for``,
  ``profile_framework``, ``snapshot_of``, ``node_batch``;
* one extension point through the real runtime: ``run_filter``, ``run_score``;
* a whole simulation: ``simulate_small``, ``placements``; its guarantees:
  ``InvariantChecker`` (``simulate(..., check_invariants=True)`` does the wiring);
* assertions with readable diffs: ``assert_statuses``, ``assert_scores``,
  ``assert_batch_matches_per_node``.

The same helpers are pytest fixtures (``embedded_cluster``, ``make_framework``,
``framework_for``, ``snapshot``, ``simulate_small``) through the ``kubesched`` pytest
plugin that kubesched registers (``kubesched.testing.pytest_plugin``).
"""

from kubesched.simulate.invariants import InvariantChecker, InvariantViolation
from kubesched.testing.assertions import (
    assert_batch_matches_per_node,
    assert_scores,
    assert_statuses,
)
from kubesched.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod
from kubesched.testing.framework import FifoSort, RecordingBinder, make_framework, node_batch
from kubesched.testing.run import (
    ExtensionPointError,
    as_pod_info,
    framework_for,
    placements,
    profile_framework,
    run_filter,
    run_score,
    simulate_small,
    snapshot_of,
)

__all__ = [
    "ExtensionPointError",
    "FifoSort",
    "InvariantChecker",
    "InvariantViolation",
    "NodeBuilder",
    "PodBuilder",
    "RecordingBinder",
    "as_pod_info",
    "assert_batch_matches_per_node",
    "assert_scores",
    "assert_statuses",
    "framework_for",
    "make_framework",
    "make_node",
    "make_pod",
    "node_batch",
    "placements",
    "profile_framework",
    "run_filter",
    "run_score",
    "simulate_small",
    "snapshot_of",
]
