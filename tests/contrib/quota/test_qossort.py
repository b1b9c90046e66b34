"""QOSSort: upstream's TestSortLess cases, and the QoS class itself."""

from __future__ import annotations

import pytest

from kubesched import QueuedPodInfo
from kubesched.testing import as_pod_info, make_pod
from kubesched_contrib.quota.qossort import (
    BEST_EFFORT,
    BURSTABLE,
    GUARANTEED,
    QOSSort,
    pod_qos_class,
)


def res(cpu: str, memory: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory}


def qpod(name: str, priority: int, requests=None, limits=None):
    """upstream's ``makePod``: one container with ``requests`` and ``limits``."""
    b = make_pod(name).priority(priority)
    if requests is not None or limits is not None:
        b = b.container(requests or {}, limits=limits)
    return b.obj()


def queued(pod) -> QueuedPodInfo:
    return QueuedPodInfo(as_pod_info(pod), timestamp=0.0)


@pytest.mark.parametrize(
    ("p1", "p2", "want"),
    [
        pytest.param(qpod("p1", 100), qpod("p2", 50), True, id="p1's priority greater than p2"),
        pytest.param(qpod("p1", 50), qpod("p2", 80), False, id="p1's priority less than p2"),
        pytest.param(qpod("p1", 0), qpod("p2", 0), True, id="p1 and p2 are both BestEfforts"),
        pytest.param(
            qpod("p1", 0),
            qpod("p2", 0, res("100m", "100Mi"), res("100m", "100Mi")),
            False,
            id="p1 is BestEfforts, p2 is Guaranteed",
        ),
        pytest.param(
            qpod("p1", 0, res("100m", "100Mi"), res("200m", "200Mi")),
            qpod("p2", 0, res("100m", "100Mi"), res("100m", "100Mi")),
            False,
            id="p1 is Burstable, p2 is Guaranteed",
        ),
        pytest.param(
            qpod("p1", 0, res("100m", "100Mi"), res("200m", "200Mi")),
            qpod("p2", 0, res("100m", "100Mi"), res("200m", "200Mi")),
            True,
            id="both p1 and p2 are Burstable",
        ),
        pytest.param(
            qpod("p1", 0, res("100m", "100Mi"), res("100m", "100Mi")),
            qpod("p2", 0, res("100m", "100Mi"), res("200m", "200Mi")),
            True,
            id="p1 is Guaranteed, p2 is Burstable",
        ),
        pytest.param(
            qpod("p1", 0, res("100m", "100Mi"), res("100m", "100Mi")),
            qpod("p2", 0, res("100m", "100Mi"), res("100m", "100Mi")),
            True,
            id="both p1 and p2 are Guaranteed",
        ),
    ],
)
def test_less(p1, p2, want):
    assert QOSSort(None, None).less(queued(p1), queued(p2)) is want


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(qpod("p", 0), BEST_EFFORT, id="nothing requested"),
        pytest.param(
            qpod("p", 0, {"nvidia.com/gpu": "1"}), BEST_EFFORT, id="extended resource only"
        ),
        pytest.param(
            qpod("p", 0, None, res("1", "1Gi")),
            GUARANTEED,
            id="limits only: requests default to them",
        ),
        pytest.param(qpod("p", 0, {"cpu": "1"}, {"cpu": "1"}), BURSTABLE, id="cpu limit only"),
        pytest.param(qpod("p", 0, res("1", "1Gi")), BURSTABLE, id="requests only"),
        pytest.param(
            make_pod("p")
            .container(res("1", "1Gi"), limits=res("1", "1Gi"))
            .container(res("1", "1Gi"))
            .obj(),
            BURSTABLE,
            id="one container without limits",
        ),
        pytest.param(
            make_pod("p").container(res("1", "1Gi"), limits=res("1000m", "1Gi")).obj(),
            GUARANTEED,
            id="equal amounts written differently",
        ),
    ],
)
def test_pod_qos_class(pod, want):
    assert pod_qos_class(pod) == want
