"""SySched: syscall sets, scores and normalisation on the cases of scheduler-plugins'
``sysched_test.go``."""

from __future__ import annotations

import pytest

from kubesched import CycleState, NodeInfo, NodeScores, PodInfo
from kubesched.api import Pod, parse_manifests, resolve_kind
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_contrib.sysched import NAME, SeccompProfile, SySched
from kubesched_contrib.sysched.plugin import parse_profile_path

BASE = ["clone", "socket", "getuid", "read", "write", "openat", "close", "mmap", "futex"]
Z = [*BASE, "fchmod"]
X = [*BASE, "dup3"]
FULL = [*BASE, "dup3", "fchmod", "pivot_root", "_sysctl", "adjtimex", "sync", "acct"]
ANNOTATION = "seccomp.security.alpha.kubernetes.io"


def profile(name: str, names: list[str], action: str = "SCMP_ACT_ALLOW") -> SeccompProfile:
    return SeccompProfile.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "defaultAction": "SCMP_ACT_LOG",
                "architectures": ["SCMP_ARCH_X86_64"],
                "syscalls": [{"action": action, "names": names}],
            },
        }
    )


PROFILES = [profile("z-seccomp", Z), profile("x-seccomp", X), profile("full-seccomp", FULL)]


def sysched(profiles=PROFILES):
    fw = make_framework(
        SySched,
        args={NAME: {"defaultProfileName": "full-seccomp"}},
        lister=StaticLister(profiles),
    )
    return fw.plugin(NAME)


def annotated(name: str, profile_name: str, node: str | None = None) -> Pod:
    b = make_pod(name).annotations({ANNOTATION: f"localhost/operator/default/{profile_name}.json"})
    if node:
        b.node(node)
    return b.obj()


def with_security_context(where: str) -> Pod:
    manifest = make_pod("p").container().manifest()
    sc = {
        "seccompProfile": {
            "type": "Localhost",
            "localhostProfile": "localhost/operator/default/z-seccomp.json",
        }
    }
    if where == "pod":
        manifest["spec"]["securityContext"] = sc
    else:
        manifest["spec"]["containers"][0]["securityContext"] = sc
    return Pod.model_validate(manifest)


def test_parse_name_ns():
    assert parse_profile_path("localhost/operator/default/httpd-seccomp.json") == (
        "default",
        "httpd-seccomp",
    )
    assert parse_profile_path("operator/ns/p.json") == ("ns", "p")
    assert parse_profile_path("p.json") == ("", "")
    assert parse_profile_path("") == ("", "")


SYSCALL_CASES = [
    ("Pod with annotation", annotated("p", "z-seccomp"), len(Z)),
    ("Pod with SecurityContext", with_security_context("pod"), len(Z)),
    ("Pod with Container SecurityContext", with_security_context("container"), len(Z)),
    ("Pod with empty SecurityContext", make_pod("p").obj(), len(FULL)),
    ("Pod naming a missing profile gets the default", annotated("p", "gone"), len(FULL)),
]


@pytest.mark.parametrize(
    ("pod", "expected"), [c[1:] for c in SYSCALL_CASES], ids=[c[0] for c in SYSCALL_CASES]
)
def test_get_syscalls(pod, expected):
    assert len(sysched().syscalls(pod)) == expected


def test_only_allow_and_log_rules_count():
    profiles = [
        SeccompProfile.model_validate(
            {
                "metadata": {"name": "mixed", "namespace": "default"},
                "spec": {
                    "syscalls": [
                        {"action": "SCMP_ACT_ALLOW", "names": ["read"]},
                        {"action": "SCMP_ACT_LOG", "names": ["write", "read"]},
                        {"action": "SCMP_ACT_ERRNO", "names": ["mount"]},
                    ]
                },
            }
        )
    ]
    assert sysched(profiles).syscalls(annotated("p", "mixed")) == {"read", "write"}


def test_profiles_of_pod_and_containers_are_merged():
    manifest = with_security_context("pod").model_dump(by_alias=True, exclude_none=True)
    manifest["spec"]["containers"][0]["securityContext"] = {
        "seccompProfile": {
            "type": "Localhost",
            "localhostProfile": "operator/default/x-seccomp.json",
        }
    }
    assert sysched().syscalls(Pod.model_validate(manifest)) == set(Z) | set(X)


SCORE_CASES = [
    ("Test score difference", "x-seccomp", 2),
    ("Test score same", "z-seccomp", 0),
]


@pytest.mark.parametrize(
    ("profile_name", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(profile_name, expected):
    info = NodeInfo(make_node("test").obj())
    info.add_pod(PodInfo(annotated("existing", "z-seccomp", "test")))
    assert (
        sysched().score(state=CycleState(), pod=annotated("pod", profile_name), node_info=info)
        == expected
    )


def test_score_empty_node_and_host_syscalls():
    pl = sysched()
    assert (
        pl.score(
            state=CycleState(),
            pod=annotated("pod", "x-seccomp"),
            node_info=NodeInfo(make_node("n").obj()),
        )
        == 0
    )
    # TestGetHostSyscalls "many": two pods on the node, z and x; the new pod uses z only:
    # host \ z = {dup3}; z sees {dup3}, x sees {fchmod}.
    info = NodeInfo(make_node("test").obj())
    info.add_pod(PodInfo(annotated("pod1", "z-seccomp", "test")))
    info.add_pod(PodInfo(annotated("pod2", "x-seccomp", "test")))
    assert pl.score(state=CycleState(), pod=annotated("pod", "z-seccomp"), node_info=info) == 3


def test_pod_without_any_syscalls_scores_alike_everywhere():
    pl = sysched(profiles=[])
    info = NodeInfo(make_node("n").obj())
    info.add_pod(PodInfo(annotated("existing", "z-seccomp", "n")))
    assert pl.score(state=CycleState(), pod=make_pod("p").obj(), node_info=info) == 0


NORMALIZE_CASES = [
    ("Normalize score", [100, 200], [50, 0]),
    ("Normalize score 2", [0, 200], [100, 0]),
    ("all zero", [0, 0], [100, 100]),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [c[1:] for c in NORMALIZE_CASES], ids=[c[0] for c in NORMALIZE_CASES]
)
def test_normalize_score(raw, expected):
    scores = NodeScores(["test", "test1"], raw)
    sysched().normalize_score(scores=scores)
    assert scores.values.tolist() == expected


def test_kind_and_security_context_parse():
    assert resolve_kind("SeccompProfile") is SeccompProfile
    (obj,) = parse_manifests(
        """
apiVersion: security-profiles-operator.x-k8s.io/v1beta1
kind: SeccompProfile
metadata: {name: web, namespace: apps}
spec:
  defaultAction: SCMP_ACT_ERRNO
  syscalls: [{action: SCMP_ACT_ALLOW, names: [read, write]}]
"""
    )
    assert obj.key == "apps/web"
    assert obj.spec.syscalls[0].names == ["read", "write"]
    pod = with_security_context("container")
    assert pod.spec.containers[0].security_context.seccomp_profile.type == "Localhost"


def test_pre_score_and_remembered_syscalls_follow_profile_changes():
    lister = StaticLister(PROFILES)
    fw = make_framework(SySched, args={NAME: {"defaultProfileName": "full-seccomp"}}, lister=lister)
    pl = fw.plugin(NAME)
    pod = annotated("p", "z-seccomp")
    state = CycleState()
    pl.pre_score(state=state, pod=pod)
    assert len(pl.syscalls(pod)) == len(Z)
    info = NodeInfo(make_node("n").obj())
    info.add_pod(PodInfo(annotated("existing", "x-seccomp", "n")))
    assert pl.score(state=state, pod=pod, node_info=info) == 2
    # The profile changes: the pod's set is read again.
    lister.add(profile("z-seccomp", [*Z, "reboot"]))
    assert len(pl.syscalls(pod)) == len(Z) + 1
