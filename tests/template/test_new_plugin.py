"""``kubesched new-plugin`` and the template it ships: options, errors, packaging."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.cli.new_plugin_cmd import (
    TEMPLATE_EXTENSION_POINTS,
    NewPluginError,
    generate,
    parse_extension_points,
    template_path,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "plugin_template"


def _local_extensions():
    sys.path.insert(0, str(TEMPLATE))
    try:
        import local_extensions
    finally:
        sys.path.pop(0)
    return local_extensions


def test_packaged_template_is_the_repository_template() -> None:
    from contextlib import ExitStack

    with ExitStack() as stack:
        packaged = template_path(stack)
        cmp = filecmp.dircmp(packaged, TEMPLATE, ignore=["__pycache__"])
        assert (cmp.left_only, cmp.right_only, cmp.diff_files) == ([], [], [])
        assert (packaged / "cookiecutter.json").is_file()


def test_template_knows_the_same_extension_points_as_the_core() -> None:
    assert _local_extensions().EXTENSION_POINTS == TEMPLATE_EXTENSION_POINTS


@pytest.mark.parametrize(
    ("name", "kebab", "snake"),
    [
        ("NodeLabelGate", "node-label-gate", "node_label_gate"),
        ("GPUFit", "gpu-fit", "gpu_fit"),
        ("Fit2Zone", "fit-2-zone", "fit_2_zone"),
        ("X", "x", "x"),
    ],
    ids=["camel", "acronym", "digits", "one-letter"],
)
def test_name_filters(name, kebab, snake) -> None:
    ext = _local_extensions()
    words = ext._words(name)
    assert "-".join(w.lower() for w in words) == kebab
    assert "_".join(w.lower() for w in words) == snake


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Filter,Score", ["Filter", "Score"]),
        ("score, filter", ["Filter", "Score"]),
        ("bind prebind Bind", ["PreBind", "Bind"]),
    ],
    ids=["canonical", "any-case-and-order", "spaces-and-duplicates"],
)
def test_parse_extension_points(text, expected) -> None:
    assert parse_extension_points(text) == expected
    assert _local_extensions().parse_extension_points(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("Filter,Sort", "unknown extension point 'Sort'"), ("QueueSort", "unknown"), ("", "at least")],
    ids=["unknown", "queue-sort-is-not-offered", "empty"],
)
def test_parse_extension_points_errors(text, message) -> None:
    with pytest.raises(NewPluginError, match=message):
        parse_extension_points(text)


def test_cli_generates_a_project(tmp_path, capsys) -> None:
    rc = main(
        [
            "new-plugin", "--no-input", "--name", "NodeLabelGate", "-e", "filter,score",
            "--no-args", "--author", "Ann", "-o", str(tmp_path),
        ]
    )  # fmt: skip
    assert rc == 0
    project = tmp_path / "kubesched-node-label-gate"
    assert f"created {project}" in capsys.readouterr().out
    pyproject = (project / "pyproject.toml").read_text()
    assert 'name = "kubesched-node-label-gate"' in pyproject
    assert '"NodeLabelGate" = "kubesched_node_label_gate.plugin:NodeLabelGate"' in pyproject
    assert 'dependencies = ["kubesched"]' in pyproject
    code = (project / "src" / "kubesched_node_label_gate" / "plugin.py").read_text()
    assert "def filter(" in code and "def score(" in code and "def normalize_score(" in code
    assert "def permit(" not in code and "Args" not in code
    # The docstrings say what each hook must return.
    assert "Return ``None`` when it can." in code
    assert (project / "tests" / "test_plugin.py").is_file()
    assert (project / "README.md").read_text().startswith("# kubesched-node-label-gate")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--name", "node-gate"], "must be CamelCase"),
        (["--name", "Gate", "-e", "Filter,Sort"], "unknown extension point 'Sort'"),
        (["--name", "Gate", "--package", "class"], "not a Python identifier"),
    ],
    ids=["bad-name", "bad-extension-point", "bad-package"],
)
def test_cli_errors(tmp_path, capsys, argv, message) -> None:
    assert main(["new-plugin", "--no-input", "-o", str(tmp_path), *argv]) == 1
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_to_overwrite_without_force(tmp_path, capsys) -> None:
    args = ["new-plugin", "--no-input", "--name", "Gate", "-o", str(tmp_path)]
    assert main(args) == 0
    assert main(args) == 1
    assert "already exists (use --force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0


def test_every_extension_point_alone_generates_lint_clean_code(tmp_path) -> None:
    # Each extension point on its own, with and without args: the conditional parts of
    # the template must leave neither unused imports nor invalid Python behind.
    projects = [
        generate(
            tmp_path / f"{ep}-{with_args}",
            default_config=True,
            plugin_name=f"Only{ep}",
            extension_points=ep,
            with_args=with_args,
        )
        for ep in TEMPLATE_EXTENSION_POINTS
        for with_args in (True, False)
    ]
    for project in projects:
        code = (project / "src" / project.name.replace("-", "_") / "plugin.py").read_text()
        compile(code, str(project), "exec")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select",
         "E,F,W,B,UP,SIM,RUF", "--line-length", "100", *map(str, projects)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout
