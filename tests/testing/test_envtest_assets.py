"""``assets_dir``: KUBEBUILDER_ASSETS first, else the script beside a source checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.testing import envtest


def _binaries(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("etcd", "kube-apiserver"):
        (folder / name).write_text("")
    return folder


@pytest.mark.parametrize(
    ("env", "script", "expected"),
    [
        ("complete", "prints-other", "env"),
        ("incomplete", "prints-other", None),
        (None, "prints-other", "script"),
        (None, "prints-incomplete", None),
        (None, "fails", None),
        (None, "missing", None),
    ],
    ids=[
        "variable-wins",
        "variable-without-binaries",
        "script-when-unset",
        "script-folder-without-binaries",
        "script-fails",
        "no-script",
    ],
)
def test_assets_dir(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: str | None,
    script: str,
    expected: str | None,
) -> None:
    env_folder = _binaries(tmp_path / "env") if env == "complete" else tmp_path / "empty"
    script_folder = _binaries(tmp_path / "script")
    path = tmp_path / "assets.sh"
    body = {
        "prints-other": f"echo {script_folder}",
        "prints-incomplete": f"echo {tmp_path / 'empty'}",
        "fails": "exit 3",
    }
    if script in body:
        path.write_text(f"#!/bin/sh\n{body[script]}\n")
        path.chmod(0o755)
    monkeypatch.setattr(envtest, "ASSETS_SCRIPT", path)
    if env is None:
        monkeypatch.delenv(envtest.ASSETS_ENV, raising=False)
    else:
        monkeypatch.setenv(envtest.ASSETS_ENV, str(env_folder))
    want = {"env": env_folder, "script": script_folder, None: None}[expected]
    assert envtest.assets_dir() == want
