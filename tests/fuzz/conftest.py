"""Fuzzing options: ``--fuzz-exhaustive`` multiplies every fuzz test's example count by 20."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz-exhaustive",
        action="store_true",
        help="run the fuzz tests with 20 times as many generated inputs",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Read by the fuzz modules at import (hypothesis settings are decorators).
    if config.getoption("--fuzz-exhaustive", default=False):
        os.environ["KUBESCHED_FUZZ_SCALE"] = "20"
