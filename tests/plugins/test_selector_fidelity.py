"""Label selectors in the built-ins parsed as upstream: labels.NewRequirement's checks and texts,
InterPodAffinity's parse errors, node affinity terms that do not parse."""

from __future__ import annotations

import pytest

from kubesched import Code
from kubesched.api import LabelSelector, LabelSelectorError, Pod, compile_label_selector
from kubesched.testing import (
    ExtensionPointError,
    assert_statuses,
    framework_for,
    make_node,
    make_pod,
    run_filter,
    run_score,
)

HOST = "kubernetes.io/hostname"
BAD = "{{.bad-value.}}"
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
KEY_NAME_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"matchLabels": {"app": "web"}}, None),
        (
            {"matchLabels": {"app": BAD}},
            f'values[0][app]: Invalid value: "{BAD}": {LABEL_VALUE_ERR}',
        ),
        ({"matchLabels": {"-app": "web"}}, f'key: Invalid value: "-app": {KEY_NAME_ERR}'),
        (
            {"matchExpressions": [{"key": "app", "operator": "In"}]},
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set "
            "can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["ok", BAD]}]},
            f'values[1][app]: Invalid value: "{BAD}": {LABEL_VALUE_ERR}',
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: values set must be empty for exists and '
            "does not exist",
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "Like", "values": ["x"]}]},
            '"Like" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "-k", "operator": "In", "values": ["-v"]}]},
            f'[key: Invalid value: "-k": {KEY_NAME_ERR}, '
            f'values[0][-k]: Invalid value: "-v": {LABEL_VALUE_ERR}]',
        ),
        ({"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]}, "key: Invalid value"),
    ],
    ids=[
        "valid",
        "bad-match-label-value",
        "bad-match-label-key",
        "in-without-values",
        "bad-notin-value",
        "exists-with-values",
        "unknown-operator",
        "key-and-value-aggregated",
        "key-two-slashes",
    ],
)
def test_label_selector_requirements_as_new_requirement(selector, message) -> None:
    sel = LabelSelector.model_validate(selector)
    if message is None:
        assert compile_label_selector(sel).matches({"app": "web"})
        return
    with pytest.raises(LabelSelectorError) as err:
        compile_label_selector(sel)
    assert str(err.value).startswith(message)


def _nodes():
    return [make_node(n).labels({HOST: n, "app": "x"}) for n in ("a", "b")]


def _unvalidated(builder) -> Pod:
    """A pod kube-apiserver v1.36 refuses to create (an invalid label value in a selector)
    but keeps serving when it was created before that check (upstream's
    AllowInvalidLabelValueInSelector on update): the scheduler must still handle it."""
    return Pod.model_validate(builder.manifest())


BAD_AFFINITY = _unvalidated(make_pod("p").pod_affinity(HOST, {"app": BAD}))
BAD_PREFERRED = _unvalidated(make_pod("p").pod_affinity(HOST, {"app": BAD}, weight=5))
BAD_ANTI = _unvalidated(
    make_pod("p").pod_anti_affinity(
        HOST, {"matchExpressions": [{"key": "app", "operator": "In", "values": [BAD]}]}
    )
)


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (
            BAD_AFFINITY,
            f'parsing pod: requiredAffinityTerms: values[0][app]: Invalid value: "{BAD}": '
            + LABEL_VALUE_ERR,
        ),
        (
            BAD_ANTI,
            f'parsing pod: requiredAntiAffinityTerms: values[0][app]: Invalid value: "{BAD}": '
            + LABEL_VALUE_ERR,
        ),
        (
            BAD_PREFERRED,
            f'parsing pod: preferredAffinityTerms: values[0][app]: Invalid value: "{BAD}": '
            + LABEL_VALUE_ERR,
        ),
    ],
    ids=["required-affinity", "required-anti-affinity", "preferred-affinity"],
)
def test_inter_pod_affinity_pre_filter_reports_the_parse_error(pod, message) -> None:
    run = run_filter(framework_for("InterPodAffinity"), pod, _nodes())
    assert run.pre_filter.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert run.pre_filter.message() == message
    assert_statuses(run, dict.fromkeys("ab", (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)))


def test_inter_pod_affinity_pre_score_errors_on_the_parse_error() -> None:
    with pytest.raises(ExtensionPointError) as err:
        run_score(framework_for("InterPodAffinity"), BAD_PREFERRED, _nodes(), pre_filter=False)
    assert err.value.extension_point == "PreScore"
    assert err.value.status.code is Code.ERROR
    # The runtime names the plugin before the plugin's own message.
    assert err.value.status.message() == (
        'running PreScore plugin "InterPodAffinity": failed to parse pod: '
        f'preferredAffinityTerms: values[0][app]: Invalid value: "{BAD}": {LABEL_VALUE_ERR}'
    )


def test_pod_with_several_invalid_kinds_of_terms_aggregates_them() -> None:
    from kubesched import PodInfo

    pod = _unvalidated(
        make_pod("p").pod_affinity(HOST, {"app": BAD}).pod_anti_affinity(HOST, {"app": BAD})
    )
    info = PodInfo(pod)
    assert info.required_affinity_terms == () and info.required_anti_affinity_terms == ()
    assert info.parse_error is not None
    assert info.parse_error.startswith("[requiredAffinityTerms: values[0][app]")
    assert ", requiredAntiAffinityTerms: values[0][app]" in info.parse_error


@pytest.mark.parametrize(
    ("operator", "values", "labels", "expected"),
    [
        ("In", ["x"], {"app": "x"}, None),
        ("In", ["x", BAD], {"app": "x"}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        ("NotIn", ["y"], {"app": "x"}, None),
        ("NotIn", [BAD], {"app": "x"}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        ("NotIn", [BAD], {}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        ("Exists", [], {"-bad-key": "x"}, None),
    ],
    ids=[
        "in-valid",
        "in-invalid-value",
        "notin-valid",
        "notin-invalid-value",
        "notin-invalid-value-label-absent",
        "valid-term",
    ],
)
def test_node_affinity_term_with_an_invalid_value_matches_no_node(
    operator, values, labels, expected
) -> None:
    key = "app" if operator != "Exists" else "zone"
    pod = make_pod("p").node_affinity_in(key, values, operator)
    if operator == "Exists":
        labels = {"zone": "z"}
    run = run_filter(framework_for("NodeAffinity"), pod, [make_node("n").labels(labels)])
    assert_statuses(run, {"n": expected})


def test_an_invalid_term_does_not_hide_a_valid_one() -> None:
    pod = (
        make_pod("p")
        .node_affinity_in("app", [BAD], "NotIn")  # matches nothing
        .node_affinity_in("zone", ["z"])  # ORed: still matches n
    )
    run = run_filter(
        framework_for("NodeAffinity"),
        pod,
        [make_node("n").labels(zone="z"), make_node("m").labels(zone="y")],
    )
    assert_statuses(run, {"n": None, "m": Code.UNSCHEDULABLE_AND_UNRESOLVABLE})


def test_spread_constraint_with_an_invalid_selector_is_an_error() -> None:
    pod = _unvalidated(make_pod("p").spread_constraint(1, "zone", selector={"app": BAD}))
    run = run_filter(framework_for("PodTopologySpread"), pod, _nodes())
    assert run.pre_filter.code is Code.ERROR
    assert f'values[0][app]: Invalid value: "{BAD}"' in run.pre_filter.message()
