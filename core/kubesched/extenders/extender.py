"""One configured extender as the scheduler sees it (upstream ``HTTPExtender``): verbs,
interest in a pod, and the checks on its answers, over HTTP or in-process."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from importlib_metadata import entry_points

from kubesched.api import Pod
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.errors import UserInputError
from kubesched.extenders.types import (
    ExtenderBindingArgs,
    ExtenderError,
    InProcessExtender,
    Victims,
)
from kubesched.extenders.webhook import HTTPExtenderClient
from kubesched.framework.diagnosis import ExtenderVerdict

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "kubesched.extenders"
"""The entry point group of in-process extenders (``urlPrefix: python://NAME``)."""
IN_PROCESS_SCHEME = "python://"
"""The ``urlPrefix`` scheme that selects an in-process extender."""


def in_process_name(url_prefix: str) -> str | None:
    """The entry point name of a ``python://NAME`` url prefix, else None."""
    if url_prefix.startswith(IN_PROCESS_SCHEME):
        return url_prefix[len(IN_PROCESS_SCHEME) :].strip("/")
    return None


def in_process_names() -> list[str]:
    """The in-process extenders installed (entry point names, sorted)."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def load_in_process(name: str, config: ExtenderConfig) -> InProcessExtender:
    """The in-process extender ``name``: its entry point's object called with the
    extender's configuration."""
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        raise ExtenderError(f"in-process extender {name!r} is not installed")
    return found[0].load()(config)


class Extender:
    """A configured extender: which verbs it serves, whether a pod concerns it, and the
    calls, whose answers are checked against the question as upstream checks them."""

    def __init__(self, config: ExtenderConfig, client: Any = None) -> None:
        self.config = config
        self.name = config.url_prefix
        """The extender's name in messages and score tables (upstream: its URL)."""
        self.weight = config.weight
        self.ignorable = config.ignorable
        self.managed = frozenset(r.name for r in config.managed_resources)
        if client is None:
            name = in_process_name(config.url_prefix)
            client = (
                load_in_process(name, config) if name is not None else HTTPExtenderClient(config)
            )
        self.client = client

    def __repr__(self) -> str:
        return f"Extender({self.name!r})"

    @property
    def is_filter(self) -> bool:
        """It has a filterVerb."""
        return bool(self.config.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        """It has a prioritizeVerb."""
        return bool(self.config.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        """It has a bindVerb (and binds instead of the Bind plugins)."""
        return bool(self.config.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        """It has a preemptVerb."""
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: Pod) -> bool:
        """Without managedResources, every pod; else a pod whose containers or init
        containers request or limit one of them."""
        if not self.managed:
            return True
        spec = pod.spec
        for container in (*spec.containers, *spec.init_containers):
            resources = container.resources
            if not self.managed.isdisjoint(resources.requests or ()):
                return True
            if not self.managed.isdisjoint(resources.limits or ()):
                return True
        return False

    def filter(
        self, pod: Pod, nodes: Sequence[Any]
    ) -> tuple[list[Any], dict[str, str], dict[str, str]]:
        """``(passing, failed, failed_and_unresolvable)`` of ``nodes`` (NodeInfos);
        raises ``ExtenderError``."""
        result = self._call("filter", pod, [ni.node for ni in nodes])
        if result.error:
            raise ExtenderError(result.error)
        by_name = {ni.name: ni for ni in nodes}
        passing = []
        for name in result.node_names or ():
            ni = by_name.get(name)
            if ni is None:
                raise ExtenderError(
                    f'extender "{self.name}" claims a filtered node "{name}" which is not '
                    "found in the input node list"
                )
            passing.append(ni)
        return passing, result.failed_nodes, result.failed_and_unresolvable_nodes

    def prioritize(self, pod: Pod, nodes: Sequence[Any]) -> dict[str, int]:
        """Each scored node's 0-10 score by name; raises ``ExtenderError``."""
        return {h.host: h.score for h in self._call("prioritize", pod, [ni.node for ni in nodes])}

    def process_preemption(
        self, pod: Pod, node_to_victims: Mapping[str, Victims], node_info_of: Any
    ) -> dict[str, tuple[list[Any], int]]:
        """The candidates the extender keeps: per node, the victims' PodInfos (resolved
        from ``node_info_of(name)``, the snapshot's NodeInfo, ``KeyError`` when there is
        none) and the number of PDB violations; raises ``ExtenderError``."""
        answer = self._call("preempt", pod, node_to_victims)
        out: dict[str, tuple[list[Any], int]] = {}
        for node_name, meta in answer.items():
            try:
                info = node_info_of(node_name)
            except KeyError as err:
                raise ExtenderError(err.args[0]) from None
            pods_by_uid = {p.uid: p for p in info.pods}
            pods = []
            for uid in meta.pod_uids:
                victim = pods_by_uid.get(uid)
                if victim is None:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on "
                        f"node: {node_name}, but the pod is not found on that node"
                    )
                pods.append(victim)
            out[node_name] = (pods, meta.num_pdb_violations)
        return out

    def bind(self, pod: Pod, node_name: str) -> None:
        """Ask the extender to bind ``pod`` to ``node_name``; raises ``ExtenderError``."""
        meta = pod.metadata
        self._call(
            "bind",
            ExtenderBindingArgs(meta.name or "", meta.namespace or "", meta.uid or "", node_name),
        )

    def passed_over(self, verb: str, err: ExtenderError, verdicts: list[ExtenderVerdict]) -> bool:
        """Whether scheduling goes on without this extender after ``err`` at ``verb``:
        when it is ignorable (the skip is logged and recorded in ``verdicts``)."""
        if not self.ignorable:
            return False
        log.info(
            "Skipping extender %s in %s as it returned error and has ignorable flag set: %s",
            self.name,
            verb,
            err,
        )
        verdicts.append(ExtenderVerdict(self.name, verb, f"error, passed over (ignorable): {err}"))
        return True

    def _call(self, verb: str, *args: Any) -> Any:
        try:
            return getattr(self.client, verb)(*args)
        except ExtenderError:
            raise
        except Exception as err:
            # An in-process extender that raises fails the call as a transport error would.
            raise ExtenderError(f'extender "{self.name}" {verb}: {err}') from err


def build_extenders(configs: Sequence[ExtenderConfig]) -> tuple[Extender, ...]:
    """The configured extenders, in configuration order. An extender that cannot be set
    up (a TLS file missing or not PEM, an in-process extender whose construction fails)
    is a ``UserInputError`` naming it."""
    built = []
    for i, config in enumerate(configs):
        try:
            built.append(Extender(config))
        # Whatever setting it up raised is the configuration's problem to report.
        except Exception as err:
            raise UserInputError(
                f"cannot set up extender {config.url_prefix!r}: {err}",
                obj=f"KubeSchedulerConfiguration extenders[{i}]",
            ) from None
    return tuple(built)
