"""Shared helpers for the kubesched.api tests."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    """The repository's ``tests/fixtures`` directory."""
    return FIXTURES
