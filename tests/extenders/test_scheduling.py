"""Extenders in scheduling cycles: Filter, Prioritize, preemption and Bind, over HTTP (a
test webhook) and in-process (``python://labels``), with errors, timeouts, ignorable
extenders, nodeCacheCapable, managedResources and TLS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api import Node
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.extenders import EXTENDER_NAME
from kubesched.extenders.labels import (
    PROTECTED_LABEL,
    REJECT_LABEL,
    SCORE_LABEL,
    UNSCHEDULABLE_LABEL,
    LabelExtender,
)
from kubesched.framework.events import WILDCARD_EVENT
from kubesched.testing import make_node, make_pod
from kubesched.testing.framework import make_framework
from kubesched.testing.run import placements, simulate_small
from tests.extenders.server import ExtenderServer, extender_server, self_signed

GPU = "example.com/gpu"


def node(name: str, cpu: str = "4", **labels: str) -> Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).labels(labels).obj()


NODES = [
    node("a", **{REJECT_LABEL: "no-gpu-driver"}),
    node("b", **{SCORE_LABEL: "3"}),
    node("c", **{SCORE_LABEL: "9"}),
    node("d", **{UNSCHEDULABLE_LABEL: "gpu-busy"}),
]


def config(*extenders: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": list(extenders),
    }


def failed_scheduling(run: Any, name: str) -> list[str]:
    return [
        e.message
        for e in run.cluster.events
        if e.reason == "FailedScheduling" and e.involved_name == name
    ]


@pytest.fixture(autouse=True)
def short_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pod the extender fails is retried until the run stalls: each retry calls the
    # extender in real time (a timeout costs httpTimeout), so stall after a few.
    monkeypatch.setattr("kubesched.simulate.driver.STALL_AFTER", 30.0)


@pytest.fixture
def server() -> Any:
    with extender_server(LabelExtender(ExtenderConfig()), NODES) as s:
        yield s


def _names(body: dict[str, Any]) -> list[str]:
    if body["NodeNames"] is not None:
        assert body["Nodes"] is None
        return sorted(body["NodeNames"])
    return sorted(i["metadata"]["name"] for i in body["Nodes"]["items"])


@pytest.mark.parametrize("cache_capable", [False, True], ids=["full nodes", "node names"])
def test_filter_and_prioritize_over_http(server: ExtenderServer, cache_capable: bool) -> None:
    ext = {
        "urlPrefix": server.url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 1,
        "nodeCacheCapable": cache_capable,
    }
    run = simulate_small(*NODES, make_pod("p").req(cpu="1").obj(), config=config(ext))
    assert placements(run) == {"default/p": "c"}
    assert server.verbs() == ["filter", "prioritize"]
    filter_body, prioritize_body = (body for _, body in server.requests)
    # Node names only when the extender caches nodes, else full Node objects.
    assert (filter_body["NodeNames"] is not None) is cache_capable
    assert _names(filter_body) == list("abcd")
    assert filter_body["Pod"]["metadata"]["name"] == "p"
    # Only the nodes that passed the extender's Filter are scored.
    assert _names(prioritize_body) == ["b", "c"]


def test_rejections_make_the_failed_scheduling_message(server: ExtenderServer) -> None:
    # Only a and d fit the pod's cpu; the extender fails both, with its own messages.
    nodes = [
        node("a", **{REJECT_LABEL: "no-gpu-driver"}),
        node("d", **{UNSCHEDULABLE_LABEL: "gpu-busy"}),
    ]
    nodes += [node("small", cpu="1")]
    ext = {"urlPrefix": server.url, "filterVerb": "filter"}
    run = simulate_small(*nodes, make_pod("p").req(cpu="2").obj(), config=config(ext))
    assert placements(run) == {"default/p": None}
    message = failed_scheduling(run, "p")[0]
    assert message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 1 gpu busy, 1 no gpu driver. "
    )
    # d failed with Unschedulable: preemption may help there (nothing to preempt, though).
    assert "preemption: 0/3 nodes are available:" in message


@pytest.mark.parametrize(
    ("behaviour", "want"),
    [
        ({"status": {"filter": 500}}, "failed filter with extender at URL {url}filter, code 500"),
        ({"error": {"filter": "out of GPUs"}}, "out of GPUs"),
        (
            {"delay": {"filter": 0.5}},
            'Post "{url}filter": context deadline exceeded (Client.Timeout exceeded while '
            "awaiting headers)",
        ),
    ],
    ids=["http 500", "error in answer", "timeout"],
)
@pytest.mark.parametrize("ignorable", [False, True], ids=["required", "ignorable"])
def test_filter_errors(server: ExtenderServer, behaviour: dict, want: str, ignorable: bool) -> None:
    for knob, value in behaviour.items():
        getattr(server.behaviour, knob).update(value)
    ext = {
        "urlPrefix": server.url,
        "filterVerb": "filter",
        "httpTimeout": "200ms",
        "ignorable": ignorable,
    }
    run = simulate_small(*NODES, make_pod("p").req(cpu="1").obj(), config=config(ext))
    if ignorable:
        # Passed over: the plugins alone decide (a and d are fine for them).
        assert placements(run)["default/p"] is not None
        assert failed_scheduling(run, "p") == []
    else:
        assert placements(run) == {"default/p": None}
        assert failed_scheduling(run, "p")[0] == want.format(url=server.url)


def test_unreachable_extender() -> None:
    with extender_server(LabelExtender(ExtenderConfig())) as s:
        url = s.url
    port = url.rsplit(":", 1)[1].rstrip("/")
    run = simulate_small(
        *NODES, make_pod("p").obj(), config=config({"urlPrefix": url, "filterVerb": "filter"})
    )
    assert failed_scheduling(run, "p")[0] == (
        f'Post "{url}filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


def test_prioritize_errors_give_no_score(server: ExtenderServer) -> None:
    server.behaviour.status["prioritize"] = 500
    ext = {"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 1}
    nodes = [node("b", **{SCORE_LABEL: "10"}), node("big", cpu="16")]
    run = simulate_small(*nodes, make_pod("p").req(cpu="1").obj(), config=config(ext))
    # Without the extender's score the plugins prefer the emptier, larger node.
    assert placements(run) == {"default/p": "big"}
    record = run.attempts[next(iter(run.attempts))][-1]
    assert [(c.verb, c.result) for c in record.extender_calls()] == [
        (
            "prioritize",
            f"error, no score given: failed prioritize with extender at URL {server.url}"
            "prioritize, code 500",
        )
    ]


# The plugins prefer the larger node by about 18 points: an extender score of 1 (10
# points at weight 1) does not change that, at weight 5 (50 points) it does.
@pytest.mark.parametrize(("weight", "want"), [(1, "big"), (5, "b")], ids=["weight 1", "weight 5"])
def test_prioritize_weight_is_scaled(server: ExtenderServer, weight: int, want: str) -> None:
    ext = {"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": weight}
    nodes = [node("b", **{SCORE_LABEL: "1"}), node("big", cpu="16")]
    run = simulate_small(*nodes, make_pod("p").req(cpu="1").obj(), config=config(ext))
    assert placements(run) == {"default/p": want}
    scores = run.attempts[next(iter(run.attempts))][-1].scores
    ext_score = next(p for p in scores.plugins if p.plugin == server.url)
    by_node = dict(zip(scores.names, ext_score.weighted.tolist(), strict=True))
    # score 1 (of MaxExtenderPriority 10) × weight × (MaxNodeScore 100 / 10)
    assert by_node == {"b": 1 * weight * 10, "big": 0}
    plugins_only = sum(p.weighted for p in scores.plugins if p.plugin != server.url)
    assert (scores.totals == plugins_only + ext_score.weighted).all()


@pytest.mark.parametrize(
    ("requests", "called"),
    [({"cpu": "1"}, False), ({"cpu": "1", GPU: "1"}, True)],
    ids=["not interested", "managed resource"],
)
def test_managed_resources_select_the_pods(
    server: ExtenderServer, requests: dict, called: bool
) -> None:
    ext = {
        "urlPrefix": server.url,
        "filterVerb": "filter",
        "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
    }
    run = simulate_small(*NODES, make_pod("p").req(**requests).obj(), config=config(ext))
    assert (server.verbs() == ["filter"]) is called
    # No node has the GPU resource: only ignoredByScheduler lets the pod through
    # NodeResourcesFit, and the extender then decides (b or c).
    assert placements(run)["default/p"] in (("b", "c") if called else tuple("abcd"))


def test_managed_resource_not_ignored_is_checked_by_the_plugins(server: ExtenderServer) -> None:
    ext = {"urlPrefix": server.url, "filterVerb": "filter", "managedResources": [{"name": GPU}]}
    run = simulate_small(*NODES, make_pod("p").req(cpu="1", **{GPU: "1"}).obj(), config=config(ext))
    assert placements(run) == {"default/p": None}
    assert failed_scheduling(run, "p")[0].startswith(
        f"0/4 nodes are available: 4 Insufficient {GPU}."
    )
    # NodeResourcesFit rejected every node: no feasible node is left to send.
    assert server.verbs() == []


def test_bind_through_the_extender(server: ExtenderServer) -> None:
    ext = {"urlPrefix": server.url, "filterVerb": "filter", "bindVerb": "bind"}
    run = simulate_small(*NODES, make_pod("p").req(cpu="1").obj(), config=config(ext))
    node_name = placements(run)["default/p"]
    assert node_name in ("b", "c")
    bound = server.logic.bound
    assert [(b.pod_namespace, b.pod_name, b.node) for b in bound] == [("default", "p", node_name)]
    assert bound[0].pod_uid
    assert server.verbs() == ["filter", "bind"]


@pytest.mark.parametrize("ignorable", [False, True], ids=["required", "ignorable"])
def test_bind_errors(server: ExtenderServer, ignorable: bool) -> None:
    server.behaviour.error["bind"] = "binding refused"
    ext = {"urlPrefix": server.url, "bindVerb": "bind", "ignorable": ignorable}
    run = simulate_small(node("b"), make_pod("p").req(cpu="1").obj(), config=config(ext))
    if ignorable:
        # Passed over: DefaultBinder binds.
        assert placements(run) == {"default/p": "b"}
    else:
        assert placements(run) == {"default/p": None}
        assert "binding refused" in failed_scheduling(run, "p")[0]


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


CLASSES = [priority_class("p1", 1), priority_class("p2", 2), priority_class("p100", 100)]


def _preemption_objects() -> list[Any]:
    nodes = [node("n1", cpu="2"), node("n2", cpu="2")]
    low = [
        make_pod("low-1").priority_class("p1").req(cpu="2").node("n1").obj(),
        make_pod("low-2")
        .priority_class("p2")
        .labels({PROTECTED_LABEL: "yes"})
        .req(cpu="2")
        .node("n2")
        .obj(),
    ]
    return [*CLASSES, *nodes, *low, make_pod("high").priority_class("p100").req(cpu="2").obj()]


@pytest.mark.parametrize("cache_capable", [False, True], ids=["victims as pods", "victims by uid"])
def test_preemption_asks_the_extender(server: ExtenderServer, cache_capable: bool) -> None:
    ext = {"urlPrefix": server.url, "preemptVerb": "preempt", "nodeCacheCapable": cache_capable}
    objs = _preemption_objects()
    run = simulate_small(*objs, config=config(ext))
    # low-1 (priority 1) would be the default victim; the extender protects low-2 only, so
    # n1 remains. Without the extender the outcome is the same: check the question asked.
    assert placements(run)["default/high"] == "n1"
    body = next(b for v, b in server.requests if v == "preempt")
    key = "NodeNameToMetaVictims" if cache_capable else "NodeNameToVictims"
    assert sorted(body[key]) == ["n1", "n2"]
    assert body["NodeNameToVictims" if cache_capable else "NodeNameToMetaVictims"] is None
    if not cache_capable:
        assert body[key]["n2"]["Pods"][0]["metadata"]["name"] == "low-2"
    else:
        assert set(body[key]["n2"]["Pods"][0]) == {"UID"}


def test_preemption_follows_the_extender(server: ExtenderServer) -> None:
    # Protect the cheaper victim: the extender leaves only n2's candidate.
    nodes = [node("n1", cpu="2"), node("n2", cpu="2")]
    objs = [
        *CLASSES,
        *nodes,
        make_pod("low-1")
        .priority_class("p1")
        .labels({PROTECTED_LABEL: "yes"})
        .req(cpu="2")
        .node("n1")
        .obj(),
        make_pod("low-2").priority_class("p2").req(cpu="2").node("n2").obj(),
        make_pod("high").priority_class("p100").req(cpu="2").obj(),
    ]
    run = simulate_small(*objs, config=config({"urlPrefix": server.url, "preemptVerb": "preempt"}))
    assert placements(run)["default/high"] == "n2"
    assert "default/low-1" in placements(run) and placements(run)["default/low-1"] == "n1"
    preemptor = next(uid for uid, rs in run.attempts.items() if rs[0].pod_key == "default/high")
    calls = [c for r in run.attempts[preemptor] for c in r.extender_calls()]
    assert ("preempt", "kept 1 of 2 candidate(s)") in [(c.verb, c.result) for c in calls]


def test_preemption_error_for_unknown_victim(server: ExtenderServer) -> None:
    class Liar(LabelExtender):
        def preempt(self, pod: Any, node_to_victims: Any) -> Any:
            from kubesched.extenders import MetaVictims

            return {"n1": MetaVictims(["no-such-uid"], 0)}

    server.logic = Liar(ExtenderConfig())
    run = simulate_small(
        *_preemption_objects(), config=config({"urlPrefix": server.url, "preemptVerb": "preempt"})
    )
    assert placements(run)["default/high"] is None
    messages = failed_scheduling(run, "high")
    assert any(
        f"extender: {server.url} claims to preempt pod (UID: &{{no-such-uid}}) on node: n1, "
        "but the pod is not found on that node" in m
        for m in messages
    )


def test_in_process_extender_places_as_the_webhook_does(server: ExtenderServer) -> None:
    pods = [make_pod(f"p{i}").req(cpu="1").obj() for i in range(6)]
    verbs = {
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 2,
        "bindVerb": "bind",
    }
    over_http = simulate_small(*NODES, *pods, config=config({"urlPrefix": server.url, **verbs}))
    in_process = simulate_small(
        *NODES, *pods, config=config({"urlPrefix": "python://labels", **verbs})
    )
    assert placements(over_http) == placements(in_process)
    assert set(placements(in_process).values()) <= {"b", "c"}


def test_in_process_errors_are_extender_errors() -> None:
    class Broken(LabelExtender):
        def filter(self, pod: Any, nodes: Any) -> Any:
            raise RuntimeError("driver crashed")

    from kubesched.extenders import Extender

    ext = Extender(
        ExtenderConfig(url_prefix="python://broken", filter_verb="f"), Broken(ExtenderConfig())
    )
    from kubesched.extenders import ExtenderError
    from kubesched.framework.types import NodeInfo

    with pytest.raises(ExtenderError, match='extender "python://broken" filter: driver crashed'):
        ext.filter(make_pod("p").obj(), [NodeInfo(NODES[0])])


def test_filtered_node_not_asked_about_is_an_error(server: ExtenderServer) -> None:
    class Inventor(LabelExtender):
        def filter(self, pod: Any, nodes: Any) -> Any:
            result = super().filter(pod, nodes)
            result.node_names.append("ghost")
            return result

    server.logic = Inventor(ExtenderConfig())
    ext = {"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}
    run = simulate_small(*NODES, make_pod("p").obj(), config=config(ext))
    assert failed_scheduling(run, "p")[0] == (
        f'extender "{server.url}" claims a filtered node "ghost" which is not found in the '
        "input node list"
    )


@pytest.mark.parametrize(
    ("tls", "ok"),
    [
        ({"enableHTTPS": True}, True),  # no CA: not verified, as kube-scheduler
        ({"tlsConfig": {"caFile": "{ca}"}}, True),
        ({"tlsConfig": {"caData": "{ca_data}"}}, True),
        ({"tlsConfig": {"caFile": "{ca}", "serverName": "extender.test"}}, True),
        ({"tlsConfig": {"caFile": "{ca}", "serverName": "other.test"}}, False),
        ({"tlsConfig": {"caFile": "{other_ca}"}}, False),
        ({"tlsConfig": {"insecure": True}}, True),
    ],
    ids=[
        "https no CA",
        "caFile",
        "caData",
        "serverName",
        "wrong serverName",
        "wrong CA",
        "insecure",
    ],
)
def test_tls(tmp_path: Path, tls: dict, ok: bool) -> None:
    import base64

    cert, key = self_signed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    other_ca, _ = self_signed(other)
    values = {
        "ca": str(cert),
        "ca_data": base64.b64encode(cert.read_bytes()).decode(),
        "other_ca": str(other_ca),
    }
    tls_config = {
        k: (
            {kk: vv.format(**values) if isinstance(vv, str) else vv for kk, vv in v.items()}
            if isinstance(v, dict)
            else v
        )
        for k, v in tls.items()
    }
    with extender_server(LabelExtender(ExtenderConfig()), NODES, tls=(cert, key)) as s:
        ext = {"urlPrefix": s.url, "filterVerb": "filter", **tls_config}
        run = simulate_small(*NODES, make_pod("p").req(cpu="1").obj(), config=config(ext))
        if ok:
            assert placements(run)["default/p"] in ("b", "c")
            assert s.verbs() == ["filter"]
        else:
            assert placements(run) == {"default/p": None}
            assert failed_scheduling(run, "p")[0].startswith(f'Post "{s.url}filter": tls: ')


@pytest.mark.parametrize("inline", [False, True], ids=["files", "data"])
def test_client_certificate(tmp_path: Path, inline: bool) -> None:
    import base64
    import ssl

    from tests.server.certs import ca_and_client

    cert, key = self_signed(tmp_path)
    client_ca, client_cert, client_key = ca_and_client(tmp_path, "kubesched", [])
    with extender_server(LabelExtender(ExtenderConfig()), NODES, tls=(cert, key)) as s:
        context = s.httpd.socket.context
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=client_ca)
        base = {"urlPrefix": s.url, "filterVerb": "filter"}
        without = simulate_small(
            *NODES, make_pod("p").obj(), config=config({**base, "tlsConfig": {"caFile": str(cert)}})
        )
        assert placements(without) == {"default/p": None}
        with_cert = simulate_small(
            *NODES,
            make_pod("p").obj(),
            config=config(
                {
                    **base,
                    "tlsConfig": {
                        "caFile": str(cert),
                        **(
                            {
                                "certData": base64.b64encode(client_cert.read_bytes()).decode(),
                                "keyData": base64.b64encode(client_key.read_bytes()).decode(),
                            }
                            if inline
                            else {"certFile": str(client_cert), "keyFile": str(client_key)}
                        ),
                    },
                }
            ),
        )
        assert placements(with_cert)["default/p"] in ("b", "c")


def test_a_pod_an_extender_rejected_moves_on_any_event(server: ExtenderServer) -> None:
    ext = {"urlPrefix": server.url, "filterVerb": "filter"}
    pods = [make_pod("p").req(cpu="3").obj(), make_pod("q").req(cpu="3").obj()]
    run = simulate_small(
        node("a", **{REJECT_LABEL: "no-gpu-driver"}), node("b"), *pods, config=config(ext)
    )
    rejectors = {
        rs[0].pod_key: rs[0].diagnosis.unschedulable_plugins for rs in run.attempts.values()
    }
    # As upstream, the extender is recorded whenever it removed nodes: p went to b, q fits
    # only a by the plugins (NodeResourcesFit rejected b) and the extender rejects a.
    assert rejectors == {
        "default/p": {EXTENDER_NAME},
        "default/q": {EXTENDER_NAME, "NodeResourcesFit"},
    }
    alone = simulate_small(node("b"), make_pod("r").obj(), config=config(ext))
    assert [rs[0].diagnosis.unschedulable_plugins for rs in alone.attempts.values()] == [set()]
    # Extenders register no events: any cluster event moves such a pod.
    fwk = make_framework(extenders=(object(),))
    assert (EXTENDER_NAME, WILDCARD_EVENT, None) in fwk.events_to_register()
    assert not any(p == EXTENDER_NAME for p, _, _ in make_framework().events_to_register())


@pytest.mark.parametrize(
    ("cache_capable", "answer", "passing"),
    [
        (True, {"NodeNames": ["b"], "Nodes": {"items": [{"metadata": {"name": "c"}}]}}, ["b"]),
        (True, {"NodeNames": None, "Nodes": {"items": [{"metadata": {"name": "c"}}]}}, ["c"]),
        (False, {"NodeNames": ["b"], "Nodes": {"items": [{"metadata": {"name": "c"}}]}}, ["c"]),
        (False, {"nodenames": ["b"]}, []),
        (False, {"nodes": {"items": [{"metadata": {"name": "b"}}]}}, ["b"]),
    ],
    ids=["names", "cache capable, nodes only", "nodes win", "names ignored", "lower case"],
)
def test_which_answer_field_counts(cache_capable: bool, answer: dict, passing: list[str]) -> None:
    from kubesched.extenders.webhook import HTTPExtenderClient

    client = HTTPExtenderClient(
        ExtenderConfig(url_prefix="http://e/", filter_verb="f", node_cache_capable=cache_capable)
    )
    client.send = lambda verb, args: answer  # the answer as decoded JSON
    assert client.filter(make_pod("p").obj(), NODES).node_names == passing
