"""A failure's outcome does not depend on what else its worker played: a sweep gives, for
each failure, what that failure played alone on a fresh world gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import Node, load_manifests
from kubesched.cli.config_option import load_config_argument
from kubesched.config import default_configuration, effective_configuration
from kubesched.framework.registry import default_registry
from kubesched.resilience import engine, every_node, every_zone, settle
from kubesched.resilience.world import payload, play, setup

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resilience"


@pytest.fixture(scope="module")
def snapshot() -> tuple[bytes, list[Node]]:
    registry = default_registry()
    config = effective_configuration(default_configuration(registry), registry)
    settled, pending = settle(load_manifests([EXAMPLE]), config, registry=registry)
    assert pending == 0
    nodes = [o for o in settled if isinstance(o, Node)]
    return payload(settled, config, 0, 600.0), nodes


def test_sweep_equals_each_failure_played_alone(snapshot: tuple[bytes, list[Node]]) -> None:
    data, nodes = snapshot
    failures = [*every_node(nodes), *every_zone(nodes, "example")]
    world = setup(data)
    swept = [play(world, f) for f in failures]
    backwards = [play(world, f) for f in reversed(failures)][::-1]
    alone = [play(setup(data), f) for f in failures]
    assert swept == alone
    assert backwards == alone
    assert engine.run_sweep(data, failures, setup=setup, play=play, workers=1) == alone
    # Not vacuous: the failures differ from one another.
    assert len({o.model_dump_json(exclude={"failure", "nodes"}) for o in alone}) > 2


def test_the_world_is_untouched_by_a_play(snapshot: tuple[bytes, list[Node]]) -> None:
    data, nodes = snapshot
    world = setup(data)
    before = sorted(
        (p.key, p.spec.node_name, p.metadata.resource_version) for p in world.sim.cluster.pods()
    )
    now = world.sim.cluster.now()
    play(world, every_node(nodes)[0])
    after = sorted(
        (p.key, p.spec.node_name, p.metadata.resource_version) for p in world.sim.cluster.pods()
    )
    assert after == before and world.sim.cluster.now() == now


def test_the_workers_schedule_with_the_given_profile_and_gates(tmp_path: Path) -> None:
    registry = default_registry()
    path = tmp_path / "config.yaml"
    path.write_text(
        """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: packed
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""
    )
    effective = load_config_argument(
        str(path), registry, ["TaintTolerationComparisonOperators=true"]
    )[1]
    world = setup(payload([], effective, 5, 60.0))
    assert [p.scheduler_name for p in world.sim.effective.profiles] == ["packed"]
    assert world.sim.effective.feature_gates.overrides == {
        "TaintTolerationComparisonOperators": True
    }
    assert world.sim.effective.config == effective.config
    assert (world.sim.seed, world.window) == (5, 60.0)
