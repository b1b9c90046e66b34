"""The syntax checks word their problems exactly as kube-apiserver v1.36.2 does.

The expected texts were recorded from the real API server (a dry-run POST of objects with
these values), not derived from our own code.
"""

from __future__ import annotations

import pytest

from kubesched.api.validation import field, syntax

SUBDOMAIN_REGEX = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    f"used for validation is '{SUBDOMAIN_REGEX}')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
KEY_SLASHES_MSG = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
    "subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("web-0", []),
        ("a.b.c", []),
        ("0", []),
        ("bad name!", [SUBDOMAIN_MSG]),
        ("Upper", [SUBDOMAIN_MSG]),
        ("-lead", [SUBDOMAIN_MSG]),
        ("trail.", [SUBDOMAIN_MSG]),
        ("", [SUBDOMAIN_MSG]),
        ("a\n", [SUBDOMAIN_MSG]),
        ("a" * 253, []),
        ("a" * 300, ["must be no more than 253 characters"]),
    ],
    ids=[
        "simple",
        "dots",
        "digit",
        "space-bang",
        "upper",
        "leading-dash",
        "trailing-dot",
        "empty",
        "final-newline",
        "at-limit",
        "too-long",
    ],
)
def test_dns1123_subdomain(value: str, expected: list[str]) -> None:
    assert syntax.is_dns1123_subdomain(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("kube-system", []),
        ("a.b", ["must not contain dots"]),
        ("Ab", [LABEL_MSG]),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("a" * 63, []),
    ],
    ids=["valid", "dots", "upper", "too-long", "at-limit"],
)
def test_dns1123_label(value: str, expected: list[str]) -> None:
    assert syntax.is_dns1123_label(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("app", []),
        ("example.com/MyName", []),
        ("kubernetes.io/hostname", []),
        ("/x", ["prefix part must be non-empty"]),
        ("Foo_.Bar/x", ["prefix part " + SUBDOMAIN_MSG]),
        ("a/b/c", [KEY_SLASHES_MSG]),
        ("a" * 72, ["name part must be no more than 63 bytes"]),
        ("a" * 300 + "/x", ["prefix part must be no more than 253 bytes"]),
        ("Bad Key", [KEY_NAME_MSG]),
        ("x/", ["name part must be non-empty", KEY_NAME_MSG]),
        ("", ["name part must be non-empty", KEY_NAME_MSG]),
    ],
    ids=[
        "plain",
        "prefixed",
        "well-known",
        "empty-prefix",
        "bad-prefix",
        "two-slashes",
        "name-too-long",
        "prefix-too-long",
        "space",
        "empty-name",
        "empty",
    ],
)
def test_qualified_name(value: str, expected: list[str]) -> None:
    assert syntax.is_qualified_name(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        ("my_value", []),
        ("{{bad}}", [VALUE_MSG]),
        ("v" * 70, ["must be no more than 63 bytes"]),
        ("é", [VALUE_MSG]),
    ],
    ids=["empty", "underscore", "template", "too-long", "non-ascii"],
)
def test_label_value(value: str, expected: list[str]) -> None:
    assert syntax.is_valid_label_value(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("http", []),
        ("a" * 16, ["must be no more than 15 characters"]),
        ("80", ["must contain at least one letter (a-z)"]),
        ("a--b", ["must not contain consecutive hyphens"]),
        ("-a", ["must not begin or end with a hyphen"]),
        ("A_b", ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]),
    ],
    ids=["valid", "too-long", "no-letter", "double-hyphen", "leading-hyphen", "charset"],
)
def test_port_name(value: str, expected: list[str]) -> None:
    assert syntax.is_valid_port_name(value) == expected


def test_port_number_and_percent() -> None:
    assert syntax.is_valid_port_num(65535) == []
    assert syntax.is_valid_port_num(0) == ["must be between 1 and 65535, inclusive"]
    assert syntax.is_valid_percent("10%") == []
    assert syntax.is_valid_percent("10") == [
        "a valid percent string must be a numeric string followed by an ending '%' (e.g. "
        "'1%',  or '93%', regex used for validation is '[0-9]+%')"
    ]


def test_validate_labels_renders_like_the_api_server() -> None:
    errs = syntax.validate_labels({"a/b/c": "x", "app": "{{bad}}"}, "metadata.labels")
    assert [str(e) for e in errs] == [
        f'metadata.labels: Invalid value: "a/b/c": {KEY_SLASHES_MSG}',
        f'metadata.labels: Invalid value: "{{{{bad}}}}": {VALUE_MSG}',
    ]


def test_validate_annotations_keys_and_total_size() -> None:
    errs = syntax.validate_annotations(
        {"Bad Key": "v", "Example.COM/Foo": "ok", "big": "x" * 262200}, "metadata.annotations"
    )
    assert [str(e) for e in errs] == [
        f'metadata.annotations: Invalid value: "Bad Key": {KEY_NAME_MSG}',
        "metadata.annotations: Too long: may not be more than 262144 bytes",
    ]


@pytest.mark.parametrize(
    ("err", "text"),
    [
        (field.required("spec.containers"), "spec.containers: Required value"),
        (
            field.invalid("spec.priority", 5, "must be 0"),
            "spec.priority: Invalid value: 5: must be 0",
        ),
        (
            field.not_supported("spec.restartPolicy", "Sometimes", ["Always", "Never"]),
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
            '"Never"',
        ),
        (
            field.duplicate("spec.containers[1].name", "c"),
            'spec.containers[1].name: Duplicate value: "c"',
        ),
        (field.forbidden("spec.x", "not allowed"), "spec.x: Forbidden: not allowed"),
        (field.invalid("a", None, "x"), "a: Invalid value: null: x"),
        (field.invalid("a", True, "x"), "a: Invalid value: true: x"),
        (field.invalid("a", 'q"\n\x01\u200b', "x"), 'a: Invalid value: "q\\"\\n\\x01\\u200b": x'),
    ],
    ids=[
        "required",
        "invalid-int",
        "not-supported",
        "duplicate",
        "forbidden",
        "null",
        "bool",
        "go-quoting",
    ],
)
def test_field_error_rendering(err: field.FieldError, text: str) -> None:
    assert str(err) == text
