"""The committed JSON Schema and the docs follow the report models."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import BaseModel

from kubesched.simulate import build_report_data, json_schema, simulate
from kubesched.simulate import report as report_module

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "schema" / "simulation-report.schema.json"
DOC = ROOT / "docs" / "simulate.md"
REGENERATE = "KUBESCHED_REGENERATE_SCHEMA"


def test_committed_schema_is_the_generated_one() -> None:
    generated = json.dumps(json_schema(), indent=2) + "\n"
    if os.environ.get(REGENERATE):
        SCHEMA_FILE.write_text(generated)
    assert SCHEMA_FILE.read_text() == generated, (
        f"{SCHEMA_FILE.relative_to(ROOT)} is stale: run "
        f"`{REGENERATE}=1 pytest tests/simulate/test_schema.py` and commit it"
    )


def test_output_validates_against_the_committed_schema(example_objects, preemption_objects) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_FILE.read_text())
    for objects in (example_objects, preemption_objects):
        data = build_report_data(simulate(objects, seed=3), objects=objects, include_events=True)
        jsonschema.validate(json.loads(json.dumps(data)), schema)


MODELS = [
    cls
    for cls in vars(report_module).values()
    if isinstance(cls, type)
    and issubclass(cls, BaseModel)
    and cls.__module__ == report_module.__name__
    and not cls.__name__.startswith("_")
]
FIELDS = [(m.__name__, f.alias or n) for m in MODELS for n, f in m.model_fields.items()]


@pytest.mark.parametrize(("model", "key"), FIELDS, ids=[f"{m}.{k}" for m, k in FIELDS])
def test_field_is_documented(model: str, key: str) -> None:
    assert f"`{key}`" in DOC.read_text(), f"docs/simulate.md does not document {model}.{key}"


def test_models_are_documented() -> None:
    text = DOC.read_text()
    for model in MODELS:
        assert model.__name__ in text
