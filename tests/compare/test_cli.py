"""``kubesched compare`` refuses bad input with one clear line (no API server needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.testing import make_pod


def _pod_file(tmp_path: Path) -> Path:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(make_pod("web").manifest()))
    return path


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kubeconfig", "missing.kubeconfig"], "missing.kubeconfig: --kubeconfig: no such file"),
        (["--kubeconfig", "{kubeconfig}", "--config", "missing.yaml"],
         "missing.yaml: --config: no such file"),
        (["--kubeconfig", "{kubeconfig}"], "127.0.0.1:9"),
    ],
    ids=["no-kubeconfig-file", "no-config-file", "unreachable-server"],
)  # fmt: skip
def test_errors_are_one_line(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    kubeconfig = str(_unreachable_kubeconfig(tmp_path))
    argv = ["compare", str(_pod_file(tmp_path)), *(a.format(kubeconfig=kubeconfig) for a in args)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert "Traceback" not in err


def test_kubeconfig_is_required(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", str(_pod_file(tmp_path))])
    assert exit_info.value.code == 2
    assert "--kubeconfig" in capsys.readouterr().err
