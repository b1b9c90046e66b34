"""SySched: place pods where they add the fewest syscalls others may not use (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/sysched``. A pod's syscall set is the
union of the SeccompProfile objects (security-profiles-operator) its seccomp settings
name: the pod's and each container's ``securityContext.seccompProfile`` of type
``Localhost`` (``localhostProfile: operator/<namespace>/<name>.json``), and the first
``seccomp.security.alpha.kubernetes.io`` annotation; only the ``SCMP_ACT_ALLOW`` and
``SCMP_ACT_LOG`` rules count. A pod that names none gets the default profile (by
default ``default/all-syscalls``: every syscall). A node's syscall set is the union of
its pods'. The raw score of a node is the number of *extraneous* syscalls the placement
creates: the node's syscalls the pod does not use, plus, for each pod already there, the
syscalls of the node with the new pod that it does not use. NormalizeScore reverses:
the fewest extraneous syscalls score 100.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pydantic import Field

from kubesched import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    NodeScores,
    PluginArgs,
    StateKey,
    default_normalize_score,
    hookimpl,
)
from kubesched.api import Pod

from .api import SECCOMP_PROFILE_KIND, SeccompProfile

NAME = "SySched"

SPO_ANNOTATION = "seccomp.security.alpha.kubernetes.io"
"""Annotation keys containing this name a profile path (older SPO versions set it)."""

_COUNTED_ACTIONS = ("SCMP_ACT_ALLOW", "SCMP_ACT_LOG")


class SySchedArgs(PluginArgs):
    """``SySchedArgs`` (scheduler-plugins ``apis/config/v1``) with its defaults."""

    default_profile_namespace: str = Field(
        default="default",
        description="Namespace of the SeccompProfile used for pods that name none.",
    )
    default_profile_name: str = Field(
        default="all-syscalls",
        description="Name of the SeccompProfile used for pods that name none (all syscalls).",
    )


def parse_profile_path(path: str) -> tuple[str, str]:
    """``operator/<namespace>/<name>.json`` (any prefix) -> ``(namespace, name)``;
    ``("", "")`` for a path of fewer than two parts."""
    parts = path.split("/") if path else []
    if len(parts) < 2:
        return "", ""
    name, _ = posixpath.splitext(parts[-1])
    return parts[-2], name


def profile_syscalls(profile: SeccompProfile | None) -> frozenset[str]:
    """The syscalls a profile allows or logs."""
    if profile is None:
        return frozenset()
    return frozenset(
        name
        for rule in profile.spec.syscalls
        if rule.action in _COUNTED_ACTIONS
        for name in rule.names
    )


def profile_paths(pod: Pod) -> list[str]:
    """The profile paths the pod's seccomp settings name, in upstream's order."""
    paths = []
    for sc in (pod.spec.security_context, *(c.security_context for c in pod.spec.containers)):
        profile = sc.seccomp_profile if sc is not None else None
        if profile is not None and profile.type == "Localhost" and profile.localhost_profile:
            paths.append(profile.localhost_profile)
    # Only the first matching annotation counts (upstream stops at the first one its map
    # iteration meets; sorted here, so that the choice is reproducible).
    for key, value in sorted((pod.metadata.annotations or {}).items()):
        if SPO_ANNOTATION in key:
            paths.append(value)
            break
    return paths


POD_SYSCALLS_KEY: StateKey[frozenset[str]] = StateKey("PreScore" + NAME)
"""The pod's syscall set, worked out once per cycle."""


def _profile_refs(pod: Pod) -> tuple[tuple[str, str], ...]:
    return tuple(parse_profile_path(path) for path in profile_paths(pod))


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


class SySched:
    """Prefers nodes where the pod and the pods already there share their syscalls (Score)."""

    name = NAME
    sdk_version = "1.5"
    Args = SySchedArgs
    reads = (SECCOMP_PROFILE_KIND,)

    def __init__(self, args: SySchedArgs | None, handle: Any) -> None:
        args = args or SySchedArgs()
        self.handle = handle
        self.default_profile = (args.default_profile_namespace, args.default_profile_name)
        # uid -> (pod object, profile refs, profile objects read, syscalls).
        self._syscalls: dict[
            str, tuple[Pod, tuple[tuple[str, str], ...], tuple[Any, ...], frozenset[str]]
        ] = {}

    def _profile(self, namespace: str, name: str) -> SeccompProfile | None:
        lister = self.handle.lister
        if lister is None or not namespace or not name:
            return None
        return lister.get_object(SECCOMP_PROFILE_KIND, namespace, name)  # type: ignore[return-value]

    def syscalls(self, pod: Pod) -> frozenset[str]:
        """The pod's syscall set (the default profile's when its profiles give none).

        Remembered per pod with the profile objects it was read from: a pod already on a
        node is read again only when it or one of its profiles changed."""
        uid = pod.metadata.uid or ""
        cached = self._syscalls.get(uid)
        refs = cached[1] if cached is not None and cached[0] is pod else _profile_refs(pod)
        profiles = tuple(self._profile(ns, name) for ns, name in refs)
        default = self._profile(*self.default_profile)
        if cached is not None and cached[0] is pod and _same(cached[2], (*profiles, default)):
            return cached[3]
        found: set[str] = set()
        for profile in profiles:
            found |= profile_syscalls(profile)
        result = frozenset(found) if found else profile_syscalls(default)
        self._syscalls[uid] = (pod, refs, (*profiles, default), result)
        return result

    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod) -> None:
        state.write(POD_SYSCALLS_KEY, self.syscalls(pod))

    @hookimpl
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        pod_syscalls = state.get(POD_SYSCALLS_KEY)
        if pod_syscalls is None:
            pod_syscalls = self.syscalls(pod)
        if not pod_syscalls:
            # Upstream scores every node MaxInt64 here, which normalises to 100 for all;
            # 0 everywhere normalises the same way.
            return 0
        others = [self.syscalls(pi.pod) for pi in node_info.pods]
        if not others:
            return 0
        host = frozenset().union(*others)
        total = len(host - pod_syscalls)
        with_pod = host | pod_syscalls
        total += sum(len(with_pod - s) for s in others)
        return total

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
