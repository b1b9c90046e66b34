"""Hook implementations may take any subset of a hook's parameters, by name."""

import pytest

from kubesched.framework.runtime.calls import positional_caller, spec_params


def test_spec_params_are_the_hookspec_parameters():
    assert spec_params("filter") == ("state", "pod", "pod_info", "node_info")
    assert spec_params("less") == ("pod_info1", "pod_info2")


class Impl:
    def full(self, state, pod, pod_info, node_info):
        return (state, pod, pod_info, node_info)

    def two(self, pod, node_info):
        return (pod, node_info)

    def one(self, node_info):
        return node_info

    def none(self):
        return "none"

    def three(self, node_info, state, pod):
        return (node_info, state, pod)

    def defaulted(self, pod, extra=1):
        return (pod, extra)

    def unknown(self, nodeinfo):
        return nodeinfo


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("full", ("S", "P", "I", "N")),
        ("two", ("P", "N")),
        ("one", "N"),
        ("none", "none"),
        ("three", ("N", "S", "P")),
        ("defaulted", ("P", 1)),
    ],
    ids=["all", "two", "one", "none", "reordered", "defaulted-ignored"],
)
def test_positional_caller(method, expected):
    caller = positional_caller(getattr(Impl(), method), "filter")
    assert caller("S", "P", "I", "N") == expected


def test_full_signature_is_called_directly():
    impl = Impl()
    assert positional_caller(impl.full, "filter") == impl.full


def test_unknown_parameter_is_an_error():
    with pytest.raises(TypeError, match=r"hook 'filter' has no parameter\(s\) \['nodeinfo'\]"):
        positional_caller(Impl().unknown, "filter")
