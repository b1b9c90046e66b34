"""Peaks: upstream's score and normalisation cases, power models, batch == per node."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pydantic import ValidationError

from kubesched import NodeInfo, NodeScores
from kubesched.testing import make_framework, make_pod, node_batch
from kubesched_contrib.trimaran import Peaks, PeaksArgs
from kubesched_contrib.trimaran.peaks import NODE_POWER_MODEL_ENV, PowerModel, power_jump

from .conftest import node

# Upstream's sample power model of node-1 (peaks_test.go).
MODEL = {"k0": 471.7412504314313, "k1": -91.50493019588365, "k2": -0.07186049052516228}
FULL_JUMP = int(power_jump(0, 100, PowerModel.model_validate(MODEL)) * 10**15)


def framework(args: dict):
    return make_framework(Peaks, args={"Peaks": {"nodePowerModel": {"node-1": MODEL}, **args}})


# Upstream TestPeaksScore: node 1000m / 1Gi.
POD_REQUESTS = make_pod("p").req(cpu="1", memory="2").obj()
POD_OVERHEAD_ZERO = make_pod("p").overhead(cpu="0").obj()
POD_LIMIT_2 = make_pod("p").container(None, {"cpu": "2000m"}).obj()
CASES = [
    ("Pod with Requests", POD_REQUESTS, [("CPU", "Latest", 0)], FULL_JUMP),
    ("No CPU metrics found", POD_REQUESTS, [("Memory", "Latest", 0)], 0),
    ("Pod with Overhead", POD_OVERHEAD_ZERO, [("CPU", "Latest", 0)], 0),
    ("Pod with above node resource capacity", POD_LIMIT_2, [("CPU", "Latest", 100)], 0),
    ("No watcher response for node", POD_LIMIT_2, None, 0),
    ("404 resp from watcher", make_pod("p").obj(), None, 0),
    # Beyond upstream's table:
    ("predicted above 100", POD_REQUESTS, [("CPU", "AVG", 10)], 0),
    (
        "half loaded",
        make_pod("p").req(cpu="500m").obj(),
        [("CPU", "AVG", 20)],
        int(power_jump(20, 70, PowerModel.model_validate(MODEL)) * 10**15),
    ),
]


@pytest.mark.parametrize(
    ("pod_obj", "metrics", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score(pod_obj, metrics, expected, metrics_file):
    path = metrics_file({"node-1": metrics} if metrics is not None else {})
    pl = framework({"metricsFile": path}).plugin("Peaks")
    ni = NodeInfo(node())
    assert pl.score(pod_obj, ni) == expected
    assert pl.score_nodes(pod_obj, node_batch([ni])).tolist() == [expected]


def test_node_without_a_power_model_scores_zero(metrics_file):
    # upstream getPowerModel: {0, 0, 0} for an unknown node, a jump of 0.
    path = metrics_file({"node-2": [("CPU", "AVG", 10)]})
    pl = framework({"metricsFile": path}).plugin("Peaks")
    ni = NodeInfo(node("node-2"))
    assert pl.score(POD_REQUESTS, ni) == 0 == pl.score_nodes(POD_REQUESTS, node_batch([ni]))[0]


# Upstream TestPeaksNormalizeScore, plus a spread of costs.
NORMALIZE = [
    ("Normalize score {minScore, maxScore}", [0, 100], [100, 0]),
    ("Normalize score {minScore, minScore}", [0, 0], [0, 0]),
    ("Normalize score {maxScore, maxScore}", [100, 100], [100, 100]),
    ("spread truncates", [10, 20, 40], [100, 67, 0]),
    ("huge raw jumps", [FULL_JUMP, FULL_JUMP // 2, 0], [0, 50, 100]),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [c[1:] for c in NORMALIZE], ids=[c[0] for c in NORMALIZE]
)
def test_normalize_score(raw, expected):
    pl = framework({}).plugin("Peaks")
    scores = NodeScores([f"n{i}" for i in range(len(raw))], raw)
    pl.normalize_score(scores)
    assert scores.values.tolist() == expected


def test_power_models_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "power.json"
    path.write_text(json.dumps({"node-1": MODEL}))
    monkeypatch.setenv(NODE_POWER_MODEL_ENV, str(path))
    args = PeaksArgs.model_validate({})
    assert args.power_models()["node-1"].k1 == MODEL["k1"]


def test_no_power_models_at_all_is_an_args_error(monkeypatch):
    monkeypatch.delenv(NODE_POWER_MODEL_ENV, raising=False)
    with pytest.raises(ValidationError) as err:
        PeaksArgs.model_validate({})
    assert "$NODE_POWER_MODEL is not set" in str(err.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{", "not JSON"),
        ('{"node-1": 10}', "node-1: must be an object with k0, k1, k2"),
        ('{"node-1": {"k1": "x"}}', "node-1: Input should be a valid number"),
    ],
    ids=["missing file", "not json", "upstream: wrong format", "not a number"],
)
def test_bad_power_model_file_is_an_args_error(content, message, tmp_path, monkeypatch):
    path = tmp_path / "power.json"
    if content is not None:
        path.write_text(content)
    monkeypatch.setenv(NODE_POWER_MODEL_ENV, str(path))
    with pytest.raises(ValidationError) as err:
        PeaksArgs.model_validate({})
    assert "nodePowerModel" in str(err.value) and message in str(err.value)


def test_batch_matches_per_node(metrics_file):
    names = [f"node-{i}" for i in range(1, 6)]
    path = metrics_file(
        {
            "node-1": [("CPU", "AVG", 10)],
            "node-2": [("CPU", "Latest", 55.5)],
            "node-3": [("Memory", "AVG", 10)],
            "node-5": [("CPU", "AVG", 99)],
        }
    )
    models = {n: {"k1": -90 + i, "k2": -0.07 + i / 100} for i, n in enumerate(names)}
    pl = make_framework(
        Peaks, args={"Peaks": {"metricsFile": path, "nodePowerModel": models}}
    ).plugin("Peaks")
    infos = [NodeInfo(node(n, cpu="4")) for n in names]
    for p in (make_pod("none").obj(), make_pod("p").req(cpu="300m").obj(), POD_REQUESTS):
        batch = pl.score_nodes(p, node_batch(infos))
        assert batch.tolist() == [pl.score(p, ni) for ni in infos]
        assert batch.dtype == np.int64
    assert not math.isnan(power_jump(0, 100, PowerModel()))
