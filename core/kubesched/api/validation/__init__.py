"""Object validation as kube-apiserver does it: syntax checks, field errors, per-kind rules."""

from .field import FieldError
from .syntax import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    validate_annotations,
    validate_labels,
)

__all__ = [
    "FieldError",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "validate_annotations",
    "validate_labels",
]
