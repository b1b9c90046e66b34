"""Profiling endpoints' content: a sampled CPU profile (speedscope JSON) and thread stacks."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from types import FrameType
from typing import Any

SAMPLE_INTERVAL = 0.01
"""Seconds between two samples of every thread's stack (100 Hz, as Go's CPU profiler)."""

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"

INDEX = """\
/debug/pprof/

profile?seconds=N     CPU profile of every thread over N seconds (default 30), speedscope JSON:
                      open it at https://www.speedscope.app or with `speedscope FILE`
goroutine?debug=2     the stack of every Python thread, as text
"""
"""What ``/debug/pprof/`` lists."""


def _cpu_clock(ident: int) -> int | None:
    """The CPU-time clock of the thread ``ident``, where the platform has one."""
    try:
        return time.pthread_getcpuclockid(ident)
    except (AttributeError, OSError):
        return None


def _stack(frame: FrameType | None) -> list[tuple[str, str, int]]:
    """(function, file, line) of each frame, outermost first."""
    out = []
    while frame is not None:
        code = frame.f_code
        out.append((code.co_qualname, code.co_filename, code.co_firstlineno))
        frame = frame.f_back
    out.reverse()
    return out


def cpu_profile(seconds: float, interval: float = SAMPLE_INTERVAL) -> dict[str, Any]:
    """Sample every other thread's stack each ``interval`` for ``seconds``; a
    speedscope file with one sampled profile per thread.

    Each sample weighs the CPU time the thread used since the previous one (its
    per-thread CPU clock), so a thread blocked on a lock, a socket or a sleep weighs
    nothing, as in a Go CPU profile; where there is no such clock, each sample weighs
    ``interval`` (wall time).
    """
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    frames: dict[tuple[str, str, int], int] = {}
    samples: dict[int, list[list[int]]] = {}
    weights: dict[int, list[float]] = {}
    last_cpu: dict[int, float] = {}
    clocks: dict[int, int | None] = {}
    started = time.monotonic()
    deadline = started + seconds
    while True:
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            if ident not in clocks:
                clocks[ident] = _cpu_clock(ident)
            clock = clocks[ident]
            weight = interval
            if clock is not None:
                try:
                    now = time.clock_gettime(clock)
                except OSError:  # the thread ended between the two calls
                    continue
                weight = now - last_cpu.get(ident, now)
                last_cpu[ident] = now
                if weight <= 0:
                    continue
            stack = [frames.setdefault(f, len(frames)) for f in _stack(frame)]
            samples.setdefault(ident, []).append(stack)
            weights.setdefault(ident, []).append(weight)
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    shared = [{"name": name, "file": file, "line": line} for (name, file, line) in frames]
    profiles = [
        {
            "type": "sampled",
            "name": f"{names.get(ident, 'thread')} ({ident})",
            "unit": "seconds",
            "startValue": 0,
            "endValue": sum(weights[ident]),
            "samples": samples[ident],
            "weights": weights[ident],
        }
        for ident in sorted(samples, key=lambda i: -sum(weights[i]))
    ]
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "name": f"kubesched CPU profile, {seconds:g}s",
        "exporter": "kubesched",
        "activeProfileIndex": 0,
        "shared": {"frames": shared},
        "profiles": profiles,
    }


def thread_stacks() -> str:
    """The stack of every Python thread as text, innermost call last (Go's
    ``goroutine?debug=2`` for a Python process)."""
    threads = {t.ident: t for t in threading.enumerate()}
    parts = []
    for ident, frame in sorted(sys._current_frames().items()):
        thread = threads.get(ident)
        name = thread.name if thread is not None else "unknown"
        daemon = " daemon" if thread is not None and thread.daemon else ""
        parts.append(f'thread {ident} "{name}"{daemon}:\n' + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)
