"""Kubernetes syntax checks with upstream's exact messages (apimachinery ``util/validation``).

Each ``is_*`` function returns the list of problems (empty when the value is valid),
worded as kube-apiserver v1.36 words them; ``validate_labels`` and
``validate_annotations`` turn them into :class:`~.field.FieldError` lists for a path.
Two families of length messages exist upstream and both are kept: object names
(``IsDNS1123Label``/``Subdomain``) say "characters", label keys and values (the newer
``content`` package) say "bytes".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .field import FieldError, invalid, too_long

__all__ = [
    "DNS1035_LABEL_MAX_LENGTH",
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "LABEL_VALUE_MAX_LENGTH",
    "QUALIFIED_NAME_MAX_LENGTH",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "empty_error",
    "inclusive_range_error",
    "is_c_identifier",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_in_range",
    "is_prefixed_label_key",
    "is_qualified_name",
    "is_valid_label_value",
    "is_valid_percent",
    "is_valid_port_name",
    "is_valid_port_num",
    "max_len_error",
    "min_error",
    "regex_error",
    "validate_annotations",
    "validate_label_name",
    "validate_labels",
]

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""``TotalAnnotationSizeLimitB``: keys plus values of all annotations, in bytes."""

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string "
    "of alphanumeric characters or '_'"
)
_PERCENT_FMT = "[0-9]+%"
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"

# \A...\Z: Go's ^...$ match the whole string (Python's $ would accept a final newline).
_DNS1123_LABEL_RE = re.compile(r"\A" + _DNS1123_LABEL_FMT + r"\Z")
_DNS1123_SUBDOMAIN_RE = re.compile(r"\A" + _DNS1123_SUBDOMAIN_FMT + r"\Z")
_DNS1035_LABEL_RE = re.compile(r"\A" + _DNS1035_LABEL_FMT + r"\Z")
_LABEL_KEY_RE = re.compile(r"\A" + _LABEL_KEY_FMT + r"\Z")
_LABEL_VALUE_RE = re.compile(r"\A" + _LABEL_VALUE_FMT + r"\Z")
_C_IDENTIFIER_RE = re.compile(r"\A" + _C_IDENTIFIER_FMT + r"\Z")
_PERCENT_RE = re.compile(r"\A" + _PERCENT_FMT + r"\Z")
_PORT_NAME_CHARSET_RE = re.compile(r"\A[-a-z0-9]+\Z")
_ONE_LETTER_RE = re.compile("[a-z]")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError``: the rule, examples and the regex, in upstream's exact punctuation
    (``(e.g. 'MyName',  or 'my.name', regex used for validation is '...')``)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int, unit: str = "characters") -> str:
    """``MaxLenError``: ``must be no more than 63 characters`` (or ``bytes``)."""
    return f"must be no more than {length} {unit}"


def empty_error() -> str:
    """``EmptyError``."""
    return "must be non-empty"


def min_error(minimum: int) -> str:
    """``MinError``: ``must be greater than or equal to 0``."""
    return f"must be greater than or equal to {minimum}"


def inclusive_range_error(lo: int, hi: int) -> str:
    """``InclusiveRangeError``: ``must be between 1 and 65535, inclusive``."""
    return f"must be between {lo} and {hi}, inclusive"


def _utf8_len(value: str) -> int:
    # Go's len() counts bytes; ASCII (the common case) needs no encoding.
    return len(value) if value.isascii() else len(value.encode("utf-8"))


def _dns1123_subdomain(value: str, unit: str) -> list[str]:
    errs = []
    if _utf8_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH, unit))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: a lowercase RFC 1123 label (namespace names, container names)."""
    errs = []
    if _utf8_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.match(value):
        if _DNS1123_SUBDOMAIN_RE.match(value):
            # A valid subdomain but not a label: with the length checked, it must be dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: a lowercase RFC 1123 subdomain (most object names)."""
    return _dns1123_subdomain(value, "characters")


def is_dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``: an RFC 1035 label (Service names)."""
    errs = []
    if _utf8_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.match(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName`` (= ``content.IsLabelKey``): a label key, annotation key,
    topology key or selector key: an optional DNS subdomain prefix and ``/``, then a
    name of at most 63 bytes."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in _dns1123_subdomain(prefix, "bytes"))
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif _utf8_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH, "bytes"))
    if not _LABEL_KEY_RE.match(name):
        errs.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_prefixed_label_key(value: str) -> list[str]:
    """``IsPrefixedLabelKey``: a qualified name that must carry a domain prefix."""
    errs = is_qualified_name(value)
    if errs:
        return errs
    if value.count("/") != 1:
        return ["must include a prefix (e.g. 'example.com/key')"]
    return []


def is_valid_label_value(value: str) -> list[str]:
    """``IsValidLabelValue`` (= ``content.IsLabelValue``): empty, or at most 63 bytes of
    alphanumerics, ``-``, ``_``, ``.`` starting and ending alphanumeric."""
    errs = []
    if _utf8_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH, "bytes"))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_c_identifier(value: str) -> list[str]:
    """``IsCIdentifier``: a C identifier (format only, no length limit)."""
    if _C_IDENTIFIER_RE.match(value):
        return []
    return [regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def is_valid_port_num(port: int) -> list[str]:
    """``IsValidPortNum``: 1..65535."""
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_in_range(value: int, lo: int, hi: int) -> list[str]:
    """``IsInRange``: ``lo <= value <= hi``."""
    return [] if lo <= value <= hi else [inclusive_range_error(lo, hi)]


def is_valid_port_name(port: str) -> list[str]:
    """``IsValidPortName``: an IANA_SVC_NAME (at most 15 characters, ``[-a-z0-9]``, at
    least one letter, no leading, trailing or doubled hyphen)."""
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.match(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _ONE_LETTER_RE.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_percent(percent: str) -> list[str]:
    """``IsValidPercent``: digits then ``%``."""
    if _PERCENT_RE.match(percent):
        return []
    return [regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%")]


def validate_label_name(name: str, path: str) -> list[FieldError]:
    """``ValidateLabelName``: a label (or selector) key at ``path``."""
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """``ValidateLabels``: every key a qualified name, every value a label value; the
    errors name ``path`` itself (``metadata.labels``), as upstream's do. Keys are
    visited in sorted order so that messages are stable."""
    errs: list[FieldError] = []
    for key in sorted(labels):
        errs.extend(validate_label_name(key, path))
        errs.extend(invalid(path, labels[key], msg) for msg in is_valid_label_value(labels[key]))
    return errs


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    """``ValidateAnnotations``: keys are qualified names (case-insensitively, as
    upstream lower-cases them first) and all keys and values together are at most
    256 KiB."""
    errs: list[FieldError] = []
    total = 0
    for key in sorted(annotations):
        errs.extend(invalid(path, key, msg) for msg in is_qualified_name(key.lower()))
        total += _utf8_len(key) + _utf8_len(annotations[key])
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, "", TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs
