"""The real scheduler's side of ``kubesched compare``: the plan created in a scratch API
server pod by pod, each pod's decision read back, and everything removed afterwards."""

from __future__ import annotations

import contextlib
import datetime
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import KubeObject
from kubesched.backend.kube import KubeClient
from kubesched.backend.kube.snapshot import SNAPSHOT_KINDS, read_cluster
from kubesched.backend.protocol import ConflictError, NotFoundError
from kubesched.compare.prepare import Plan
from kubesched.errors import KubeschedError

POLL_SECONDS = 0.02
SETTLE_SECONDS = 0.5
"""How long an unschedulable pod without a nominated node must stay so to be settled
(a preemption's nomination lands in the same status write; this covers a slow one)."""
CONTROLLER_MANAGER_LEASE = (
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
)
RUN_LABEL = "kubesched.io/compare-run"
"""The label compare gives the nodes it creates: the run id (of the scratch prefix)."""
PROBE_RESOURCE = "kubesched.io/compare-probe"
"""The extended resource the probe pod asks for and no node has."""
_NODES_SEEN = re.compile(rf"(\d+) Insufficient {re.escape(PROBE_RESOURCE)}\b")

_COLLECTIONS = {kind: path for _, kind, path in SNAPSHOT_KINDS}
_CLUSTER_SCOPED = frozenset({"Namespace", "Node", "PriorityClass", "RuntimeClass"})


class CompareError(KubeschedError):
    """The API server is not one compare may use, or the run could not complete."""


def collection(kind: str, namespace: str | None) -> str:
    """The collection path of ``kind`` (in ``namespace`` for a namespaced kind)."""
    path = _COLLECTIONS[kind]
    if kind in _CLUSTER_SCOPED:
        return path
    head, resource = path.rsplit("/", 1)
    return f"{head}/namespaces/{namespace}/{resource}"


def _key(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


@dataclass
class RealDecision:
    """What the real scheduler did with one pod, once it settled."""

    key: str
    created: dict[str, Any]
    """The pod as the API server stored it (before scheduling)."""
    node: str | None = None
    unschedulable: bool = False
    message: str = ""
    """The PodScheduled=False condition's message (the FailedScheduling message)."""
    nominated: str | None = None
    seconds: float = 0.0
    bound_after: dict[str, str] = field(default_factory=dict)
    """Every compared pod bound once this one settled (pod key → node)."""
    gone: list[str] = field(default_factory=list)
    """Compared pods deleted while this one was scheduled (preemption victims)."""


@dataclass
class RealRun:
    """The real scheduler's decisions, and the objects as the server stored them."""

    objects: list[dict[str, Any]]
    decisions: list[RealDecision]
    foreign: list[KubeObject]
    """With foreign nodes allowed: what the cluster held before (a read-only copy)."""


class ScratchServer:
    """Creates a plan in the API server of ``client`` and removes it all afterwards."""

    def __init__(self, client: KubeClient, *, allow_foreign_nodes: bool = False,
                 timeout: float = 30.0) -> None:  # fmt: skip
        self.client = client
        self.allow_foreign_nodes = allow_foreign_nodes
        self.timeout = timeout
        self.created: list[dict[str, Any]] = []

    def check(self) -> list[KubeObject]:
        """Refuse a server with nodes compare did not create (unless allowed: then return a
        copy of what it holds) or where a kube-controller-manager runs."""
        nodes = self.client.request("GET", "/api/v1/nodes", query={"limit": 1})["items"]
        if nodes and not self.allow_foreign_nodes:
            raise CompareError(
                f"the API server at {self.client.host} has nodes compare did not create (such "
                f"as {nodes[0]['metadata']['name']}); compare is for a scratch control plane. "
                "--allow-foreign-nodes compares on them too (pods may land there)"
            )
        with contextlib.suppress(NotFoundError):
            lease = self.client.request("GET", CONTROLLER_MANAGER_LEASE)
            renewed = (lease.get("spec") or {}).get("renewTime")
            if renewed and _age(renewed) < 60:
                raise CompareError(
                    f"a kube-controller-manager runs against {self.client.host} (its Lease was "
                    "renewed recently): its controllers would make pods of their own"
                )
        return read_cluster(self.client).objects if nodes else []

    def create(self, doc: dict[str, Any]) -> dict[str, Any]:
        """POST one object; an existing PriorityClass or RuntimeClass is used as it is."""
        path = collection(doc["kind"], doc["metadata"].get("namespace"))
        try:
            stored = self.client.request("POST", path, body=doc)
        except ConflictError:
            if doc["kind"] not in ("PriorityClass", "RuntimeClass"):
                raise
            return self.client.request("GET", f"{path}/{doc['metadata']['name']}")
        self.created.append(stored)
        return stored

    def run(self, plan: Plan) -> RealRun:
        """Create ``plan``'s objects, then its pods one at a time, each left to settle."""
        foreign = self.check()
        uids: dict[str, str] = {}
        objects: list[dict[str, Any]] = []
        for doc in plan.objects:
            if doc["kind"] == "Node":
                doc = _labelled(doc, RUN_LABEL, _run_id(plan.prefix))
            stored = self.create(_with_owner_uids(doc, uids))
            uids[f"{doc['kind']}/{_key(doc)}"] = stored["metadata"]["uid"]
            objects.append(stored)
        nodes = sum(1 for o in objects if o["kind"] == "Node")
        if plan.pods and nodes:
            self._await_nodes(plan, nodes)
        decisions = []
        for pod in plan.pods:
            decisions.append(self._schedule(_with_owner_uids(pod, uids), plan.prefix))
        return RealRun(objects, decisions, foreign)

    def _schedule(self, pod: dict[str, Any], prefix: str) -> RealDecision:
        before = self._compared_pods(prefix)
        started = time.monotonic()
        stored = self.create(pod)
        decision = RealDecision(key=_key(stored), created=stored)
        path = f"{collection('Pod', stored['metadata']['namespace'])}/{stored['metadata']['name']}"
        unschedulable_since: float | None = None
        while time.monotonic() - started < self.timeout:
            current = self.client.request("GET", path)
            if (current.get("spec") or {}).get("nodeName"):
                decision.node = current["spec"]["nodeName"]
                break
            cond = _pod_scheduled(current)
            nominated = (current.get("status") or {}).get("nominatedNodeName")
            if cond is not None and cond.get("reason") == "Unschedulable":
                decision.unschedulable, decision.message = True, cond.get("message") or ""
                decision.nominated = nominated
                if unschedulable_since is None:
                    unschedulable_since = time.monotonic()
                # A nominated pod waits for its victims to go; it binds next.
                if not nominated and time.monotonic() - unschedulable_since > SETTLE_SECONDS:
                    break
            time.sleep(POLL_SECONDS)
        if decision.node:
            decision.unschedulable, decision.message = False, ""
        decision.seconds = time.monotonic() - started
        after = self._compared_pods(prefix)
        decision.bound_after = {k: n for k, n in after.items() if n}
        decision.gone = sorted(set(before) - set(after))
        return decision

    def _await_nodes(self, plan: Plan, nodes: int) -> None:
        """Return once the real scheduler has the ``nodes`` nodes of this run in its cache.

        Its informers see nodes some time after they were created (or deleted), and a pod
        handed over before that is judged on other nodes ("no nodes available to schedule
        pods", or a previous run's nodes of the same names). The probe pod selects this
        run's nodes by their :data:`RUN_LABEL` and asks for a resource none has: the
        scheduler refuses it with ``K Insufficient`` that resource, K the run's nodes it
        knows. A probe answered with fewer is replaced (no node event requeues it, as none
        can take it). One probe per schedulerName of the plan's pods (a name may be served
        by no scheduler): the first full answer is enough. Never bound, and deleted before
        any compared pod is created, the probes leave nothing in the scheduler's cache.
        """
        names = sorted({(p.get("spec") or {}).get("schedulerName") or "default-scheduler"
                        for p in plan.pods})  # fmt: skip
        namespace = self.create({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"generateName": f"{plan.prefix}probe-"},
        })["metadata"]["name"]  # fmt: skip
        probes: dict[str, str] = {}
        seen: dict[str, tuple[int, str]] = {}
        deadline = time.monotonic() + self.timeout
        try:
            while True:
                for name in names:
                    if name not in probes:
                        probes[name] = self._probe(namespace, name, _run_id(plan.prefix))
                for name, path in list(probes.items()):
                    cond = _pod_scheduled(self.client.request("GET", path)) or {}
                    if cond.get("reason") != "Unschedulable":
                        continue
                    message = cond.get("message") or ""
                    found = _NODES_SEEN.search(message)
                    seen[name] = (int(found.group(1)) if found else 0, message)
                    if seen[name][0] == nodes:
                        return
                    self._delete(path, gracePeriodSeconds=0)
                    del probes[name]
                if time.monotonic() > deadline:
                    raise CompareError(_not_seen(self.client.host, self.timeout, nodes, seen))
                time.sleep(POLL_SECONDS)
        finally:
            for path in probes.values():
                self._delete(path, gracePeriodSeconds=0)

    def _probe(self, namespace: str, scheduler_name: str, run: str) -> str:
        """Create a probe pod for ``scheduler_name`` and return its path."""
        stored = self.client.request("POST", collection("Pod", namespace), body={
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "probe-"},
            "spec": {
                "schedulerName": scheduler_name,
                "nodeSelector": {RUN_LABEL: run},
                # Past the filters before NodeResourcesFit on every node of the run.
                "tolerations": [{"operator": "Exists"}],
                "terminationGracePeriodSeconds": 0,
                "containers": [{
                    "name": "probe", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {PROBE_RESOURCE: "1"},
                                  "limits": {PROBE_RESOURCE: "1"}},
                }],
            },
        })  # fmt: skip
        return f"{collection('Pod', namespace)}/{stored['metadata']['name']}"

    def _compared_pods(self, prefix: str) -> dict[str, str]:
        """Pod key → node ("" when pending) of the compared pods (in ``prefix`` namespaces)."""
        pods = self.client.request("GET", "/api/v1/pods")["items"]
        return {
            _key(p): (p.get("spec") or {}).get("nodeName") or ""
            for p in pods
            if p["metadata"]["namespace"].startswith(prefix)
            and not p["metadata"].get("deletionTimestamp")
        }

    def clean(self) -> None:
        """Delete what compare created: pods at once, then the other objects, the
        namespaces (finalised: no namespace controller runs on a scratch server), nodes."""
        namespaces = [o for o in self.created if o["kind"] == "Namespace"]
        for ns in namespaces:
            name = ns["metadata"]["name"]
            for path in (f"/api/v1/namespaces/{name}/pods", f"/api/v1/namespaces/{name}/events"):
                self._delete(path, gracePeriodSeconds=0)
        for doc in reversed(self.created):
            if doc["kind"] not in ("Pod", "Namespace"):
                self._delete(f"{collection(doc['kind'], doc['metadata'].get('namespace'))}"
                             f"/{doc['metadata']['name']}")  # fmt: skip
        for ns in namespaces:
            name = ns["metadata"]["name"]
            self._delete(f"/api/v1/namespaces/{name}")
            with contextlib.suppress(NotFoundError, ConflictError):
                current = self.client.request("GET", f"/api/v1/namespaces/{name}")
                current["spec"] = {"finalizers": []}
                self.client.request("PUT", f"/api/v1/namespaces/{name}/finalize", body=current)
        self.created.clear()

    def _delete(self, path: str, **query: Any) -> None:
        with contextlib.suppress(NotFoundError):
            self.client.request("DELETE", path, query=query or None)


def _with_owner_uids(doc: dict[str, Any], uids: dict[str, str]) -> dict[str, Any]:
    """``doc`` with its ownerReferences pointing at the owners' uids in the server."""
    refs = doc["metadata"].get("ownerReferences")
    if not refs:
        return doc
    ns = doc["metadata"].get("namespace")
    fixed = [{**r, "uid": uids.get(f"{r['kind']}/{ns}/{r['name']}", r.get("uid", ""))}
             for r in refs]  # fmt: skip
    return {**doc, "metadata": {**doc["metadata"], "ownerReferences": fixed}}


def _pod_scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return cond
    return None


def _labelled(doc: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    meta = doc["metadata"]
    return {**doc, "metadata": {**meta, "labels": {**(meta.get("labels") or {}), key: value}}}


def _run_id(prefix: str) -> str:
    """The scratch prefix as a label value (which must end with a letter or digit)."""
    return prefix.strip("-.")


def _not_seen(host: str, timeout: float, nodes: int, seen: dict[str, tuple[int, str]]) -> str:
    """Why the probes failed: no scheduler answered them, or not with every node."""
    if not seen:
        return (
            f"no scheduler answered compare's probe pod within {timeout:g}s: does a "
            f"kube-scheduler serve the API server at {host}?"
        )
    saw = "; ".join(f"{n} ({name}: {message!r})" for name, (n, message) in sorted(seen.items()))
    return (
        f"the scheduler serving the API server at {host} did not see the {nodes} nodes "
        f"compare created within {timeout:g}s: its last answer to compare's probe pod saw {saw}"
    )


def _age(stamp: str) -> float:
    when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (datetime.datetime.now(datetime.UTC) - when).total_seconds()


def iter_bound(decisions: list[RealDecision]) -> Iterator[tuple[RealDecision, dict[str, str]]]:
    """Each decision with the compared pods bound before it was made."""
    bound: dict[str, str] = {}
    for d in decisions:
        yield d, bound
        bound = d.bound_after
