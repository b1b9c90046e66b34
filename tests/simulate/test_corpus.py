"""kubesched's embedded cluster answers as a real v1.36.2 control plane does, case by case.

``tests/fixtures/corpus/<case>.yaml`` are realistic multi-document manifests (charts,
databases, batch, quotas, GPUs, scheduling constraints, typos, removed API versions...);
``recorded.json`` beside them is what kube-apiserver + kube-controller-manager +
kube-scheduler made of each (``record.py`` there says how it was recorded and how to
record again). Each case runs here as ``kubesched simulate`` would run it, except that,
as ``kubectl create -f`` does, a refused document does not stop the others: every
document is loaded on its own (``parse_manifests``), the accepted ones go to a
``Simulation`` that creates them in file order (``in_file_order``: a LimitRange or a
Namespace counts only for the documents after it) and refuses objects in a namespace
not created yet (``strict_namespaces``, as NamespaceLifecycle does), and its admission
refusals are the remaining verdicts. With no timeline, a Job's pods run on, as every pod
does under the recorder's stand-in kubelets.

Compared, for every case:

- each document's verdict: accepted, or refused with the server's message, which must
  appear word for word in kubesched's (rendered as kube-apiserver renders field errors:
  one bare, several in brackets; kubesched may add the file and object in front);
- per top-level owner (Deployment, StatefulSet, DaemonSet, Job, CronJob,
  ReplicationController, bare ReplicaSet, bare Pod): the pods bound and pending, and
  the pending pods' FailedScheduling messages as a multiset (pod names are random and
  ties between equal nodes are broken at random, so neither names nor nodes count);
- each PersistentVolumeClaim's phase.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api import ANN_SELECTED_NODE, KubeObject, Pod, parse_manifests
from kubesched.backend.memory import MemoryCluster
from kubesched.errors import UserInputError
from kubesched.simulate import DETAIL_SUMMARY, Simulation
from tests.fixtures.corpus import record

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus"
RECORDING: dict[str, Any] = json.loads((CORPUS / "recorded.json").read_text())
CASES = sorted(p.stem for p in CORPUS.glob("*.yaml"))


def render(err: UserInputError) -> str:
    """A loader's refusal as kube-apiserver words one: the headline, then the field
    errors (one bare, several in brackets, each text once)."""
    body = list(dict.fromkeys(str(p) for p in err.problems))
    if not body:
        return err.message
    return f"{err.message}: {body[0] if len(body) == 1 else '[' + ', '.join(body) + ']'}"


@cache
def simulate_case(case: str) -> dict[str, Any]:
    """Run one case through kubesched; the same shape as the recording."""
    path = CORPUS / f"{case}.yaml"
    verdicts: list[dict[str, Any]] = []
    accepted: list[tuple[int, KubeObject]] = []
    for text in record.document_texts(path):
        doc = yaml.safe_load(text)
        recorded_shape = {
            "kind": doc.get("kind") if isinstance(doc, dict) else None,
            "name": record.object_name(doc),
        }
        try:
            objects = parse_manifests(text, source=str(path))
        except UserInputError as err:
            verdicts.append({**recorded_shape, "verdict": render(err)})
            continue
        verdicts.append({**recorded_shape, "verdict": None})
        accepted += [(len(verdicts) - 1, o) for o in objects]
    sim = Simulation(
        [o for _, o in accepted],
        seed=0,
        detail=DETAIL_SUMMARY,
        strict_namespaces=True,
        in_file_order=True,
    )
    # An admission refusal names the object; with two documents for one object, the
    # later one is the one refused (the first one went in).
    for rejection in sim.rejections:
        for index, obj in reversed(accepted):
            described = f"{obj.kind} {obj.key}"
            if described == rejection.source_object_key and verdicts[index]["verdict"] is None:
                verdicts[index]["verdict"] = rejection.message
                break
    run = sim.run()
    return {
        "documents": verdicts,
        "owners": owners(run.cluster, verdicts),
        "claims": {
            c.key: (c.status.phase if c.status else None)
            for c in run.cluster.objects("PersistentVolumeClaim")
        },
    }


def owners(cluster: MemoryCluster, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Pods bound and pending per top-level owner, and the pending pods' messages."""
    return record.tally_owners(
        verdicts,
        [
            (top_owner(cluster, pod), pending_message(cluster, pod), bool(pod.spec.node_name))
            for pod in cluster.pods()
        ],
    )


def pending_message(cluster: MemoryCluster, pod: Pod) -> str | None:
    """A pending pod's PodScheduled message, recorded as the recorder does: None while its
    claims wait to be provisioned on the node the scheduler chose."""
    ns = pod.metadata.namespace or "default"
    names = [
        v.persistent_volume_claim.claim_name
        for v in pod.spec.volumes or ()
        if v.persistent_volume_claim is not None
    ]
    claims = [cluster.try_get("PersistentVolumeClaim", ns, n) for n in names]
    if names and all(
        c is not None and ANN_SELECTED_NODE in (c.metadata.annotations or {}) for c in claims
    ):
        return None
    return next(
        (
            c.message
            for c in pod.status.conditions or ()
            if c.type == "PodScheduled" and c.status == "False"
        ),
        None,
    )


def top_owner(cluster: MemoryCluster, obj: KubeObject) -> str:
    """``Kind ns/name`` of the controller at the top of ``obj``'s owner chain."""
    ns = obj.metadata.namespace or "default"
    ref = next((r for r in obj.metadata.owner_references or () if r.controller), None)
    if ref is None:
        return f"{obj.kind} {ns}/{obj.metadata.name}"
    owner = cluster.try_get(ref.kind, ns, ref.name)
    return top_owner(cluster, owner) if owner is not None else f"{ref.kind} {ns}/{ref.name}"


def _short(message: str | None, limit: int = 240) -> str | None:
    """A message cut for a failure's report (the list of supported kinds is long)."""
    return message if message is None or len(message) <= limit else message[:limit] + "..."


def test_every_case_is_recorded() -> None:
    assert len(CASES) >= 30
    assert sorted(RECORDING) == CASES


@pytest.mark.parametrize("case", CASES)
def test_same_verdict_per_document(case: str) -> None:
    recorded = RECORDING[case]["documents"]
    ours = simulate_case(case)["documents"]
    assert [(d["kind"], d["name"]) for d in ours] == [(d["kind"], d["name"]) for d in recorded]
    differ = [
        f"{r['kind']} {r['name']}: real {r['verdict']!r}, kubesched {_short(o['verdict'])!r}"
        for r, o in zip(recorded, ours, strict=True)
        if (r["verdict"] is None) != (o["verdict"] is None)
        or (r["verdict"] is not None and r["verdict"] not in o["verdict"])
    ]
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("case", CASES)
def test_same_pods_bound_and_pending_per_owner(case: str) -> None:
    recorded = RECORDING[case]["owners"]
    ours = simulate_case(case)["owners"]
    differ = []
    for owner in sorted(set(recorded) | set(ours)):
        r, o = recorded.get(owner), ours.get(owner)
        if r is None or o is None:
            differ.append(f"{owner}: real {r}, kubesched {o}")
        elif (r["bound"], r["pending"]) != (o["bound"], o["pending"]):
            differ.append(
                f"{owner}: real {r['bound']} bound {r['pending']} pending, "
                f"kubesched {o['bound']} bound {o['pending']} pending"
            )
        elif Counter(r["messages"]) != Counter(o["messages"]):
            differ.append(f"{owner}: real messages {r['messages']}, kubesched {o['messages']}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("case", CASES)
def test_same_claims_and_phases(case: str) -> None:
    # Which claims of a StatefulSet get the volumes there are is a race on the real
    # control plane: compare the claims there are, and how many are in each phase.
    ours, recorded = simulate_case(case)["claims"], RECORDING[case]["claims"]
    assert sorted(ours) == sorted(recorded)
    assert Counter(ours.values()) == Counter(recorded.values())
