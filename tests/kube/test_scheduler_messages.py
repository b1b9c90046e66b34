"""The recorded outcomes of tests/fixtures/scheduler/failed-scheduling.json still are the real
kube-scheduler's: every case is run again on a fresh control plane and compared.

``tests/scheduler/test_failed_scheduling_messages.py`` compares kubesched with the
recording without the binaries; this test keeps the recording honest.
"""

from __future__ import annotations

import json

import pytest

from kubesched.testing.envtest import ASSETS_ENV, assets_dir
from tests.fixtures.scheduler.record import FIXTURE, record

pytestmark = pytest.mark.envtest


def test_the_recording_is_the_real_schedulers() -> None:
    folder = assets_dir()
    if folder is None or not (folder / "kube-scheduler").is_file():
        pytest.skip(f"{ASSETS_ENV} does not name a folder with kube-scheduler")
    # record() writes each case's outcome into the fixture it is given, not to the file.
    assert record(json.loads(FIXTURE.read_text())) == []
