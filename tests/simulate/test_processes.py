"""Whole ``kubesched`` processes: byte-identical reports across processes, Ctrl-C handling."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import yaml

KUBESCHED = [sys.executable, "-m", "kubesched.cli.main"]
EXAMPLE = Path(__file__).parents[2] / "examples" / "quickstart"


def _run(args: list[str], hash_seed: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([*KUBESCHED, *args], capture_output=True, env=env, check=False)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_same_inputs_and_seed_give_byte_identical_reports(output: str) -> None:
    args = ["simulate", str(EXAMPLE), "-o", output, "--seed", "11", "--events", "--reproducible"]
    # Different hash seeds: set/dict iteration order must not leak into the report.
    first, second = _run(args, "1"), _run(args, "2")
    assert first.returncode == second.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert len(first.stdout) > 1000


def test_another_seed_may_differ_but_is_itself_stable() -> None:
    args = ["simulate", str(EXAMPLE), "-o", "json", "--seed", "12", "--reproducible"]
    assert _run(args, "3").stdout == _run(args, "4").stdout


def _big_cluster(path: Path) -> Path:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
        }
        for i in range(300)
    ]
    docs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 20000,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "i", "resources": {"requests": {"cpu": "10m"}}}
                        ]
                    },
                },
            },
        }
    )
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _unread(pipe: int) -> int:
    """How many bytes written into ``pipe`` its reader has not read yet."""
    return struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0"))[0]


def _forked_run(pid: int, steady: float = 0.5) -> bool:
    """Whether process ``pid`` has a forked child running its own program (its run), the
    same child for ``steady`` seconds. A child of the imports (``platform`` runs ``uname``
    and ``file``) also starts as a copy, but only until its exec, and a loaded machine may
    take seconds past it to finish the imports, where Ctrl-C still means a traceback."""
    own = Path(f"/proc/{pid}/cmdline").read_bytes()

    def copies() -> set[str]:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            return {k for k in kids if Path(f"/proc/{k}/cmdline").read_bytes() == own}
        except OSError:  # pid or a child just ended
            return set()

    first = copies()
    time.sleep(steady)
    return bool(first & copies())


def _interrupt(args: list[str], stdin: str | None, after: float) -> tuple[int, str, float]:
    """Run the CLI, wait until it is at work, let it work ``after`` seconds, then press
    Ctrl-C; the exit status, stderr and how long it took to stop. At work means past
    Python's start-up and the imports, where the default SIGINT handling would print a
    traceback: having read all of ``stdin`` when given, else with its forked benchmark
    run started."""
    reader, writer = os.pipe()
    proc = subprocess.Popen(
        [*KUBESCHED, *args],
        stdin=reader,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A test run started in the background inherits an ignored SIGINT; a terminal's
        # foreground process has the default one.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        os.close(reader)
        deadline = time.monotonic() + 60
        if stdin is not None:
            with os.fdopen(writer, "w") as pipe:
                pipe.write(stdin)
                pipe.flush()
                while proc.poll() is None and _unread(pipe.fileno()):
                    assert time.monotonic() < deadline, "never read its input"
                    time.sleep(0.05)
        else:
            os.close(writer)
            while proc.poll() is None and not _forked_run(proc.pid):
                assert time.monotonic() < deadline, "never forked its run"
        time.sleep(after)
        assert proc.poll() is None, "finished before it could be interrupted"
        sent = time.perf_counter()
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole process group
        _, err = proc.communicate(timeout=60)
        return proc.returncode, err, time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize(
    "command",
    [["simulate", "--no-progress"], ["bench", "basic", "--nodes", "3000", "--pods", "20000"]],
    ids=["simulate", "bench"],
)
def test_ctrl_c_stops_at_once_with_one_line(command: list[str], tmp_path: Path) -> None:
    args = list(command)
    stdin = None
    if command[0] == "simulate":
        stdin = _big_cluster(tmp_path / "big.yaml").read_text()
        args.append("-")
    code, err, took = _interrupt(args, stdin, after=1.0)
    assert code == 130
    assert err.splitlines()[-1] == "interrupted"
    assert "Traceback" not in err
    assert took < 10
