"""VolumeBinding: PersistentVolumeClaims bound or provisioned with the pod (upstream
``plugins/volumebinding``)."""

from .binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from .plugin import ERR_REASON_UNBOUND_IMMEDIATE, NAME, VolumeBinding, VolumeBindingArgs

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_REASON_UNBOUND_IMMEDIATE",
    "NAME",
    "VolumeBinding",
    "VolumeBindingArgs",
]
