{%- set eps = cookiecutter.extension_points | extension_points -%}
{%- set name = cookiecutter.plugin_name -%}
{%- set pkg = cookiecutter.package_name -%}
{%- set args = cookiecutter.with_args -%}
{%- set narrows = "PreFilter" in eps -%}
{%- set filters = "Filter" in eps or "PreFilter" in eps -%}
{{ ('"""Tests of ' ~ name ~ ", with kubesched's pytest plugin (fixtures) and ``kubesched.testing``." ~ '"""') | wordwrap(100, break_long_words=False) }}

{%- set uses_podinfo = (eps | select("in", ["PreEnqueue", "PostFilter", "Reserve", "Permit", "PreBind", "Bind", "PostBind"]) | list | length) > 0 or ("PreScore" in eps and "Score" not in eps) %}
{%- set uses_code = filters or ("PostFilter" in eps or "PreEnqueue" in eps or "Permit" in eps) %}

from __future__ import annotations
{% if filters or args %}
import pytest
{%- endif %}
{%- if uses_code or uses_podinfo %}
from kubesched import {{ (["Code"] if uses_code else []) | join("") }}{{ ", " if uses_code and uses_podinfo else "" }}{{ "PodInfo" if uses_podinfo else "" }}{{ ", Status" if "PostFilter" in eps else "" }}
{%- endif %}
from kubesched.testing import (
{%- if "Score" in eps %}
    assert_scores,
{%- endif %}
{%- if filters %}
    assert_statuses,
{%- endif %}
    make_node,
    make_pod,
    placements,
{%- if filters %}
    run_filter,
{%- endif %}
{%- if "Score" in eps %}
    run_score,
{%- endif %}
{%- if "PreScore" in eps and "Score" not in eps %}
    snapshot_of,
{%- endif %}
)
{%- if args %}
from pydantic import ValidationError
{%- endif %}

from {{ pkg }} import plugin
from {{ pkg }}.plugin import (
{%- if "PostFilter" in eps %}
    ERR_REASON_CANNOT_MAKE_ROOM,
{%- endif %}
{%- if "PreEnqueue" in eps %}
    ERR_REASON_HELD,
{%- endif %}
{%- if "Filter" in eps and not narrows %}
    ERR_REASON_MISSING_LABEL,
{%- endif %}
{%- if "PreFilter" in eps %}
    ERR_REASON_NO_LABELLED_NODE,
{%- endif %}
{%- if "PreEnqueue" in eps %}
    HOLD,
{%- endif %}
    LABEL_KEY,
    NAME,
{%- if "Permit" in eps and not args %}
    PERMIT_TIMEOUT_SECONDS,
{%- endif %}
{%- if "Permit" in eps %}
    WAIT,
{%- endif %}
)

# The plugin's classes, under short names.
Plugin = plugin.{{ name }}
{%- if args %}
Args = plugin.{{ name }}Args
{%- endif %}


def labelled(node: str, weight: str = "1", key: str = LABEL_KEY):
    """A node builder with the plugin's label."""
    return make_node(node).labels({key: weight})


def test_plugin_is_installed(framework_for) -> None:
    # The entry point in pyproject.toml: kubesched finds the plugin by its name.
    fw = framework_for(NAME)
    assert type(fw.plugin(NAME)) is Plugin
{%- if args %}


def test_args_defaults_and_validation() -> None:
    assert Args().label_key == LABEL_KEY
    assert Args.model_validate({"labelKey": "team.example.com/x"}).label_key == (
        "team.example.com/x"
    )
    with pytest.raises(ValidationError, match="labelKey"):
        Args.model_validate({"labelKey": ""})
    with pytest.raises(ValidationError, match="unknownKey"):
        Args.model_validate({"unknownKey": 1})
{%- endif %}
{%- if filters %}

{% if narrows %}
# PreFilter leaves the unlabelled nodes out; the scheduler reports them as unresolvable.
REJECTED = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
{%- else %}
REJECTED = (Code.UNSCHEDULABLE, ERR_REASON_MISSING_LABEL)
{%- endif %}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({LABEL_KEY: "1"}, None),
        ({LABEL_KEY: "not-a-number"}, None),
        ({}, REJECTED),
        ({"example.com/other": "1"}, REJECTED),
    ],
    ids=["labelled", "any-value", "no-label", "other-label"],
)
def test_filter(framework_for, labels, expected) -> None:
    fw = framework_for(Plugin)
    nodes = [labelled("ok"), make_node("n").labels(labels)]
    assert_statuses(run_filter(fw, make_pod("p"), nodes), {"ok": None, "n": expected})
{%- if args %}


def test_filter_reads_the_label_key_from_args(framework_for) -> None:
    fw = framework_for(Plugin, args={"labelKey": "team.example.com/pool"})
    nodes = [labelled("ok", key="team.example.com/pool"), labelled("default-key")]
    statuses = run_filter(fw, make_pod("p"), nodes)
    assert_statuses(statuses, {"ok": None, "default-key": REJECTED})
{%- endif %}
{%- endif %}
{%- if narrows %}


def test_pre_filter_rejects_when_no_node_is_labelled(framework_for) -> None:
    fw = framework_for(Plugin)
    statuses = run_filter(fw, make_pod("p"), [make_node("a"), make_node("b")])
    rejected = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NO_LABELLED_NODE)
    assert_statuses(statuses, {"a": rejected, "b": rejected})
{%- endif %}
{%- if "Score" in eps %}


def test_score_is_the_label_weight_normalised(framework_for) -> None:
    fw = framework_for(Plugin)
    nodes = [labelled("a", "1"), labelled("b", "2"), labelled("c", "4"), labelled("d", "x")]
    pod = make_pod("p")
    assert_scores(run_score(fw, pod, nodes, raw=True), {"a": 1, "b": 2, "c": 4, "d": 0})
    assert_scores(run_score(fw, pod, nodes), {"a": 25, "b": 50, "c": 100, "d": 0})
{%- endif %}
{%- if "PreScore" in eps %}


def test_pre_score_skips_score_when_no_node_has_a_weight(framework_for) -> None:
    fw = framework_for(Plugin)
    state = fw.new_cycle_state()
    nodes = [labelled("a", "0"), labelled("b", "x")]
    {%- if "Score" in eps %}
    assert run_score(fw, make_pod("p"), nodes, state=state) == {}
    {%- else %}
    infos = snapshot_of(nodes).list()
    assert fw.run_pre_score_plugins(state, PodInfo(make_pod("p").obj()), infos).is_success()
    {%- endif %}
    assert NAME in state.skip_score_plugins
{%- endif %}
{%- if "PostFilter" in eps %}


def test_post_filter_cannot_make_room(framework_for) -> None:
    fw = framework_for(Plugin)
    pod_info = PodInfo(make_pod("p").obj())
    rejected = {"a": Status(Code.UNSCHEDULABLE, "Insufficient cpu", plugin="NodeResourcesFit")}
    result, status = fw.run_post_filter_plugins(fw.new_cycle_state(), pod_info, rejected)
    assert result is None
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE,
        [ERR_REASON_CANNOT_MAKE_ROOM],
        NAME,
    )
{%- endif %}
{%- if "PreEnqueue" in eps %}


def test_pre_enqueue_holds_annotated_pods(framework_for) -> None:
    fw = framework_for(Plugin)
    held = PodInfo(make_pod("held").annotations({LABEL_KEY: HOLD}).obj())
    free = PodInfo(make_pod("free").obj())
    status = fw.run_pre_enqueue_plugins(held)
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [ERR_REASON_HELD],
        NAME,
    )
    assert fw.run_pre_enqueue_plugins(free) is None
{%- endif %}
{%- if "Reserve" in eps %}


def test_reserve_and_unreserve(framework_for) -> None:
    fw = framework_for(Plugin)
    plugin = fw.plugin(NAME)
    state, pod_info = fw.new_cycle_state(), PodInfo(make_pod("p").obj())
    assert fw.run_reserve_plugins_reserve(state, pod_info, "n1").is_success()
    assert plugin.reserved == {"default/p": "n1"}
    fw.run_reserve_plugins_unreserve(state, pod_info, "n1")
    fw.run_reserve_plugins_unreserve(state, pod_info, "n1")  # idempotent
    assert plugin.reserved == {}
{%- endif %}
{%- if "Permit" in eps %}


def test_permit_waits_for_annotated_pods(framework_for, fake_clock) -> None:
    fw = framework_for(Plugin, clock=fake_clock)
    state = fw.new_cycle_state()
    waiting = PodInfo(make_pod("w").uid("w").annotations({LABEL_KEY: WAIT}).obj())
    assert fw.run_permit_plugins(state, waiting, "n1").code is Code.WAIT
    assert fw.get_waiting_pod("w").pending_plugins() == [NAME]
    fw.get_waiting_pod("w").allow(NAME)
    assert fw.wait_on_permit(waiting).is_success()
    assert fw.run_permit_plugins(state, PodInfo(make_pod("p").obj()), "n1").is_success()


def test_permit_rejects_when_the_wait_times_out(framework_for, fake_clock) -> None:
    fw = framework_for(Plugin, clock=fake_clock)
    waiting = PodInfo(make_pod("w").uid("w").annotations({LABEL_KEY: WAIT}).obj())
    assert fw.run_permit_plugins(fw.new_cycle_state(), waiting, "n1").code is Code.WAIT
    timeout = {% if args %}fw.plugin(NAME).args.permit_timeout_seconds{% else %}PERMIT_TIMEOUT_SECONDS{% endif %}
    fake_clock.step(timeout + 1)
    assert fw.waiting_pods.expire(fake_clock.now()) == 1
    assert fw.wait_on_permit(waiting).code is Code.UNSCHEDULABLE
{%- endif %}
{%- if "PreBind" in eps %}


def test_pre_bind_records_the_binding(framework_for) -> None:
    fw = framework_for(Plugin)
    status = fw.run_pre_bind_plugins(fw.new_cycle_state(), PodInfo(make_pod("p").obj()), "n1")
    assert status.is_success()
    assert fw.plugin(NAME).prepared == [("default/p", "n1")]
{%- endif %}
{%- if "Bind" in eps %}


def test_bind_through_the_cluster_client(framework_for, embedded_cluster) -> None:
    embedded_cluster.apply([make_node("n1").obj(), make_pod("p").obj()])
    pod = embedded_cluster.get("Pod", "default", "p")
    fw = framework_for(Plugin, client=embedded_cluster)
    assert fw.run_bind_plugins(fw.new_cycle_state(), PodInfo(pod), "n1").is_success()
    assert embedded_cluster.get("Pod", "default", "p").spec.node_name == "n1"
{%- endif %}
{%- if "PostBind" in eps %}


def test_post_bind_sees_the_binding(framework_for) -> None:
    fw = framework_for(Plugin)
    fw.run_post_bind_plugins(fw.new_cycle_state(), PodInfo(make_pod("p").obj()), "n1")
    assert fw.plugin(NAME).bound == [("default/p", "n1")]
{%- endif %}


def test_simulation_with_the_plugin_in_the_default_profile(simulate_small) -> None:
    # A whole scheduler on an embedded cluster, with the plugin enabled through
    # multiPoint on top of the default plugins (as in the README's configuration).
    nodes = [
        labelled("heavy", "4").capacity(cpu="4", memory="8Gi"),
        labelled("light", "1").capacity(cpu="4", memory="8Gi"),
        make_node("plain").capacity(cpu="4", memory="8Gi"),
    ]
    pods = [make_pod(f"p{i}").req(cpu="100m") for i in range(3)]
    {%- if "PreEnqueue" in eps %}
    pods.append(make_pod("held").req(cpu="100m").annotations({LABEL_KEY: HOLD}))
    {%- endif %}
    run = simulate_small(*nodes, *pods, enable=[NAME])
    where = placements(run)
    {%- if "PreEnqueue" in eps %}
    assert where.pop("default/held") is None
    {%- endif %}
    assert all(where.values()), where
    {%- if filters %}
    assert "plain" not in where.values()
    {%- endif %}
    {%- if "Score" in eps %}
    assert set(where.values()) == {"heavy"}
    {%- endif %}
