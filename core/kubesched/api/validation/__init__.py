"""Object validation as kube-apiserver does it: syntax checks, field errors, per-kind rules."""

from .field import FieldError
from .gates import gate_enabled, validating_with
from .objects import (
    VALIDATORS,
    InvalidObjectError,
    check_object,
    register_validator,
    validate_object,
)
from .syntax import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    validate_annotations,
    validate_labels,
)

# The storage, DRA, quota and batch kinds register their validators on import.
from . import batch, dra, podgroups, quota, storage  # noqa: F401  isort: skip
from .update import UPDATE_VALIDATORS, register_update_validator, validate_update  # isort: skip

__all__ = [
    "UPDATE_VALIDATORS",
    "VALIDATORS",
    "FieldError",
    "InvalidObjectError",
    "check_object",
    "gate_enabled",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "register_update_validator",
    "register_validator",
    "validate_annotations",
    "validate_labels",
    "validate_object",
    "validate_update",
    "validating_with",
]
