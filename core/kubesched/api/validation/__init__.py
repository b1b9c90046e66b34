"""Object validation as kube-apiserver does it: syntax checks, field errors, per-kind rules."""

from .field import FieldError
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

# The storage and DRA kinds register their validators on import.
from . import dra, storage  # noqa: F401  isort: skip

__all__ = [
    "VALIDATORS",
    "FieldError",
    "InvalidObjectError",
    "check_object",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "register_validator",
    "validate_annotations",
    "validate_labels",
    "validate_object",
]
