"""Failures as the command line shows them: one line on stderr and an exit status; the
traceback only with ``kubesched --debug`` (or ``KUBESCHED_DEBUG=1``)."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from kubesched.errors import DEBUG_ENV, KubeschedError, debug_enabled

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "Terminated",
    "debugging",
    "error_line",
    "report_failure",
    "terminate_raises",
]

EXIT_ERROR = 1
EXIT_INTERRUPTED = 128 + signal.SIGINT
"""Ctrl-C: the status a shell gives a command that SIGINT ended (130)."""
EXIT_TERMINATED = 128 + signal.SIGTERM
"""SIGTERM: the status a shell gives a command that SIGTERM ended (143)."""

DEBUG_HINT = " (run with --debug for the traceback)"


class Terminated(BaseException):
    """SIGTERM arrived. A ``BaseException``, as ``KeyboardInterrupt`` is, so that no
    ``except Exception`` swallows it and every ``finally`` on the way out (a worker
    process stopped, a scratch API server cleaned) still runs."""


@contextmanager
def debugging(on: bool) -> Iterator[None]:
    """With ``on``, turn tracebacks on inside the block, for this process and the
    processes it starts (they inherit the environment, as ``bench`` workers and the
    scheduler it launches do); the environment is as before after it."""
    if not on:
        yield
        return
    previous = os.environ.get(DEBUG_ENV)
    os.environ[DEBUG_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[DEBUG_ENV]
        else:
            os.environ[DEBUG_ENV] = previous


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def error_line(err: BaseException, what: str) -> str:
    """The line that reports ``err``, raised while doing ``what`` (``simulate``).

    kubesched's own errors already say what is wrong and where; anything else is
    unexpected, so it is named with its type and message, and the way to see more:
    ``error: simulate: RuntimeError: boom (run with --debug for the traceback)``.
    """
    if isinstance(err, KubeschedError):
        return f"error: {err}"
    message = _one_line(str(err))
    described = f"{type(err).__name__}: {message}" if message else type(err).__name__
    return f"error: {what}: {described}{'' if debug_enabled() else DEBUG_HINT}"


def report_failure(err: BaseException, what: str, stream: TextIO | None = None) -> int:
    """Show ``err`` as the command line does and return the exit status it means:
    130 for Ctrl-C, 143 for SIGTERM (each with one short line), 1 for an error. With
    debugging on, the traceback comes first."""
    out = stream if stream is not None else sys.stderr
    if debug_enabled():
        traceback.print_exception(err, file=out)
    if isinstance(err, KeyboardInterrupt):
        print("interrupted", file=out)
        return EXIT_INTERRUPTED
    if isinstance(err, Terminated):
        print("terminated", file=out)
        return EXIT_TERMINATED
    print(error_line(err, what), file=out)
    return EXIT_ERROR


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise Terminated


@contextmanager
def terminate_raises() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Terminated` in the main thread (as
    SIGINT raises ``KeyboardInterrupt``) instead of killing the process at once; the
    previous handler comes back after it. Outside the main thread, nothing changes."""
    try:
        previous: Callable[..., Any] | int | None = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
