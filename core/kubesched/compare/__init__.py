"""``kubesched compare``: the same manifests scheduled by kubesched and by a real scheduler
on a scratch API server, judged pod by pod.

    from kubesched.compare import compare
    report = compare(load_manifests(["examples/quickstart"]), kubeconfig="admin.kubeconfig")
    report.counts        # {"agree": 28, "tie": 2, "differ": 0, "undecided": 0}
"""

from kubesched.compare.driver import DEFAULT_PREFIX, compare
from kubesched.compare.replay import normalise_message
from kubesched.compare.report import ComparisonReport, NodeScore, PodComparison

__all__ = [
    "DEFAULT_PREFIX",
    "ComparisonReport",
    "NodeScore",
    "PodComparison",
    "compare",
    "normalise_message",
]
