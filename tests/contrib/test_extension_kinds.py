"""The core extension points contrib relies on: extra object kinds, generic lister reads,
PodGroup watch events, and PodsToActivate."""

from __future__ import annotations

import pytest

from kubesched import PODS_TO_ACTIVATE_KEY, PodsToActivate
from kubesched.api import KINDS, parse_manifests, resolve_kind
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.protocol import BackendError
from kubesched.clock import FakeClock
from kubesched.errors import UserInputError
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_pod
from kubesched_contrib.coscheduling import PodGroup

from .helpers import pod_group

PG_YAML = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train, namespace: ml}
spec: {minMember: 4, scheduleTimeoutSeconds: 20, minResources: {cpu: "8", memory: 16Gi}}
"""


def test_entry_point_kind_is_resolved_and_parsed():
    assert resolve_kind("PodGroup") is PodGroup
    assert KINDS["PodGroup"] is PodGroup
    (pg,) = parse_manifests(PG_YAML)
    assert isinstance(pg, PodGroup)
    assert pg.key == "ml/train"
    assert pg.spec.min_member == 4
    assert pg.spec.schedule_timeout_seconds == 20
    assert pg.spec.min_resources["memory"].value() == 16 * 1024**3


def test_unknown_kind_of_a_served_group_is_refused():
    with pytest.raises(UserInputError) as err:
        parse_manifests("apiVersion: v1\nkind: Nope\nmetadata: {name: x}\n")
    assert 'no matches for kind "Nope" in version "v1"' in str(err.value)


def test_invalid_extension_object_names_field():
    with pytest.raises(UserInputError) as err:
        parse_manifests(PG_YAML.replace("minMember: 4", "minMember: -1"))
    assert "spec.minMember" in str(err.value)


def test_memory_cluster_stores_and_watches_extension_kind():
    cluster = MemoryCluster(FakeClock(0.0))
    seen = []
    cluster.watch("PodGroup", "0", lambda ev: seen.append((ev.type.value, ev.object.name)))
    (pg,) = parse_manifests(PG_YAML)
    assert cluster.apply([pg]) == []
    stored = cluster.get("PodGroup", "ml", "train")
    assert stored.metadata.uid and stored.metadata.creation_timestamp is not None
    assert cluster.get_object("PodGroup", "ml", "train") is stored
    assert cluster.get_object("PodGroup", "ml", "missing") is None
    assert cluster.list_objects("PodGroup", "ml") == [stored]
    assert cluster.list_objects("PodGroup", "other") == []
    assert cluster.list_objects("NoSuchKind") == []
    assert cluster.get_namespace("ml") is not None  # namespaced: created like for built-ins
    updated = stored.model_copy(deep=True)
    updated.spec.min_member = 2
    cluster.update(updated)
    cluster.delete("PodGroup", "ml", "train")
    assert [s for s in seen] == [("ADDED", "train"), ("MODIFIED", "train"), ("DELETED", "train")]
    with pytest.raises(BackendError):
        cluster.objects("NoSuchKind")


def test_static_lister_generic_reads():
    pod = make_pod("p").obj()
    lister = StaticLister([pod_group("g", 2), pod_group("g", 3, namespace="x"), pod])
    assert lister.get_object("PodGroup", "default", "g").spec.min_member == 2
    assert lister.get_object("PodGroup", "x", "g").spec.min_member == 3
    assert lister.get_object("PodGroup", "y", "g") is None
    assert lister.get_object("Nothing", "default", "g") is None
    assert [o.namespace for o in lister.list_objects("PodGroup")] == ["default", "x"]
    assert lister.list_objects("Pod", "default") == [pod]
    lister.remove(pod)
    assert lister.list_objects("Pod") == []


def test_cycle_state_starts_with_pods_to_activate():
    fw = make_framework()
    state = fw.new_cycle_state()
    pods = state.read(PODS_TO_ACTIVATE_KEY)
    assert isinstance(pods, PodsToActivate) and pods.pods == {}
    assert state.clone().read(PODS_TO_ACTIVATE_KEY) is pods  # shared, as upstream's


def test_pod_group_events_move_pods():
    # A pod rejected by Coscheduling (too few siblings) retries when its PodGroup changes.
    from kubesched.simulate.driver import Simulation

    from .helpers import coscheduling_config, group_labels

    objs = [
        pod_group("g", 3),
        *[make_pod(f"p{i}").labels(group_labels("g")).obj() for i in range(2)],
        *parse_manifests(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\n"
            "status: {allocatable: {cpu: '4', memory: 4Gi, pods: '10'}}\n"
        ),
    ]
    sim = Simulation(objs, config=coscheduling_config())
    sim.handlers.connect(sim.cluster)
    while sim.scheduler.schedule_one():
        pass
    assert all(not p.spec.node_name for p in sim.cluster.pods())
    pg = sim.cluster.get("PodGroup", "default", "g").model_copy(deep=True)
    pg.spec.min_member = 2
    sim.cluster.update(pg)  # PodGroup Update: registered by Coscheduling
    sim.handlers.disconnect()
    run = sim.run()
    assert all(p.spec.node_name == "n0" for p in run.cluster.pods())
    assert run.virtual_time < 60  # moved by the event, not the 5-minute flush
