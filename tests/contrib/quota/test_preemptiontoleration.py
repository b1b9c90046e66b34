"""PreemptionToleration: upstream's ExemptedFromPreemption and policy cases, args, and a
preemption in the embedded cluster."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from kubesched import Code, DefaultPreemptionArgs
from kubesched.api import Pod, PriorityClass
from kubesched.testing import (
    StaticLister,
    as_pod_info,
    framework_for,
    make_node,
    make_pod,
    profile_framework,
    snapshot_of,
)
from kubesched_contrib.quota.preemptiontoleration import (
    ANNOTATION_KEY_MINIMUM_PREEMPTABLE_PRIORITY as MIN_KEY,
)
from kubesched_contrib.quota.preemptiontoleration import (
    ANNOTATION_KEY_TOLERATION_SECONDS as SECONDS_KEY,
)
from kubesched_contrib.quota.preemptiontoleration import (
    Policy,
    PreemptionToleration,
    PreemptionTolerationArgs,
    parse_policy,
)

CLASS = "dummy"
PT_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "postFilter": {
                    "enabled": [{"name": "PreemptionToleration"}],
                    "disabled": [{"name": "DefaultPreemption"}],
                }
            },
        }
    ],
}
"""The default profile with PreemptionToleration instead of DefaultPreemption."""
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def priority_class(value: int, annotations: dict[str, str] | None = None) -> PriorityClass:
    return PriorityClass.model_validate(
        {"metadata": {"name": CLASS, "annotations": annotations}, "value": value}
    )


def pod(priority: int, *, klass: str | None = None, never: bool = False, scheduled_at=None) -> Pod:
    """upstream's ``makePod()`` wrapper: priority, class name, policy, PodScheduled time."""
    b = make_pod(f"p{priority}").uid(f"p{priority}").priority(priority)
    if klass:
        b = b.priority_class(klass)
    if never:
        b = b.preemption_policy("Never")
    manifest = b.manifest()
    if scheduled_at is not None:
        manifest.setdefault("status", {})["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": scheduled_at.isoformat(),
            }
        ]
    return Pod.model_validate(manifest)


def exempted(pc: PriorityClass | None, victim: Pod, preemptor: Pod, now: datetime = NOW) -> bool:
    """ExemptedFromPreemption of ``victim`` by ``preemptor`` at ``now``, ``pc`` listed."""
    fw = framework_for(PreemptionToleration, lister=StaticLister([pc] if pc else []))
    plugin: PreemptionToleration = fw.plugin("PreemptionToleration")
    plugin._now = now
    return plugin.is_exempted(as_pod_info(victim), as_pod_info(preemptor))


def test_exempted_with_non_existing_priority_class():
    """when priority class does not exist, it should return error"""
    with pytest.raises(LookupError, match=f'priorityclass.scheduling.k8s.io "{CLASS}" not found'):
        exempted(None, pod(3, klass=CLASS), pod(2))


MIN, VICTIM = 200, 100


@pytest.mark.parametrize(
    ("pc", "victim", "preemptor", "want"),
    [
        pytest.param(
            priority_class(1, {MIN_KEY: "a"}),
            pod(3, klass=CLASS),
            pod(2),
            False,
            id="when MinimumPreemptablePriority not parsable, it should return false",
        ),
        pytest.param(
            priority_class(1, {MIN_KEY: "10", SECONDS_KEY: "a"}),
            pod(3, klass=CLASS),
            pod(2),
            False,
            id="when TolerationSeconds not parsable, it should return false",
        ),
        pytest.param(
            priority_class(1),
            pod(1, klass=CLASS),
            pod(2, never=True),
            True,
            id="when preemptor's PreemptionPolicy is PreemptNever, it should return true",
        ),
        pytest.param(
            priority_class(1),
            pod(1, klass=CLASS),
            pod(2),
            False,
            id="PreemptLowerPriority, victimCandidate's priority lower than preemptor's: false",
        ),
        pytest.param(
            priority_class(3),
            pod(3, klass=CLASS),
            pod(2),
            True,
            id="PreemptLowerPriority, victimCandidate's priority not lower than preemptor's: true",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN)}),
            pod(VICTIM, klass=CLASS, scheduled_at=NOW),
            pod(MIN + 1),
            False,
            id="when preemptor's priority is higher than MinimumPreemptablePriorityClass, false",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN)}),
            pod(VICTIM, klass=CLASS, scheduled_at=NOW),
            pod(MIN),
            False,
            id="when preemptor's priority is equal to MinimumPreemptablePriorityClass, false",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN), SECONDS_KEY: "0"}),
            pod(VICTIM, klass=CLASS, scheduled_at=NOW),
            pod(MIN - 1),
            False,
            id="when TolerationSeconds is 0, it should return false (no toleration)",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN), SECONDS_KEY: "-1"}),
            pod(VICTIM, klass=CLASS, scheduled_at=datetime(1, 1, 1, tzinfo=UTC)),
            pod(MIN - 1),
            True,
            id="when TolerationSeconds is negative, it should return true (can tolerate forever)",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN), SECONDS_KEY: "100"}),
            pod(VICTIM, klass=CLASS, scheduled_at=NOW - timedelta(seconds=101)),
            pod(MIN - 1),
            False,
            id="TolerationSeconds positive and elapsed since scheduled: false (expired)",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN), SECONDS_KEY: "100"}),
            pod(VICTIM, klass=CLASS, scheduled_at=NOW - timedelta(seconds=10)),
            pod(MIN - 1),
            True,
            id="TolerationSeconds positive, scheduled within it: true (not expired)",
        ),
        pytest.param(
            priority_class(VICTIM, {MIN_KEY: str(MIN), SECONDS_KEY: "100"}),
            pod(VICTIM, klass=CLASS),
            pod(MIN - 1),
            True,
            id="not scheduled yet: tolerates",
        ),
    ],
)
def test_exempted_from_preemption(pc, victim, preemptor, want):
    assert exempted(pc, victim, preemptor) is want


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        pytest.param(None, Policy(11, 0), id="defaults: value + 1, no toleration"),
        pytest.param({MIN_KEY: "10000", SECONDS_KEY: "3600"}, Policy(10000, 3600), id="both set"),
        pytest.param({MIN_KEY: "-5", SECONDS_KEY: "+7"}, Policy(-5, 7), id="signed"),
        pytest.param({MIN_KEY: "2147483648"}, ValueError, id="priority beyond int32"),
        pytest.param({SECONDS_KEY: "1.5"}, ValueError, id="seconds not an integer"),
        pytest.param({SECONDS_KEY: ""}, ValueError, id="empty"),
    ],
)
def test_parse_policy(annotations, want):
    pc = priority_class(10, annotations)
    if want is ValueError:
        with pytest.raises(ValueError, match=r"strconv\.ParseInt"):
            parse_policy(pc)
    else:
        assert parse_policy(pc) == want


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": 101}, "not in valid range [0, 100]", id="percentage"
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": -1}, "not in valid range [0, inf)", id="absolute"
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "cannot be zero at the same time as minCandidateNodesAbsolute",
            id="both zero",
        ),
    ],
)
def test_args_validation(args, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        PreemptionTolerationArgs.model_validate(args)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param({"minCandidateNodesPercentage": -1}, id="negative-percentage"),
        pytest.param({"minCandidateNodesAbsolute": -1}, id="negative-absolute"),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, id="both-zero"
        ),
        pytest.param({"minCandidateNodes": 1}, id="unknown-key"),
    ],
)
def test_args_errors_are_default_preemptions(args):
    # The SDK's DefaultPreemptionArgs checks both plugins' args: the same errors.
    errors = []
    for model in (PreemptionTolerationArgs, DefaultPreemptionArgs):
        with pytest.raises(ValidationError) as err:
            model.model_validate(args)
        errors.append([(e["loc"], e["msg"]) for e in err.value.errors()])
    assert errors[0] == errors[1]


def test_args_defaults():
    a = PreemptionTolerationArgs()
    assert (a.min_candidate_nodes_percentage, a.min_candidate_nodes_absolute) == (10, 100)


@pytest.mark.parametrize(
    ("preemptor_priority", "code", "victims"),
    [
        pytest.param(
            MIN - 1, Code.UNSCHEDULABLE, set(), id="below the class's minimum: no room without it"
        ),
        pytest.param(MIN, Code.SUCCESS, {"tolerant", "plain"}, id="at the minimum: both go"),
    ],
)
def test_select_victims_spares_tolerating_pods(preemptor_priority, code, victims):
    """A full node with a pod of a tolerating class and a plain one, both lower than the
    preemptor: below the class's minimum the tolerating pod stays, and sparing it leaves
    too little room."""
    pc = priority_class(VICTIM, {MIN_KEY: str(MIN), SECONDS_KEY: "-1"})
    fw = profile_framework(PT_CONFIG, lister=StaticLister([pc]))
    tolerant = (
        make_pod("tolerant")
        .uid("tolerant")
        .priority(VICTIM)
        .priority_class(CLASS)
        .req(cpu="1")
        .node("n")
        .obj()
    )
    plain = make_pod("plain").uid("plain").priority(VICTIM).req(cpu="1").node("n").obj()
    snap = snapshot_of([make_node("n").capacity(cpu="2", pods=110).obj()], [tolerant, plain])
    fw.set_snapshot(snap)
    preemptor = as_pod_info(
        make_pod("big").uid("big").priority(preemptor_priority).req(cpu="2").obj()
    )
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, preemptor, snap.list())
    pl: PreemptionToleration = fw.plugin("PreemptionToleration")
    pl._now = NOW
    got, _, status = pl.select_victims_on_node(state.clone(), preemptor, snap.list()[0].clone(), [])
    assert (status.code, {p.name for p in got}) == (code, victims)
