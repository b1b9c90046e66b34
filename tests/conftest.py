"""Settings of the whole test session."""

from __future__ import annotations

import os


def pytest_configure() -> None:
    # A pytest-xdist worker (make test) starts with COLUMNS=80 and LINES=24 of no terminal
    # of its own; the command line's tables take $COLUMNS as their width (120 without it),
    # and the tests read them as one pytest process prints them.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
