"""Gang scheduling with the Workload API: kubesched against the real v1.36 kube-scheduler
and kube-apiserver, with the same gates, on the objects of ``examples/gang-scheduling``.

The real outcome is recorded in ``tests/fixtures/scheduler/gang-scheduling.json`` (written
by this test with ``KUBESCHED_RECORD=1``); ``tests/plugins/test_gangscheduling.py``
holds kubesched to that recording without the binaries, and this test holds the recording
to the real scheduler. The pod group cycles of ``tests/pod_group_scenarios.py`` (a gang
that fits only in part, a gang kept in one rack, two racks that both take a gang and
NodeResourcesFit's placement score picks between, workload-aware preemption) are recorded
the same way, in ``tests/fixtures/scheduler/pod-group-cycle.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.backend.kube import KubeClient
from kubesched.config import default_configuration
from kubesched.features import parse_feature_gates
from kubesched.testing.envtest import assets_dir, create_object
from tests.pod_group_scenarios import RECORDING as CYCLE_RECORDING
from tests.pod_group_scenarios import SCENARIOS, in_two_steps, racks_of, scheduler_settings
from tests.pod_group_scenarios import outcome as cycle_outcome

from .conftest import Api, kube_scheduler_running, kubesched_running, wait_for

pytestmark = pytest.mark.envtest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gang-scheduling"
RECORDING = ROOT / "tests" / "fixtures" / "scheduler" / "gang-scheduling.json"
SCHEDULER_GATES = "--feature-gates=GenericWorkload=true,GangScheduling=true"
"""The gates both schedulers run with (the API server serves every workload field)."""
STABLE_FOR = 8.0
"""Seconds a pod group case's outcome must stay the same to count as settled."""
LATE_POD = "eval-2"
"""The third worker of the ``eval`` gang, created once the rest settled."""


def example_manifests() -> list[dict[str, Any]]:
    """The example's documents, namespaced, with pods deleted at once when the test ends."""
    docs = []
    for name in ("cluster.yaml", "workload.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text()):
            if doc["kind"] != "Node":
                doc["metadata"].setdefault("namespace", "default")
            if doc["kind"] == "Pod":
                doc["spec"]["terminationGracePeriodSeconds"] = 0
            docs.append(doc)
    return docs


def late_pod(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """``eval-2``: a copy of ``eval-1`` under the next name."""
    template = next(m for m in manifests if m["metadata"]["name"] == "eval-1")
    return {**template, "metadata": {**template["metadata"], "name": LATE_POD}}


def outcome(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per pod: bound or not, and its PodScheduled=False message (None without one)."""
    out = {}
    for pod in pods:
        condition = next(
            (
                c
                for c in (pod.get("status") or {}).get("conditions") or ()
                if c["type"] == "PodScheduled" and c["status"] == "False"
            ),
            None,
        )
        out[pod["metadata"]["name"]] = {
            "bound": bool(pod["spec"].get("nodeName")),
            "message": condition["message"] if condition is not None else None,
        }
    return dict(sorted(out.items()))


@pytest.fixture
def real(workload_api: Api, tmp_path: Path) -> Iterator[KubeClient]:
    """The session's control plane serving the Workload API, with the real kube-scheduler
    gated on; an admin client."""
    with kube_scheduler_running(workload_api.cp, tmp_path, args=(SCHEDULER_GATES,)):
        yield workload_api.client


def _pods(client: KubeClient) -> list[dict[str, Any]]:
    return client.request("GET", "/api/v1/namespaces/default/pods")["items"]


def _settled(client: KubeClient, bound: int, refused: int) -> list[dict[str, Any]] | None:
    pods = outcome(_pods(client))
    done = (
        sum(p["bound"] for p in pods.values()) == bound
        and sum(p["message"] is not None for p in pods.values()) == refused
    )
    return _pods(client) if done else None


def _shows(
    client: KubeClient, bound: int, refused: int, expected: dict[str, Any] | None
) -> dict[str, dict[str, Any]] | None:
    """The outcome once settled and, with ``expected``, once it equals ``expected``.

    The real kube-scheduler retries the never-fitting ``too-big`` gang in a tight loop, so
    a member's PodScheduled message alternates between its own refusal and the gang's
    "waiting for minCount pods" message from one instant to the next; the recording holds
    every member's own refusal, which the real scheduler shows again within a few rounds.
    """
    pods = _settled(client, bound, refused)
    if pods is None:
        return None
    seen = outcome(pods)
    return seen if expected is None or seen == expected else None


def _agreed(
    client: KubeClient,
    counts: tuple[int, int],
    expected: dict[str, Any] | None,
    timeout: float,
    what: str,
) -> dict[str, dict[str, Any]]:
    """Wait for the outcome with ``counts`` (bound, refused) pods (and for ``expected``); on
    a timeout, fail with the diff between ``expected`` and the last outcome seen."""
    bound, refused = counts
    try:
        return wait_for(lambda: _shows(client, bound, refused, expected), timeout, what)
    except pytest.fail.Exception:
        last = _settled(client, bound, refused)
        if expected is None or last is None:
            raise
        assert outcome(last) == expected
        raise


def test_the_real_scheduler_and_the_recording_agree(real: KubeClient) -> None:
    recording = None if os.environ.get("KUBESCHED_RECORD") else json.loads(RECORDING.read_text())
    manifests = example_manifests()
    for manifest in manifests:
        create_object(real, manifest)
    # train (4) and web (2) bound; the five too-big workers refused; eval held back.
    expected = recording and recording["settled"]
    first = _agreed(real, (6, 5), expected, 90, "the example to settle as recorded")
    create_object(real, late_pod(manifests))
    expected = recording and recording["after_eval_2"]
    then = _agreed(real, (9, 5), expected, 60, "the eval gang to complete as recorded")
    if recording is None:
        RECORDING.write_text(json.dumps({"settled": first, "after_eval_2": then}, indent=1) + "\n")


@pytest.fixture
def kubesched_cluster(workload_api: Api, tmp_path: Path) -> Iterator[KubeClient]:
    """The session's control plane serving the Workload API, with kubesched (the same
    gates) scheduling it in this process."""
    with kubesched_running(workload_api.cp, SCHEDULER_GATES.partition("=")[2], tmp_path):
        yield workload_api.client


def test_kubesched_on_a_real_cluster_as_the_real_scheduler(kubesched_cluster: KubeClient) -> None:
    """``kubesched run``'s scheduler watches the Workload API's PodGroups and gives the
    recorded outcome on a real API server (bound or not; the refusals' messages)."""
    recorded = json.loads(RECORDING.read_text())
    manifests = example_manifests()
    for manifest in manifests:
        create_object(kubesched_cluster, manifest)
    first = outcome(wait_for(lambda: _settled(kubesched_cluster, 6, 5), 90, "the example"))
    assert first == recorded["settled"]
    create_object(kubesched_cluster, late_pod(manifests))
    then = outcome(wait_for(lambda: _settled(kubesched_cluster, 9, 5), 60, "the eval gang"))
    assert then == recorded["after_eval_2"]


def _real_default_plugins(tmp_path: Path, gates: str) -> list[tuple[str, int]]:
    """``kube-scheduler --write-config-to`` under ``gates``: the default profile's
    multiPoint plugins with their weights."""
    assets = assets_dir()
    if assets is None or not (assets / "kube-scheduler").is_file():
        pytest.skip("KUBEBUILDER_ASSETS has no kube-scheduler")
    kubeconfig = tmp_path / "kubeconfig"
    # Never contacted: --write-config-to exits before any request.
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
        "'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\nusers: [{name: u, user: {token: x}}]\n"
    )
    out = tmp_path / "config.yaml"
    command = [str(assets / "kube-scheduler"), f"--kubeconfig={kubeconfig}"]
    command += [f"--write-config-to={out}", f"--feature-gates={gates}"]
    subprocess.run(command, capture_output=True, check=True, timeout=60)
    profile = yaml.safe_load(out.read_text())["profiles"][0]
    return [(p["name"], p["weight"]) for p in profile["plugins"]["multiPoint"]["enabled"]]


def _kubesched_default_plugins(gates: str) -> list[tuple[str, int]]:
    config = default_configuration(gates=parse_feature_gates([gates]))
    return [(p.name, p.weight or 0) for p in config.profiles[0].plugins.multi_point.enabled]


@pytest.mark.parametrize(
    "gates",
    [
        "GenericWorkload=false",
        "GenericWorkload=true,GangScheduling=true",
        "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true",
        "AllAlpha=true,AllBeta=true",
    ],
    ids=["gates-off", "gang-scheduling", "topology-aware", "all-alpha-and-beta"],
)
def test_default_profile_under_the_gates_is_kube_schedulers(tmp_path: Path, gates: str) -> None:
    assert _real_default_plugins(tmp_path, gates) == _kubesched_default_plugins(gates)


# ---------------------------------------------------------------------------------------
# pod group cycles: the real scheduler recorded, kubesched on a real API server held to it
# ---------------------------------------------------------------------------------------


def _nominate_to_a_terminating_victim(client: KubeClient) -> None:
    """Nominate the gang's pods to the node of ``v-0`` (terminating), as another component
    may, then delete ``v-1`` at once: its node frees and the gang is tried again."""
    v_0 = client.request("GET", "/api/v1/namespaces/default/pods/v-0")
    for name in ("g-0", "g-1"):
        client.request(
            "PATCH",
            f"/api/v1/namespaces/default/pods/{name}/status",
            body={"status": {"nominatedNodeName": v_0["spec"]["nodeName"]}},
            content_type="application/merge-patch+json",
        )
    client.request(
        "DELETE", "/api/v1/namespaces/default/pods/v-1", query={"gracePeriodSeconds": "0"}
    )


AFTER_SETTLING = {"a-victim-terminates-on-the-nominated-node": _nominate_to_a_terminating_victim}
"""What happens to a case once its objects settled, before its outcome settles again."""


def _run_scenario(client: KubeClient, name: str) -> dict[str, Any]:
    """Create the case's objects in two steps and return its outcome once it has not
    changed for a few seconds (a preempting group is refused first, then bound)."""
    manifests = SCENARIOS[name][1]
    before, after = in_two_steps(manifests)
    for manifest in before:
        create_object(client, manifest)
    wait_for(lambda: all(p["spec"].get("nodeName") for p in _pods(client)), 60, "the first pods")
    for manifest in after:
        create_object(client, manifest)
    group_path = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups/g"

    def current() -> dict[str, Any] | None:
        return cycle_outcome(_pods(client), racks_of(manifests), client.request("GET", group_path))

    def settled() -> dict[str, Any]:
        last, since = None, time.monotonic()
        while time.monotonic() - since < STABLE_FOR:
            now = wait_for(current, 90, f"the {name} case to settle")
            if now != last:
                last, since = now, time.monotonic()
            time.sleep(0.5)
        return last

    outcome = settled()
    if name in AFTER_SETTLING:
        AFTER_SETTLING[name](client)
        outcome = settled()
    return outcome


DRA_COLLECTIONS = (
    "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
    "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/resource.k8s.io/v1/deviceclasses",
)
"""What a case with devices leaves behind: its classes and slices, and the claims the
scheduler made for the pods' extended resources."""


@pytest.fixture
def pod_group_api(workload_api: Api) -> Iterator[Api]:
    """``workload_api``; the devices and claims of a case deleted after it (after the pods,
    which the clean-up deletes first)."""
    yield workload_api
    workload_api.delete("/api/v1/namespaces/default/pods", gracePeriodSeconds=0)
    for collection in DRA_COLLECTIONS:
        workload_api.delete_all(collection)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_real_scheduler_and_the_pod_group_cycle_recording_agree(
    name: str, pod_group_api: Api, tmp_path: Path
) -> None:
    gates = SCENARIOS[name][0]
    with kube_scheduler_running(
        pod_group_api.cp, tmp_path, (f"--feature-gates={gates}",), scheduler_settings(name)
    ):
        got = _run_scenario(pod_group_api.client, name)
    recorded = json.loads(CYCLE_RECORDING.read_text()) if CYCLE_RECORDING.exists() else {}
    if os.environ.get("KUBESCHED_RECORD"):
        recorded[name] = got
        CYCLE_RECORDING.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    assert got == recorded[name]


@pytest.mark.parametrize(
    "name",
    [
        "gang-fits-in-part",
        "one-rack-fits",
        "fuller-rack-wins",
        "sidecar-adds-to-the-containers",
        "dra-backed-extended-resource",
        "preempts-two-low-pods",
        "a-member-with-preemption-policy-never",
        "victims-still-terminating",
        "a-placed-pod-is-nominated",
        "a-victim-terminates-on-the-nominated-node",
    ],
)
def test_kubesched_run_gives_the_pod_group_cycle_recording(
    name: str, pod_group_api: Api, tmp_path: Path
) -> None:
    """``kubesched run``'s scheduler on a real API server: the same placements, messages
    and PodGroupScheduled condition (written through the PodGroup's ``/status``)."""
    with kubesched_running(
        pod_group_api.cp, SCENARIOS[name][0], tmp_path, scheduler_settings(name)
    ):
        got = _run_scenario(pod_group_api.client, name)
    assert got == json.loads(CYCLE_RECORDING.read_text())[name]
