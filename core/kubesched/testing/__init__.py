"""Test helpers for plugin authors (and kubesched's own tests): builders, harnesses, fakes.

* objects: ``make_pod``, ``make_node`` (fluent, like upstream's ``st.MakePod()``) and
  ``objects_from`` (manifests as dicts, YAML text or files);
* a framework around plugins: ``make_framework``, ``framework_for``,
  ``profile_framework``, ``snapshot_of``, ``node_batch``, ``batch_verdicts`` (bad args raise
  ``kubesched.PluginArgsError``);
* fakes for the Handle: ``RecordingClient``, ``RecordingEventRecorder``,
  ``static_lister`` / ``StaticLister``, ``Nominator``;
* one extension point through the real runtime: ``run_filter`` (a ``FilterRun``),
  ``run_score`` (a ``ScoreRun``), and preemption's ``dry_run_preemption``;
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
from kubesched.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_node,
    make_pod,
    objects_from,
)
from kubesched.testing.fakes import (
    ClientCall,
    Nominator,
    RecordedEventCall,
    RecordingClient,
    RecordingEventRecorder,
    StaticLister,
    static_lister,
)
from kubesched.testing.framework import (
    FifoSort,
    RecordingBinder,
    batch_verdicts,
    make_framework,
    node_batch,
)
from kubesched.testing.preemption import (
    PreemptionDryRun,
    dry_run_preemption,
    dry_run_preemption_each_offset,
)
from kubesched.testing.run import (
    ExtensionPointError,
    FilterRun,
    ScoreRun,
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
    "ClientCall",
    "ExtensionPointError",
    "FifoSort",
    "FilterRun",
    "InvariantChecker",
    "InvariantViolation",
    "NodeBuilder",
    "Nominator",
    "PodBuilder",
    "PreemptionDryRun",
    "RecordedEventCall",
    "RecordingBinder",
    "RecordingClient",
    "RecordingEventRecorder",
    "ScoreRun",
    "StaticLister",
    "as_pod_info",
    "assert_batch_matches_per_node",
    "assert_scores",
    "assert_statuses",
    "batch_verdicts",
    "dry_run_preemption",
    "dry_run_preemption_each_offset",
    "framework_for",
    "make_framework",
    "make_node",
    "make_pod",
    "node_batch",
    "objects_from",
    "placements",
    "profile_framework",
    "run_filter",
    "run_score",
    "simulate_small",
    "snapshot_of",
    "static_lister",
]
