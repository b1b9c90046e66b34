"""Quantity grammar, exact values and rounding, compared with apimachinery's behaviour."""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import pytest
from pydantic import BaseModel, ValidationError

from kubesched.api import Quantity, parse_quantity
from kubesched.api.quantity import ERR_FORMAT_WRONG, ERR_SUFFIX

Ki, Mi, Gi = 1024, 1024**2, 1024**3

# (input, exact value, MilliValue(), Value())
VALID = [
    ("0", Fraction(0), 0, 0),
    ("1", Fraction(1), 1000, 1),
    ("100m", Fraction(1, 10), 100, 1),
    ("250m", Fraction(1, 4), 250, 1),
    ("2500m", Fraction(5, 2), 2500, 3),
    ("0.5", Fraction(1, 2), 500, 1),
    (".5", Fraction(1, 2), 500, 1),
    ("1.", Fraction(1), 1000, 1),
    ("1.5", Fraction(3, 2), 1500, 2),
    ("001", Fraction(1), 1000, 1),
    ("1Ki", Fraction(Ki), Ki * 1000, Ki),
    ("100Mi", Fraction(100 * Mi), 100 * Mi * 1000, 100 * Mi),
    ("1Gi", Fraction(Gi), Gi * 1000, Gi),
    ("1.5Gi", Fraction(3 * Gi, 2), 3 * Gi * 500, 3 * Gi // 2),
    ("1Ei", Fraction(2**60), 2**60 * 1000, 2**60),
    ("1k", Fraction(1000), 10**6, 1000),
    ("1M", Fraction(10**6), 10**9, 10**6),
    ("1G", Fraction(10**9), 10**12, 10**9),
    ("1T", Fraction(10**12), 10**15, 10**12),
    ("1P", Fraction(10**15), 10**18, 10**15),
    ("1E", Fraction(10**18), 10**21, 10**18),
    ("1n", Fraction(1, 10**9), 1, 1),
    ("1u", Fraction(1, 10**6), 1, 1),
    ("1500u", Fraction(3, 2000), 2, 1),
    ("1e3", Fraction(1000), 10**6, 1000),
    ("1E3", Fraction(1000), 10**6, 1000),
    ("1e+3", Fraction(1000), 10**6, 1000),
    ("1E-3", Fraction(1, 1000), 1, 1),
    ("12e6", Fraction(12 * 10**6), 12 * 10**9, 12 * 10**6),
    ("1.5e3", Fraction(1500), 1500 * 1000, 1500),
    ("-1", Fraction(-1), -1000, -1),
    ("-1.5", Fraction(-3, 2), -1500, -2),
    ("-100m", Fraction(-1, 10), -100, -1),
    ("+5", Fraction(5), 5000, 5),
    # Upstream rounds every value up to a whole nano.
    ("0.1n", Fraction(1, 10**9), 1, 1),
    ("1.0000000001", Fraction(1_000_000_001, 10**9), 1001, 2),
    # Quirks of apimachinery's scanner, kept on purpose: empty numbers read as 0.
    (".", Fraction(0), 0, 0),
    ("+", Fraction(0), 0, 0),
    ("Gi", Fraction(0), 0, 0),
]


@pytest.mark.parametrize(("text", "exact", "milli", "value"), VALID, ids=[v[0] for v in VALID])
def test_valid_quantities(text: str, exact: Fraction, milli: int, value: int) -> None:
    q = parse_quantity(text)
    assert q.value_fraction == exact
    assert q.milli_value() == milli
    assert q.value() == value
    assert str(q) == text


INVALID = [
    ("", ERR_FORMAT_WRONG),
    ("abc", ERR_FORMAT_WRONG),
    ("1x", ERR_FORMAT_WRONG),
    ("1.2.3", ERR_FORMAT_WRONG),
    ("1 Gi", ERR_FORMAT_WRONG),
    (" 1", ERR_FORMAT_WRONG),
    ("1Gi ", ERR_FORMAT_WRONG),
    ("1e3k", ERR_FORMAT_WRONG),
    ("--1", ERR_SUFFIX),  # upstream scans "-1" after the sign as a suffix
    ("1ki", ERR_SUFFIX),
    ("1kk", ERR_SUFFIX),
    ("1e", ERR_SUFFIX),
    ("1Mi3", ERR_SUFFIX),
    ("1-3", ERR_SUFFIX),
    ("1ee3", ERR_SUFFIX),
]


@pytest.mark.parametrize(("text", "message"), INVALID, ids=[repr(v[0]) for v in INVALID])
def test_invalid_quantities(text: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_quantity(text)
    assert str(exc.value) == message


def test_format_message_is_upstreams() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


NUMBERS = [
    (2, "2", 2000),
    (0, "0", 0),
    (0.5, "0.5", 500),
    (1e-07, "1e-07", 1),
    (1.5e3, "1500.0", 1500000),
]


@pytest.mark.parametrize(("number", "text", "milli"), NUMBERS, ids=[v[1] for v in NUMBERS])
def test_numbers_as_yaml_gives_them(number: float, text: str, milli: int) -> None:
    q = parse_quantity(number)
    assert str(q) == text
    assert q.milli_value() == milli


@pytest.mark.parametrize("bad", [True, None, float("nan"), float("inf"), [1], b"1"], ids=str)
def test_non_quantity_inputs(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_binary_quantities_are_capped_at_int64() -> None:
    assert parse_quantity("100000000Ei").value() == 2**63 - 1


def test_equality_is_by_value_and_hash_agrees() -> None:
    assert Quantity("1Gi") == Quantity("1024Mi")
    assert hash(Quantity("1Gi")) == hash(Quantity("1024Mi"))
    assert Quantity("1k") == Quantity("1000") == Quantity("1e3")
    assert Quantity("100m") != Quantity("1")
    assert len({Quantity("0.5"), Quantity("500m"), Quantity("1")}) == 2
    assert str(Quantity("1024Mi")) == "1024Mi"


def test_ordering_and_arithmetic() -> None:
    qs = sorted([Quantity("1"), Quantity("100m"), Quantity("1Ki")])
    assert [str(q) for q in qs] == ["100m", "1", "1Ki"]
    assert Quantity("250m") + Quantity("1750m") == Quantity("2")
    assert (Quantity("1") - Quantity("250m")).milli_value() == 750
    assert Quantity.from_milli(250) == Quantity("250m")
    assert str(Quantity.from_milli(250)) == "250m"
    assert Quantity("0").is_zero()


def test_quantity_is_immutable_and_copies_cheaply() -> None:
    q = Quantity("1Gi")
    with pytest.raises(AttributeError):
        q.nanos = 5  # type: ignore[misc]
    assert copy.deepcopy(q) is q
    assert pickle.loads(pickle.dumps(q)) == q
    assert parse_quantity(q) is q


class _Model(BaseModel):
    q: Quantity
    m: dict[str, Quantity] = {}


def test_pydantic_field_accepts_str_int_float_and_serialises_to_str() -> None:
    m = _Model.model_validate({"q": "1Gi", "m": {"cpu": 2, "memory": 0.5, "x": Quantity("3")}})
    assert m.q.value() == Gi
    assert m.m["cpu"].milli_value() == 2000
    assert m.model_dump() == {"q": "1Gi", "m": {"cpu": "2", "memory": "0.5", "x": "3"}}
    assert m.model_dump_json() == '{"q":"1Gi","m":{"cpu":"2","memory":"0.5","x":"3"}}'
    assert "anyOf" in _Model.model_json_schema()["properties"]["q"]


def test_pydantic_field_reports_upstream_message() -> None:
    with pytest.raises(ValidationError) as exc:
        _Model.model_validate({"q": "1.2.3"})
    (err,) = exc.value.errors()
    assert err["loc"] == ("q",)
    assert ERR_FORMAT_WRONG in err["msg"]


CANONICAL = [
    ("2000m", "2"),
    ("1500m", "1500m"),
    ("0.5", "500m"),
    ("1.5", "1500m"),
    ("1000", "1k"),
    ("1500", "1500"),
    ("100M", "100M"),
    ("1e3", "1e3"),
    ("1.5e3", "1500"),
    ("12e6", "12e6"),
    ("5e-1", "500e-3"),
    ("1024Mi", "1Gi"),
    ("2048Mi", "2Gi"),
    ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"),
    ("1.5Ki", "1536"),
    ("0.5Ki", "512"),
    ("1023Ki", "1023Ki"),
    ("0Gi", "0"),
    ("-0.5", "-500m"),
    ("-2048Mi", "-2Gi"),
    ("1n", "1n"),
    ("0.000001", "1u"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL, ids=[c[0] for c in CANONICAL])
def test_canonical_text_is_upstreams_string(text: str, canonical: str) -> None:
    # Quantity.String(): what the API server prints in messages and serves back; the
    # Pod cases of tests/fixtures/apiserver/invalid-objects.json check it on the real one.
    q = parse_quantity(text)
    assert q.canonical() == canonical
    assert str(q) == text  # the text as written is kept for serialisation
    assert parse_quantity(canonical) == q
