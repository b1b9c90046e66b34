"""The embedded API server keeps and drops gated fields as kube-apiserver v1.36.2 does.

``tests/fixtures/apiserver/gated-fields.json`` records, per case, the real server's answer
to a create (or an update of an object stored while every gate was on) with every gate at
its default and with the case's gates: refused or not, and the sent fields it no longer
has. The same cases go through a ``MemoryCluster`` with the same gates here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import KubeObject, resolve_kind
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.gatedfields import GatedFields
from kubesched.backend.protocol import BackendError
from kubesched.clock import FakeClock
from kubesched.features import FeatureGates, parse_feature_gates
from kubesched.notices import collecting_notices
from tests.fixtures.apiserver.record_gated import FIXTURE, UPDATE_LABEL, field_changes

CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())


def _merged(base: Any, over: Any) -> Any:
    """``over`` laid on ``base``: maps merged key by key, anything else ``over``'s."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merged(base.get(k), v) for k, v in over.items()}}
    return over


def _parsed(doc: dict[str, Any]) -> KubeObject:
    """``doc`` as the embedded API server receives it: decoded, not yet validated (the
    server drops the gated fields first, then validates)."""
    cls = resolve_kind(doc["kind"])
    assert cls is not None
    return cls.model_validate(doc)


def _embedded_answer(case: dict[str, Any], gates: FeatureGates) -> tuple[dict[str, Any], list[str]]:
    """The embedded cluster's answer to the case, as the recorder writes the server's, and
    the notices it made."""
    cluster = MemoryCluster(FakeClock(0.0), feature_gates=gates)
    sent = case["object"]
    with collecting_notices() as notices:
        try:
            if case.get("update"):
                # Stored while every gate was on, as the recorder's server stored it.
                on, cluster.gated_fields = cluster.gated_fields, GatedFields(FeatureGates())
                first = cluster.create(_parsed(case.get("stored", sent)))
                cluster.gated_fields = on
                meta = sent["metadata"]
                labels = {**meta.get("labels", {}), **UPDATE_LABEL}
                sent = {**sent, "metadata": {**meta, "labels": labels}}
                # Read, modify, write: what admission set at creation stays (a pod's spec
                # is immutable but for a few fields).
                stored = cluster.update(_parsed(_merged(first.to_dict(), sent)))
            else:
                stored = cluster.create(_parsed(sent))
        except BackendError as err:
            refused = {"message": str(err), "dropped": [], "changed": []}
            return refused, [n.message for n in notices]
    dropped, changed = field_changes(sent, stored.to_dict())
    return {"message": None, "dropped": dropped, "changed": changed}, [n.message for n in notices]


def _recorded(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: answer[k] for k in ("message", "dropped", "changed")}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_every_gate_at_its_default_keeps_every_field(case: dict[str, Any]) -> None:
    assert _embedded_answer(case, FeatureGates())[0] == _recorded(case["default"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_with_the_gates_off_the_same_fields_are_dropped(case: dict[str, Any]) -> None:
    answer, notices = _embedded_answer(case, parse_feature_gates([case["gates"]]))
    assert answer == _recorded(case["gated"])
    # Each dropped field is noticed, by path, with its gate.
    noticed = {m.split(" dropped: ")[0] for m in notices if " dropped: the " in m}
    if answer["message"] is None:
        assert noticed == set(case["gated"]["dropped"])
