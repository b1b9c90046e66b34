"""The recorded verdicts of tests/fixtures/apiserver/invalid-objects.json still are the real
kube-apiserver's: every object is sent again (a dry run) and the answer compared.

``tests/api/validation/test_apiserver_parity.py`` compares kubesched's validation with
the recording without a server; this test keeps the recording honest.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.envtest import ControlPlane

pytestmark = pytest.mark.envtest

FIXTURE = Path(__file__).parents[1] / "fixtures" / "apiserver" / "invalid-objects.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())


def _stable(case_id: str, causes: list[str]) -> Counter[str]:
    # A generateName case: the server validates the random name it generated.
    if case_id == "pod-generate-name":
        causes = [c for c in causes if not c.startswith("metadata.name:")]
    return Counter(causes)


def test_the_recording_is_the_api_servers_verdict(control_plane: ControlPlane) -> None:
    differ = []
    for case in CASES:
        message, causes = control_plane.verdict(case["object"])
        same_verdict = (message is None) == (case["message"] is None)
        if not same_verdict or _stable(case["id"], causes) != _stable(case["id"], case["causes"]):
            differ.append(f"{case['id']}: {message}")
    assert not differ, "\n".join(differ)
