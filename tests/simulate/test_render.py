"""The human views: grouping of pending pods and filter reasons."""

from __future__ import annotations

from rich.console import Console

from kubesched.simulate import build_report, simulate
from kubesched.simulate.render import group_filters, render_explain, render_summary
from kubesched.testing import make_node, make_pod


def _report(explain=None):
    nodes = [
        make_node(f"n{i}").capacity(cpu="2", memory="4Gi", pods="10").zone("z").obj()
        for i in range(3)
    ]
    pods = [make_pod(f"big-{i}").req(cpu="3").obj() for i in range(7)]
    pods.append(make_pod("fits").req(cpu="1").obj())
    return build_report(simulate(nodes + pods, seed=0), explain=explain)


def test_pending_pods_with_one_diagnosis_share_a_line() -> None:
    console = Console(record=True, width=300, no_color=True)
    render_summary(_report(), console)
    text = console.export_text()
    assert "Pending pods (7)" in text
    assert (
        "7 pods (default/big-0, default/big-1, default/big-2, default/big-3, default/big-4 "
        "(+2 more)): 0/3 nodes are available" in text
    )


def test_filters_grouped_by_plugin_and_reason() -> None:
    report = _report(explain=["default/big-0"])
    groups = group_filters(report.pod("default/big-0"))
    assert groups == [
        (["n0", "n1", "n2"], "NodeResourcesFit: Insufficient cpu (preemption would not help)")
    ]
    console = Console(record=True, width=200, no_color=True)
    render_explain(report, "default/big-0", console)
    assert "n0, n1, n2: NodeResourcesFit: Insufficient cpu" in console.export_text()
