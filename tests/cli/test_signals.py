"""Ctrl-C and SIGTERM on whole ``kubesched`` processes: status 130 (143), at most one
line, never a traceback; ``bench`` never leaves its worker process behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.testing import make_pod
from kubesched.testing.envtest import free_port
from tests.simulate.test_processes import KUBESCHED, _interrupt

SCRIPT = Path(sys.executable).parent / "kubesched"
"""The console script, whose imports a Ctrl-C may interrupt."""


def _default_sigint() -> None:
    # A test run started in the background inherits an ignored SIGINT; a terminal's
    # foreground process has the default one.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def _process(argv: list[str], **popen: Any) -> Iterator[subprocess.Popen]:
    """``argv`` started as from a terminal (stderr read as text, stdout discarded unless
    ``popen`` says otherwise); killed on the way out if still running."""
    options: dict[str, Any] = {
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.PIPE,
        "text": True,
        "preexec_fn": _default_sigint,
        **popen,
    }
    proc = subprocess.Popen(argv, **options)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for(check, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _nodes_yaml(count: int) -> str:
    return yaml.safe_dump_all(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
            }
            for i in range(count)
        ]
    )


@pytest.mark.skipif(not SCRIPT.exists(), reason="the kubesched console script is not installed")
def test_ctrl_c_during_the_imports() -> None:
    with _process([str(SCRIPT), "simulate", "-"], stdin=subprocess.PIPE) as proc:
        # numpy is among the first things ``kubesched`` imports, long before the command
        # line runs: once its extension is mapped, the imports are under way.
        maps = Path(f"/proc/{proc.pid}/maps")
        _wait_for(
            lambda: proc.poll() is not None or "_multiarray_umath" in maps.read_text(),
            "never imported numpy",
        )
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err and err.count("\n") <= 1


def test_ctrl_c_during_capacity(tmp_path: Path) -> None:
    probe = tmp_path / "probe.yaml"
    manifest = make_pod("probe").req(cpu="10m").manifest()
    manifest["metadata"].pop("uid")
    probe.write_text(yaml.safe_dump(manifest))
    code, err, took = _interrupt(
        ["capacity", "fit", str(probe), "-", "--no-progress"], _nodes_yaml(300), after=1.0
    )
    assert code == 130
    assert err == "interrupted\n"
    assert took < 10


def test_ctrl_c_while_run_waits_for_an_api_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "nothing.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                # Nothing listens there: run retries, as kube-scheduler does.
                "clusters": [
                    {"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    argv = [*KUBESCHED, "run", "--kubeconfig", str(kubeconfig), "--bind-address", "127.0.0.1",
            "--secure-port", str(free_port()), "--cert-dir", str(tmp_path)]  # fmt: skip
    with _process(argv) as proc:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "cannot start (attempt 1)" in line:
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    err = "".join(lines) + rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err


def _workers(pid: int) -> list[int]:
    """The children of ``pid`` forked from it (a command it runs has a command line of
    its own once started)."""
    own = Path(f"/proc/{pid}/cmdline").read_bytes()
    found = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes() == own:
                found.append(int(child))
        except FileNotFoundError:  # ended meanwhile
            continue
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # exited, not yet reaped


@pytest.mark.parametrize(
    ("sig", "status"),
    [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)],
    ids=["sigterm", "sigint", "sigkill"],
)
def test_bench_stops_its_worker_with_itself(sig: int, status: int) -> None:
    with _process([*KUBESCHED, "bench", "basic", "--nodes", "3000", "--pods", "20000"]) as proc:
        assert proc.stderr is not None
        # "running basic (...)" comes right before the run is forked (while importing,
        # croniter runs ``file``: a child that is no worker).
        said = proc.stderr.readline()
        assert said.startswith("running basic"), said
        _wait_for(lambda: proc.poll() is not None or _workers(proc.pid), "never forked its run")
        (worker,) = _workers(proc.pid)
        time.sleep(0.5)
        # Only the parent is signalled, as a service manager or ``kill PID`` does.
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        _wait_for(lambda: _gone(worker), "the worker outlived bench", timeout=10)
    assert proc.returncode == status
    assert "Traceback" not in err
    if sig != signal.SIGKILL:
        assert err.splitlines()[-1] == ("terminated" if sig == signal.SIGTERM else "interrupted")


def test_sigterm_is_quiet_during_simulate() -> None:
    with _process([*KUBESCHED, "simulate", "-", "--no-progress"], stdin=subprocess.PIPE) as proc:
        assert proc.stdin is not None
        proc.stdin.write(_nodes_yaml(3))
        proc.stdin.flush()
        # Waiting for the rest of its input: past the imports, inside the command.
        _wait_for(lambda: proc.poll() is not None or _reading(proc.pid), "never read stdin")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert err == "terminated\n"


def _reading(pid: int) -> bool:
    """True once the process blocks in a read of its stdin (the command line runs)."""
    try:
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except (FileNotFoundError, PermissionError):
        return False
    return bool(syscall) and syscall[0] == "0" and syscall[1] == "0x0"  # read(0, ...)


def test_a_reader_that_goes_away_is_no_error() -> None:
    quickstart = Path(__file__).parents[2] / "examples" / "quickstart"
    argv = [*KUBESCHED, "simulate", str(quickstart), "-o", "yaml", "--events"]
    with _process(argv, stdout=subprocess.PIPE, text=False) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(10)  # as ``| head -c 10`` does
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err
