"""The Trimaran metrics source: node annotations, a load-watcher file, and its errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kubesched import NodeInfo
from kubesched.testing import make_pod, node_batch
from kubesched_contrib.targetloadpacking import TargetLoadPacking
from kubesched_contrib.trimaran.metrics import (
    Metric,
    MetricsSource,
    TrimaranArgs,
    cpu_utilization,
    pod_limits,
    pod_requests,
    resource_data,
)

from .conftest import node


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, None),
        ({"kubesched.io/cpu-utilization": "35.5"}, (Metric("CPU", "AVG", 35.5),)),
        (
            {
                "kubesched.io/cpu-utilization": "35",
                "kubesched.io/cpu-utilization-stddev": "5",
                "kubesched.io/memory-utilization": "60",
                "kubesched.io/memory-utilization-stddev": "2.5",
            },
            (
                Metric("CPU", "AVG", 35),
                Metric("CPU", "STD", 5),
                Metric("Memory", "AVG", 60),
                Metric("Memory", "STD", 2.5),
            ),
        ),
        ({"kubesched.io/cpu-utilization": "-1"}, None),
        ({"kubesched.io/cpu-utilization": "nan"}, None),
        ({"kubesched.io/memory-utilization": "lots"}, None),
    ],
    ids=["none", "cpu", "all four", "negative", "not finite", "not a number"],
)
def test_annotations(annotations, expected):
    source = MetricsSource(TrimaranArgs())
    assert source.node_metrics(node(annotations=annotations)) == expected


def test_custom_annotation_keys_and_their_stddev():
    args = TrimaranArgs.model_validate(
        {"cpuUtilizationAnnotation": "load/cpu", "memoryUtilizationAnnotation": "load/mem"}
    )
    n = node(annotations={"load/cpu": "10", "load/cpu-stddev": "1", "load/mem": "20"})
    assert MetricsSource(args).node_metrics(n) == (
        Metric("CPU", "AVG", 10),
        Metric("CPU", "STD", 1),
        Metric("Memory", "AVG", 20),
    )


def test_file_replaces_annotations(metrics_file):
    path = metrics_file({"node-1": [("CPU", "Latest", 12)]})
    source = MetricsSource(TrimaranArgs.model_validate({"metricsFile": path}))
    annotated = {"kubesched.io/cpu-utilization": "90"}
    assert source.node_metrics(node("node-1", annotations=annotated)) == (
        Metric("CPU", "Latest", 12),
    )
    assert source.node_metrics(node("node-2", annotations=annotated)) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("[1", "not JSON"),
        ('{"data": {"NodeMetricsMap": {"n": {"metrics": [{"value": "x"}]}}}}', "value"),
    ],
    ids=["missing", "not json", "bad value"],
)
def test_bad_metrics_file_is_an_args_error(content, message, tmp_path):
    path = tmp_path / "m.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValidationError) as err:
        TrimaranArgs.model_validate({"metricsFile": str(path)})
    text = str(err.value)
    assert "metricsFile" in text and message in text and str(path) in text


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ([], (0.0, 0.0, False)),
        ([Metric("CPU", "STD", 3)], (0.0, 3.0, True)),
        ([Metric("CPU", "", 7), Metric("CPU", "AVG", 5)], (5.0, 0.0, True)),
        ([Metric("CPU", "AVG", 5), Metric("CPU", "Latest", 7)], (5.0, 0.0, True)),
        ([Metric("Memory", "AVG", 5)], (0.0, 0.0, False)),
    ],
    ids=["none", "std only", "avg beats operator-less", "avg beats latest", "other type"],
)
def test_resource_data(metrics, expected):
    assert resource_data(metrics, "CPU") == expected


def test_cpu_utilization_reads_avg_or_latest():
    assert cpu_utilization([Metric("CPU", "STD", 3)]) is None
    assert cpu_utilization([Metric("CPU", "Latest", 3)]) == 3
    assert cpu_utilization(None) is None


def test_pod_requests_and_limits():
    pod = (
        make_pod("p")
        .container({"cpu": "100m", "memory": "1Mi"}, {"cpu": "300m"})
        .container({"cpu": "200m"})
        .init_container({"cpu": "500m", "memory": "3Mi"})
        .overhead(cpu="10m", memory="1Mi")
        .obj()
    )
    # max(containers, any init container) + overhead
    assert pod_requests(pod) == (510, 4 * 1024 * 1024)
    # limits 300m (+ overhead), raised to the requests where lower
    assert pod_limits(pod) == (510, 4 * 1024 * 1024)


def test_target_load_packing_reads_the_file_too(metrics_file):
    from kubesched.testing import make_framework

    path = metrics_file({"node-1": [("CPU", "AVG", 10)]})
    fw = make_framework(TargetLoadPacking, args={"TargetLoadPacking": {"metricsFile": path}})
    pl = fw.plugin("TargetLoadPacking")
    ni = NodeInfo(node(cpu="4"))
    pod = make_pod("p").req(cpu="1").obj()
    # U = 10 + 1500m / 4000m = 47.5 % over a 40 % target: round(40 × 52.5 / 60) = 35.
    assert pl.score(pod, ni) == 35 == pl.score_nodes(pod, node_batch([ni]))[0]
