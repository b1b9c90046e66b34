"""Kubernetes duration strings: parsing to seconds and formatting back."""

from __future__ import annotations

import pytest

from kubesched.config import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("100us", 0.0001),
        ("100µs", 0.0001),
        ("10ns", 1e-8),
        ("0", 0.0),
        ("0s", 0.0),
        ("-1s", -1.0),
        (".5s", 0.5),
    ],
    ids=lambda v: str(v),
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["15", "", "s", "1x", "1 s", "15sec", "1m 30s"], ids=lambda v: repr(v)
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_parse_duration_rejects_numbers() -> None:
    with pytest.raises(ValueError, match="must be a string with a unit"):
        parse_duration(15)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (15.0, "15s"),
        (90.0, "1m30s"),
        (0.5, "500ms"),
        (3600.0, "1h0m0s"),
        (1.5, "1.5s"),
        (0.0, "0s"),
        (0.0001, "100µs"),
        (-2.0, "-2s"),
    ],
    ids=lambda v: str(v),
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
