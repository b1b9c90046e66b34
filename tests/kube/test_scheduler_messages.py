"""The recorded outcomes of tests/fixtures/scheduler/failed-scheduling.json still are the real
kube-scheduler's: every case is run again on a fresh control plane and compared.

``tests/scheduler/test_failed_scheduling_messages.py`` compares kubesched with the
recording without the binaries; this test keeps the recording honest.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

from kubesched.testing.envtest import ASSETS_ENV, assets_dir

pytestmark = pytest.mark.envtest

RECORDER = Path(__file__).parents[1] / "fixtures" / "scheduler" / "record.py"


def test_the_recording_is_the_real_schedulers() -> None:
    folder = assets_dir()
    if folder is None or not (folder / "kube-scheduler").is_file():
        pytest.skip(f"{ASSETS_ENV} does not name a folder with kube-scheduler")
    spec = importlib.util.spec_from_file_location("scheduler_messages_recorder", RECORDER)
    assert spec is not None and spec.loader is not None
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    fixture = json.loads(recorder.FIXTURE.read_text())
    rerun = copy.deepcopy(fixture)
    assert recorder.record(rerun) == []
