"""docs/configuration.md documents every configuration field and the omitted plugins."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from kubesched.config import (
    ClientConnectionConfiguration,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugins,
)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()

MODELS: list[type[BaseModel]] = [
    KubeSchedulerConfiguration,
    LeaderElectionConfiguration,
    ClientConnectionConfiguration,
    KubeSchedulerProfile,
    Plugins,
]
FIELDS = [(m.__name__, f.alias or n) for m in MODELS for n, f in m.model_fields.items()]


@pytest.mark.parametrize(("model", "key"), FIELDS, ids=[f"{m}.{k}" for m, k in FIELDS])
def test_field_is_documented(model: str, key: str) -> None:
    assert f"`{key}`" in DOC
