"""The corpus recorder still works on the real binaries and still records what it did.

``tests/simulate/test_corpus.py`` compares kubesched with ``tests/fixtures/corpus/
recorded.json`` without a server. Recording every case again takes ~20 s each
(``record.py --check`` does it); this test records a few quick ones and compares them,
so that the recorder and the recording stay honest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.testing.envtest import ASSETS_ENV, assets_dir
from tests.fixtures.corpus import record

pytestmark = pytest.mark.envtest

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus"
QUICK_CASES = ("max-pods", "typo-unknown-field")
"""Cases that settle quickly and cover both halves: refused documents and placements."""


@pytest.mark.parametrize("case", QUICK_CASES)
def test_recording_again_gives_the_recording(case: str) -> None:
    folder = assets_dir()
    if folder is None or not all(
        (folder / b).is_file() for b in ("kube-controller-manager", "kube-scheduler")
    ):
        pytest.skip(f"{ASSETS_ENV} has no kube-controller-manager and kube-scheduler")
    recorded = json.loads((CORPUS / "recorded.json").read_text())[case]
    again = record.record_case(CORPUS / f"{case}.yaml")
    assert record.comparable(again) == record.comparable(recorded)
