"""ElasticQuotaInfo's bounds checks: upstream's elasticquota_test.go cases."""

from __future__ import annotations

import pytest

from kubesched import Resource
from kubesched_contrib.quota.elasticquota import ElasticQuotaInfo

GPU = "nvidia.com/gpu"


def res(cpu: int = 0, memory: int = 0, *, eph: int = 0, gpu: int | None = None) -> Resource:
    return Resource(
        milli_cpu=cpu,
        memory=memory,
        ephemeral_storage=eph,
        scalar_resources={GPU: gpu} if gpu is not None else None,
    )


def eq(used: Resource, *, min: Resource | None = None, max: Resource | None = None):
    return ElasticQuotaInfo("ns1", min, max, used)


@pytest.mark.parametrize(
    ("info", "request_", "want"),
    [
        pytest.param(
            eq(res(4000, 200, gpu=5), min=res(3000, 100, gpu=5)),
            res(1500, 100),
            True,
            id="OverMinWith Sum Of PodRequest And Used Is Bigger Than Min",
        ),
        pytest.param(
            eq(res(300, 100, gpu=5), min=res(4000, 200, gpu=5)),
            res(100, 50),
            False,
            id="OverMinWith Sum Of PodRequest And Used Is Not Bigger Than Min",
        ),
        pytest.param(
            eq(res(3900, 100, gpu=5)),
            res(100, 100),
            True,
            id="OverMinWith ElasticQuotaInfo Doesn't Have Min",
        ),
        pytest.param(
            eq(res(10, 10), min=res(3000, 100)),
            res(10, 10, gpu=5),
            True,
            id="OverMinWith Used And Min Don't Have GPU Value",
        ),
        pytest.param(
            eq(res(10, 10, eph=10), min=res(3000, 100, eph=100)),
            res(10, 10, eph=10),
            False,
            id="OverMinWith EphemeralStorage",
        ),
    ],
)
def test_used_over_min_with(info, request_, want):
    assert info.used_over_min_with(request_) is want


@pytest.mark.parametrize(
    ("info", "request_", "want"),
    [
        pytest.param(
            eq(res(4000, 200, gpu=5), max=res(4000, 200, gpu=5)),
            res(100, 100),
            True,
            id="OverMaxWith Sum Of PodRequest And Used Is Bigger Than Max",
        ),
        pytest.param(
            eq(res(3900, 100, gpu=5), max=res(4000, 200, gpu=5)),
            res(100, 100),
            False,
            id="OverMaxWith Sum Of PodRequest And Used Is Not Bigger Than Max",
        ),
        pytest.param(
            eq(res(3900, 100, gpu=5)),
            res(100, 100),
            False,
            id="OverMaxWith ElasticQuotaInfo Doesn't Have Max",
        ),
        pytest.param(
            eq(res(10, 10), max=res(3000, 100)),
            res(10, 10, gpu=5),
            False,
            id="OverMaxWith Used And Max Don't Have GPU Value",
        ),
        pytest.param(
            eq(res(10, 10, eph=10), max=res(3000, 100, eph=100)),
            res(10, 10, eph=100),
            True,
            id="OverMaxWith EphemeralStorage",
        ),
    ],
)
def test_used_over_max_with(info, request_, want):
    assert info.used_over_max_with(request_) is want


@pytest.mark.parametrize(
    ("info", "want"),
    [
        pytest.param(
            eq(res(4000, 200, gpu=5), min=res(3000, 300, gpu=5)),
            True,
            id="OverMin Used Is Bigger Than Min",
        ),
        pytest.param(
            eq(res(300, 100, gpu=5), min=res(4000, 200, gpu=5)),
            False,
            id="OverMin Used Is Not Bigger Than Min",
        ),
        pytest.param(
            eq(res(3900, 100, gpu=5)), True, id="OverMin ElasticQuotaInfo Doesn't Have Min"
        ),
        pytest.param(
            eq(res(300, 100, gpu=5), min=res(4000, 200)),
            True,
            id="OverMin Used Has GPU But Min Doesn't Have GPU",
        ),
        pytest.param(
            eq(res(300, 100, eph=100), min=res(4000, 200, eph=10)),
            True,
            id="OverMin EphemeralStorage",
        ),
    ],
)
def test_used_over_min(info, want):
    assert info.used_over_min() is want
