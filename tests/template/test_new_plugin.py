"""``kubesched new-plugin`` and the template it ships: options, errors, packaging."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.cli.main import main
from kubesched.cli.new_plugin_cmd import (
    MAX_LABEL_NAME_LENGTH,
    TEMPLATE_EXTENSION_POINTS,
    NewPluginError,
    generate,
    kebab_case,
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


LONGEST_NAME = "MaintenanceAwareTopologySpreadingPlacementForZonesRacked"
"""A name whose kebab form, the example label key's name part, has the most characters
allowed (63)."""

NAMES = ["X", "GPU", "A1", "Fit2Zone", "NodeLabelGate", "MaintenanceAware", LONGEST_NAME]

EVERY_POINT = ",".join(TEMPLATE_EXTENSION_POINTS)


def _assert_ruff_clean(projects: list[Path]) -> None:
    """The projects pass ``ruff check`` and ``ruff format --check``, each with the config of
    its own pyproject.toml (ruff takes each file's nearest one), as their authors run it."""
    for args in (["check"], ["format", "--check", "--diff"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", *args, "--no-cache", *map(str, projects)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"ruff {args[0]}:\n{proc.stdout}{proc.stderr}"


def test_longest_name_is_at_the_label_limit() -> None:
    assert len(kebab_case(LONGEST_NAME)) == MAX_LABEL_NAME_LENGTH


@pytest.mark.parametrize("name", NAMES)
def test_generated_project_passes_its_own_ruff_check_and_format(tmp_path, name) -> None:
    # With the generated project's own ruff configuration (its pyproject.toml), as its
    # author runs it: every line that holds the name must fit, whatever the name's length.
    point_sets = [EVERY_POINT, "Filter,Score", "PreEnqueue,Permit,Bind,PostBind", "PreScore"]
    projects = [
        generate(
            tmp_path / f"{i}-{with_args}",
            default_config=True,
            plugin_name=name,
            extension_points=points,
            with_args=with_args,
        )
        for i, points in enumerate(point_sets)
        for with_args in (True, False)
    ]
    _assert_ruff_clean(projects)


def test_every_extension_point_alone_generates_lint_clean_code(tmp_path) -> None:
    # Each extension point on its own, with and without args: the conditional parts of
    # the template must leave neither unused imports nor invalid Python behind, and the
    # code is as ruff formats it.
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
    _assert_ruff_clean(projects)


def test_a_name_past_the_label_limit_is_refused(tmp_path, capsys) -> None:
    too_long = LONGEST_NAME + "X"
    assert main(["new-plugin", "--no-input", "--name", too_long, "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"plugin name {too_long!r} is too long" in err and "(at most 63)" in err
    assert list(tmp_path.iterdir()) == []


def _new_plugin(*args: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """``kubesched new-plugin`` as a user runs it: a process, its exit status and output."""
    return subprocess.run(
        [sys.executable, "-m", "kubesched.cli.main", "new-plugin", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_a_terminal_and_without_no_input_it_says_to_pass_no_input(tmp_path) -> None:
    proc = _new_plugin("--name", "Gate", "-o", str(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: standard input is not a terminal")
    assert "--no-input" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("output_dir", "message"),
    [
        ("/proc/kubesched-x", "cannot create the output directory '/proc/kubesched-x': "),
        ("/dev/null/x", "cannot create the output directory '/dev/null/x': Not a directory"),
    ],
    ids=["unwritable", "under-a-file"],
)
def test_an_output_directory_that_cannot_be_made_is_one_line(output_dir, message) -> None:
    proc = _new_plugin("--no-input", "--name", "Gate", "-o", output_dir)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: {message}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_an_existing_project_directory_is_named(tmp_path) -> None:
    assert _new_plugin("--no-input", "--name", "Gate", "-o", str(tmp_path)).returncode == 0
    proc = _new_plugin("--no-input", "--name", "Gate", "-o", str(tmp_path))
    assert proc.returncode == 1
    target = tmp_path / "kubesched-gate"
    assert proc.stderr == (
        f"error: directory {str(target)!r} already exists (use --force to overwrite it)\n"
    )
