"""Status codes, predicates and upstream spellings."""

import numpy as np
import pytest

from kubesched import Code, Status
from kubesched.framework.status import not_none_mask


@pytest.mark.parametrize(
    ("status", "success", "rejected", "skip", "wait"),
    [
        (Status(), True, False, False, False),
        (Status.unschedulable("Insufficient cpu"), False, True, False, False),
        (Status.unresolvable("node(s) didn't match"), False, True, False, False),
        (Status(Code.PENDING, "gated"), False, True, False, False),
        (Status(Code.ERROR, "boom"), False, False, False, False),
        (Status.skip(), False, False, True, False),
        (Status.wait(5), False, False, False, True),
    ],
    ids=["success", "unschedulable", "unresolvable", "pending", "error", "skip", "wait"],
)
def test_predicates(status, success, rejected, skip, wait):
    assert status.is_success() is success
    assert status.is_rejected() is rejected
    assert status.is_skip() is skip
    assert status.is_wait() is wait


def test_display_names_are_upstreams():
    assert [c.display for c in Code] == [
        "Success",
        "Error",
        "Unschedulable",
        "UnschedulableAndUnresolvable",
        "Wait",
        "Skip",
        "Pending",
    ]


def test_message_joins_reasons_and_plugin_is_set_once():
    s = Status.unschedulable("Insufficient cpu", "Insufficient memory")
    assert s.message() == "Insufficient cpu, Insufficient memory"
    assert s.with_plugin("NodeResourcesFit").plugin == "NodeResourcesFit"
    assert s.with_plugin("Other").plugin == "NodeResourcesFit"


def test_from_error_keeps_exception_and_text():
    err = ValueError("bad value")
    s = Status.from_error(err, "P")
    assert (s.code, s.reasons, s.plugin, s.error) == (Code.ERROR, ["bad value"], "P", err)
    assert Status.from_error(KeyError()).reasons == ["KeyError"]


def test_none_is_success_and_equality():
    assert Status.unschedulable("a") == Status.unschedulable("a")
    assert Status.unschedulable("a") != Status.unschedulable("b")
    assert Status.wait(3).timeout == 3
    assert "plugin='X'" in repr(Status(Code.ERROR, "e", plugin="X"))


_FAIL = Status(Code.UNSCHEDULABLE, "no")


@pytest.mark.parametrize(
    "values",
    [
        [None] * 100,
        [_FAIL] * 100,
        [None] * 60 + [_FAIL] * 40,
        [_FAIL, None] * 50,
        [None, Status(Code.SUCCESS)],
        [],
    ],
    ids=["all-none", "all-failing", "mostly-none", "alternating", "explicit-success", "empty"],
)
def test_not_none_mask_is_identity_with_none(values: list) -> None:
    expected = [v is not None for v in values]
    assert not_none_mask(values).tolist() == expected
    assert not_none_mask(np.array(values, dtype=object)).tolist() == expected
