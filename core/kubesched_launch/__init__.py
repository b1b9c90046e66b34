"""The ``kubesched`` console script: Ctrl-C during the command line's imports ends it
quietly with status 130, as Ctrl-C does once the command runs.

Importing a sub-command's modules takes seconds on a busy machine, and an
interrupt there would otherwise print Python's traceback. This package lies outside
``kubesched`` so that nothing is imported before the guard is in place.
"""

from __future__ import annotations

import signal

__all__ = ["main"]


def main() -> int:
    """Import the command line and run it; 130 (128 + SIGINT) when interrupted meanwhile."""
    try:
        from kubesched.cli.main import main as run
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    return run()
