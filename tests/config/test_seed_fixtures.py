"""The configuration examples of the Kubernetes docs (tests/fixtures/k8s-docs/config-*.yaml).

The docs' examples say ``kubescheduler.config.k8s.io/v1beta3`` (and one
``v1alpha1``). Like kube-scheduler v1.36, kubesched reads only ``v1``: those files are
refused as written, in kube-scheduler's words, and validate once their apiVersion is
``v1`` (v1beta3's fields are v1's). The v1alpha1 example also uses the long-removed
``algorithmSource`` of the Policy API, which is then refused by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.config import config_from_dict, effective_configuration, load_config
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry

SEED_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-docs"
FILES = sorted(SEED_DIR.glob("config-*.yaml"))
V1 = "kubescheduler.config.k8s.io/v1"


def test_fixtures_exist() -> None:
    assert FILES, f"no config-*.yaml in {SEED_DIR}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_seed_example_as_written(path: Path, registry: PluginRegistry) -> None:
    data = yaml.safe_load(path.read_text())
    if data["apiVersion"] == V1:
        assert effective_configuration(load_config(path, registry), registry).profiles
        return
    with pytest.raises(UserInputError) as excinfo:
        load_config(path, registry)
    assert (
        f'no kind "KubeSchedulerConfiguration" is registered for version "{data["apiVersion"]}"'
        in str(excinfo.value)
    )


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_seed_example_validates_as_v1(path: Path, registry: PluginRegistry) -> None:
    data = yaml.safe_load(path.read_text())
    data["apiVersion"] = V1
    if "algorithmSource" in data:
        with pytest.raises(UserInputError, match='unknown field "algorithmSource"'):
            config_from_dict(data, registry)
        del data["algorithmSource"]
    config = config_from_dict(data, registry, source=str(path))
    effective = effective_configuration(config, registry, source=str(path))
    assert effective.profiles


def test_seed_examples_mean_what_the_seed_says(registry: PluginRegistry) -> None:
    def eff(name: str):
        data = yaml.safe_load((SEED_DIR / name).read_text())
        data["apiVersion"] = V1
        data.pop("algorithmSource", None)
        return effective_configuration(config_from_dict(data, registry), registry)

    most = eff("config-most-allocated.yaml").profiles[0].plugin_args["NodeResourcesFit"]
    assert most.scoring_strategy.type == "MostAllocated"
    assert [(r.name, r.weight) for r in most.scoring_strategy.resources][-1] == ("intel.com/bar", 3)
    ratio = eff("config-requested-to-capacity-ratio.yaml").profiles[0]
    shape = ratio.plugin_args["NodeResourcesFit"].scoring_strategy.requested_to_capacity_ratio.shape
    assert [(p.utilization, p.score) for p in shape] == [(0, 0), (100, 10)]
    per_profile = eff("config-node-affinity-per-profile.yaml")
    assert [p.scheduler_name for p in per_profile.profiles] == [
        "default-scheduler",
        "foo-scheduler",
    ]
    assert per_profile.profiles[0].plugin_args["NodeAffinity"].added_affinity is None
    assert per_profile.profiles[1].plugin_args["NodeAffinity"].added_affinity is not None
    spread = eff("config-pod-topology-spread-no-default-constraints.yaml").profiles[0]
    assert spread.plugin_args["PodTopologySpread"].defaulting_type == "List"
    assert (
        eff("config-percentage-of-nodes-to-score.yaml").profiles[0].percentage_of_nodes_to_score
        == 50
    )
