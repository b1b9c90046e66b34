"""A scheduler on an embedded cluster with chosen plugins, driven step by step by tests."""

from __future__ import annotations

from typing import Any

from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.config import config_from_dict, effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import PluginRegistry
from kubesched.scheduler import EventHandlers, Scheduler
from kubesched.testing import make_node
from kubesched_builtin.defaultbinder import DefaultBinder
from kubesched_builtin.queuesort import PrioritySort

V1 = "kubescheduler.config.k8s.io/v1"


def nodes(n: int, cpu: str = "2", **capacity: Any) -> list[Any]:
    """``n`` nodes ``n0``.. with ``cpu`` cores and 4Gi of memory (plus ``capacity``)."""
    return [make_node(f"n{i}").capacity(cpu=cpu, memory="4Gi", **capacity).obj() for i in range(n)]


class Harness:
    """``Harness(plugins=[...])``: one profile enabling exactly ``plugins`` (plus
    PrioritySort and DefaultBinder) through multiPoint, or ``profiles`` given as
    ``{schedulerName: [plugin names]}``. ``objects`` are applied to the cluster; ``gates``
    are ``--feature-gates`` text (``"A=false,B=true"``)."""

    def __init__(
        self,
        plugins: list[type] = (),
        objects: list[Any] = (),
        *,
        profiles: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
        plugin_config: list[dict] | None = None,
        seed: int = 0,
        concurrent_binding: bool = False,
        gates: str = "",
    ) -> None:
        self.registry = PluginRegistry()
        for cls in (PrioritySort, DefaultBinder, *plugins):
            if cls.name not in self.registry:
                self.registry.add_class(cls)
        names = [cls.name for cls in plugins]
        profiles = profiles or {"default-scheduler": names}
        data = {
            "apiVersion": V1,
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": name,
                    "plugins": {
                        "multiPoint": {
                            "disabled": [{"name": "*"}],
                            "enabled": [
                                {"name": n} for n in ("PrioritySort", "DefaultBinder", *enabled)
                            ],
                        }
                    },
                    "pluginConfig": plugin_config or [],
                }
                for name, enabled in profiles.items()
            ],
            **(extra or {}),
        }
        config = config_from_dict(data, self.registry)
        self.clock = FakeClock(0.0)
        self.cluster = MemoryCluster(self.clock)
        self.rejections = self.cluster.apply(list(objects))
        self.scheduler = Scheduler(
            effective_configuration(
                config, self.registry, gates=parse_feature_gates([gates] if gates else [])
            ),
            self.registry,
            self.cluster,
            clock=self.clock,
            seed=seed,
            concurrent_binding=concurrent_binding,
        )
        self.records: list[Any] = []
        self.scheduler.observers.append(self.records.append)
        EventHandlers(self.scheduler).connect(self.cluster)

    def run(self) -> int:
        """Schedule until the active queue is empty; the number of cycles run."""
        n = 0
        while self.scheduler.schedule_one():
            n += 1
        self.scheduler.drain_ready_bindings()
        return n

    def step(self, seconds: float) -> None:
        """Advance virtual time and run the timers that are due."""
        self.clock.step(seconds)
        now = self.clock.now()
        s = self.scheduler
        self.cluster.advance(now)
        s.expire_waiting_pods()
        s.drain_ready_bindings()
        s.queue.flush_backoff_q_completed()
        s.queue.flush_unschedulable_pods_leftover()

    def pod(self, name: str, namespace: str = "default"):
        """The pod as the cluster has it now."""
        return self.cluster.get("Pod", namespace, name)

    def node_of(self, name: str) -> str | None:
        return self.pod(name).spec.node_name

    def events(self, reason: str) -> list[Any]:
        return [e for e in self.cluster.events if e.reason == reason]

    def requested_cpu(self, node: str) -> int:
        return self.scheduler.cache.get_node(node).requested.milli_cpu

    def metric(self, name: str, **labels: str) -> float | None:
        return self.scheduler.metrics.registry.get_sample_value(name, labels)
