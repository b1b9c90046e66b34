"""The embedded cluster: an in-process API server with admission, controllers and PDBs."""

from kubesched.backend.memory.admission import (
    SYSTEM_PRIORITY_CLASSES,
    AdmissionError,
    PodAdmission,
)
from kubesched.backend.memory.controllers import WorkloadControllers
from kubesched.backend.memory.disruption import DisruptionController
from kubesched.backend.memory.store import APPLY_ORDER, AdmissionRejection, MemoryCluster

__all__ = [
    "APPLY_ORDER",
    "SYSTEM_PRIORITY_CLASSES",
    "AdmissionError",
    "AdmissionRejection",
    "DisruptionController",
    "MemoryCluster",
    "PodAdmission",
    "WorkloadControllers",
]
