"""A command line imports what its command needs, not every command's modules: what users
wait for at each ``kubesched`` start."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from kubesched.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""
"""Runs the command line in a fresh interpreter and prints the modules it imported."""

HEAVY = (
    "kubesched.simulate",
    "kubesched.runner",
    "kubesched.backend.kube",
    "kubesched.capacity",
    "kubesched.resilience",
    "kubesched.bench",
    "kubesched.compare",
    "kubesched.deschedule",
    "kubesched.testing.envtest",
    "cryptography",
    "distributed",
)
"""What some commands need and others do not."""


def _imported(*argv: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.mark.parametrize(
    ("argv", "needed"),
    [
        (("--version",), ()),
        (("plugins", "--help"), ()),
        (("config", "--help"), ()),
        (("simulate", "--help"), ("kubesched.simulate",)),
        (("run", "--help"), ("kubesched.runner", "kubesched.backend.kube", "cryptography")),
        (("capacity", "--help"), ("kubesched.capacity", "kubesched.simulate")),
    ],
    ids=["version", "plugins", "config", "simulate", "run", "capacity"],
)
def test_a_command_imports_only_what_it_needs(argv: tuple[str, ...], needed: tuple[str, ...]):
    imported = _imported(*argv)
    assert [m for m in needed if m not in imported] == []
    assert [m for m in HEAVY if m in imported and m not in needed] == []


def test_the_help_lists_every_command() -> None:
    from kubesched.cli.main import COMMANDS

    out = subprocess.run(
        [sys.executable, "-m", "kubesched", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert [
        name for name in COMMANDS if f"\n    {name} " not in out and f"\n    {name}\n" not in out
    ] == []
