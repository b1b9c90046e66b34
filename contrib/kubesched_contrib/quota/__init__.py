"""The quota family, after kubernetes-sigs/scheduler-plugins: CapacityScheduling with its
ElasticQuota kind, PreemptionToleration and QOSSort."""

from .api import ElasticQuota, ElasticQuotaSpec, ElasticQuotaStatus
from .capacityscheduling import CapacityScheduling
from .preemptiontoleration import PreemptionToleration, PreemptionTolerationArgs
from .qossort import QOSSort

__all__ = [
    "CapacityScheduling",
    "ElasticQuota",
    "ElasticQuotaSpec",
    "ElasticQuotaStatus",
    "PreemptionToleration",
    "PreemptionTolerationArgs",
    "QOSSort",
]
