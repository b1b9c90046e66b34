"""Fuzzing the inputs kubesched reads: manifests, configurations, mutated examples, raw text.

Every generated input must be accepted or refused with a ``UserInputError`` that names the
file, the object and the field; nothing may raise anything else, and a run of the
simulator on accepted objects must keep its invariants. The example counts below sum to
at least 10,500 inputs per run (about a minute of CPU); ``--fuzz-exhaustive`` runs 20 times as many.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api import MANIFEST_SUFFIXES, parse_manifests, parse_object, schema
from kubesched.config import config_from_dict
from kubesched.errors import UserInputError
from kubesched.framework.registry import default_registry

from .strategies import SCALE, anything, configurations, objects

EXAMPLES = Path(__file__).parents[2] / "examples"
EXAMPLE_FILES = sorted(
    p for p in EXAMPLES.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file()
)
REGISTRY = default_registry()
# Compiled once per process on first use; done here so that it is not the first
# example's time against the deadline.
schema.load()


def _fuzz(examples: int) -> Any:
    return settings(
        max_examples=examples * SCALE,
        deadline=2000,  # a "hang": one input taking seconds
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=True,
    )


def _assert_names_object_and_field(err: UserInputError, source: str) -> None:
    assert err.source == source
    assert err.obj, f"no object named: {err}"
    if "invalid" in err.message:
        assert err.problems and all(p.path for p in err.problems), str(err)


@_fuzz(4000)
@given(doc=objects)
def test_generated_objects_are_accepted_or_refused_with_a_field_path(doc: dict[str, Any]) -> None:
    try:
        obj = parse_object(doc, source="fuzz.yaml", index=0)
    except UserInputError as err:
        _assert_names_object_and_field(err, "fuzz.yaml")
        return
    assert obj.kind == doc["kind"]


@_fuzz(1500)
@given(docs=st.lists(objects, min_size=1, max_size=4))
def test_accepted_objects_load_into_the_embedded_cluster(docs: list[dict[str, Any]]) -> None:
    from kubesched.backend.memory import MemoryCluster
    from kubesched.clock import FakeClock

    accepted = []
    for i, doc in enumerate(docs):
        try:
            accepted.append(parse_object(doc, source="fuzz.yaml", index=i))
        except UserInputError:
            continue
    cluster = MemoryCluster(FakeClock())
    # Admission may still refuse (a missing PriorityClass): recorded, never raised.
    for rejection in cluster.apply(accepted):
        assert rejection.message


def _mutate(data: Any, path_choice: list[int], new_value: Any, action: int) -> Any:
    """Change one place of ``data``: replace, delete or wrap a value chosen by indices."""
    data = copy.deepcopy(data)
    node = data
    for choice in path_choice:
        if isinstance(node, dict) and node:
            key = sorted(node, key=str)[choice % len(node)]
            if action == 0 or not isinstance(node[key], dict | list):
                if action == 1:
                    del node[key]
                elif action == 2:
                    node[key] = [node[key]]
                else:
                    node[key] = new_value
                return data
            node = node[key]
        elif isinstance(node, list) and node:
            idx = choice % len(node)
            if not isinstance(node[idx], dict | list):
                node[idx] = new_value
                return data
            node = node[idx]
        else:
            return new_value
    return data


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_mutated_examples_never_crash(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    per_file = -(-2500 // len(EXAMPLE_FILES))  # ceil: at least 2,500 mutations in all

    @_fuzz(per_file)
    @given(
        which=st.integers(0, 1000),
        path_choice=st.lists(st.integers(0, 100), min_size=1, max_size=8),
        new_value=anything,
        action=st.integers(0, 3),
    )
    def mutated(which: int, path_choice: list[int], new_value: Any, action: int) -> None:
        mutated_docs = list(docs)
        i = which % len(mutated_docs)
        mutated_docs[i] = _mutate(mutated_docs[i], path_choice, new_value, action)
        text = yaml.safe_dump_all(mutated_docs)
        try:
            parse_manifests(text, source=path.name)
        except UserInputError as err:
            assert err.source == path.name
            if "invalid" in err.message:
                assert err.obj and err.problems and all(p.path for p in err.problems), str(err)

    mutated()


@_fuzz(1500)
@given(doc=configurations)
def test_generated_configurations_are_accepted_or_refused_with_a_field_path(
    doc: dict[str, Any],
) -> None:
    try:
        config_from_dict(doc, REGISTRY, source="cfg.yaml")
    except UserInputError as err:
        assert err.source == "cfg.yaml"
        assert str(err)


@_fuzz(1000)
@given(
    text=st.one_of(
        st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
    )
)
def test_arbitrary_text_is_refused_cleanly(text: str) -> None:
    try:
        parse_manifests(text, source="noise.yaml")
    except UserInputError as err:
        assert err.source == "noise.yaml"
