"""The recording of tests/fixtures/apiserver/gated-fields.json still is the real
kube-apiserver's: every case is sent again, with every gate at its default and with its
gates, and the answers compared (``tests/backend/test_memory_gated_fields.py`` holds the
embedded API server to the recording without a server)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubesched.testing.envtest import ASSETS_ENV, assets_dir
from tests.fixtures.apiserver.record_gated import FIXTURE, record

pytestmark = pytest.mark.envtest


def test_the_recording_is_the_api_servers() -> None:
    if assets_dir() is None:
        pytest.skip(f"{ASSETS_ENV} does not name a folder with etcd and kube-apiserver")
    recorded: list[dict[str, Any]] = json.loads(FIXTURE.read_text())
    fresh = copy.deepcopy(recorded)
    # Its own control plane: the API server is restarted with each case's gates.
    record(fresh)
    assert [new["id"] for old, new in zip(recorded, fresh, strict=True) if old != new] == []
