"""FitError's message: upstream's FailedScheduling text, with one period after each part."""

from __future__ import annotations

import pytest

from kubesched import Code, Diagnosis, FitError, Status

NOT_HELPFUL = "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    ("diagnosis", "expected"),
    [
        (
            Diagnosis(node_to_status={"a": Status(Code.UNSCHEDULABLE, "Insufficient cpu")}),
            "0/3 nodes are available: 1 Insufficient cpu.",
        ),
        (
            Diagnosis(
                node_to_status={
                    n: Status(Code.UNSCHEDULABLE, "Insufficient cpu") for n in ("a", "b", "c")
                },
                post_filter_msg=NOT_HELPFUL,
            ),
            "0/3 nodes are available: 3 Insufficient cpu. " + NOT_HELPFUL,
        ),
        (
            Diagnosis(
                pre_filter_msg="node(s) didn't satisfy plugin(s) [NodeAffinity]",
                post_filter_msg="preemption: not eligible due to preemptionPolicy=Never.",
            ),
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [NodeAffinity]. "
            "preemption: not eligible due to preemptionPolicy=Never.",
        ),
        (
            Diagnosis(
                node_to_status={"a": Status(Code.UNSCHEDULABLE, "x")},
                post_filter_msg="no pod group",
            ),
            "0/3 nodes are available: 1 x. no pod group",
        ),
        (
            Diagnosis(absent_nodes_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gone")),
            "0/3 nodes are available: 3 gone.",
        ),
    ],
    ids=[
        "filter",
        "postfilter-fit-error",
        "prefilter-and-postfilter",
        "postfilter-as-is",
        "absent",
    ],
)
def test_fit_error_message(diagnosis: Diagnosis, expected: str) -> None:
    msg = str(FitError("default/p", 3, diagnosis))
    assert msg == expected
    assert not msg.endswith("..")
