"""The documentation is tied to the code: hookspecs, configuration fields, plugins."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from pathlib import Path

import pytest

from kubesched.framework.registry import PluginRegistry

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TESTS = ROOT / "tests"


def _load_reference():
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "gen" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load_reference()
HOOKS = [name for name, _ in reference.hookspecs()]
HOOKSPEC_PAGE = reference.hookspec_reference()
CONFIG_PAGE = reference.config_reference()
FIELDS = reference.documented_fields()
TEST_SOURCES = "\n".join(
    p.read_text() for p in TESTS.rglob("*.py") if "fixtures" not in p.parts and p != Path(__file__)
)


def test_every_extension_point_hook_is_a_hookspec() -> None:
    from kubesched.framework.plugin import EXTENSION_POINTS

    hooks = {h for ep in EXTENSION_POINTS for h in (ep.hook, *ep.companion_hooks)}
    assert hooks <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_is_documented(hook: str) -> None:
    section = HOOKSPEC_PAGE.split(f"### `{hook}`", 1)
    assert len(section) == 2, f"{hook} missing from the hookspec reference"
    body = section[1].split("\n### ", 1)[0]
    # A signature and a docstring of more than a line.
    assert f"def {hook}(" in body
    assert len(body.strip().splitlines()) >= 6


@pytest.mark.parametrize("hook", HOOKS)
def test_hookspec_is_exercised_by_a_test(hook: str) -> None:
    assert re.search(rf"\b{hook}\b", TEST_SOURCES), f"no test mentions {hook}"


@pytest.mark.parametrize(
    ("model", "key", "description"), FIELDS, ids=[f"{m}.{k}" for m, k, _ in FIELDS]
)
def test_configuration_field_is_described(model: str, key: str, description: str) -> None:
    assert description, f"{model}.{key} has no description"
    assert f"| `{key}` |" in CONFIG_PAGE


PLUGINS = PluginRegistry.discover().names()


@pytest.mark.parametrize("name", PLUGINS)
def test_registered_plugin_has_a_page(name: str) -> None:
    page = DOCS / "plugins" / f"{name}.md"
    assert page.is_file(), f"docs/plugins/{name}.md is missing"
    assert page.read_text().startswith(f"# {name}")


def test_nav_lists_every_page_of_the_guide() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in ("index.md", "installation.md", "concepts.md", "plugin-guide.md", "sdk.md",
                 reference.CONFIG_PAGE, reference.HOOKSPEC_PAGE, reference.SDK_PAGE,
                 "architecture.md"):  # fmt: skip
        assert page in nav
        if not page.startswith("reference/"):
            assert (DOCS / page).is_file()


def test_sdk_reference_lists_every_name_of_the_sdk() -> None:
    import kubesched
    import kubesched.testing

    page = reference.sdk_reference()
    for module in (kubesched, kubesched.testing):
        for name in module.__all__:
            if not name.startswith("__"):
                assert re.search(rf"^#### (class )?`{re.escape(name)}[`(]", page, re.M), name
    assert f"**{kubesched.__sdk_version__}**" in page


# -- the docs speak to users about the product, not about how it was built ------------------

# How the project's history reads, which git keeps and the docs must not: "issue 15",
# "session 5", "Issue 15, third pass", "pass 2", "seed 002" / `seed002` (the documents the
# project started from), "the seed documents", "the table". Word boundaries keep out
# what is legitimate: a random `--seed 7`, a GitHub reference of another project
# (`kubernetes#106361`, "pluggy issue #250"), "nodes that pass", a controller's "first pass",
# a pytest session. `\s+` because Markdown wraps lines anywhere; `(?<![^\W_])`, a word
# boundary that an underscore makes too (`side_by_side_issue15.sh`).
HISTORY = re.compile(
    r"""
    (?<![^\W_])(?:issue|session)(?:[-_]|\s+)?\d+\b
    | \bpass(?:[-_]|\s+)\d+\b
    | (?:^|[,(])[ \t]*(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\s+pass\b
    | \b(?:this|that|last|previous|earlier|later|next)\s+session\b
    | (?<![^\W_])seeds?(?:[-_]|\s+)?0\d\d\b
    | \bthe\s+seeds\b
    | \bseed\s+documents?\b
    | \bthe\s+issue(?:'s)?\b
    """,
    re.IGNORECASE | re.MULTILINE | re.VERBOSE,
)


def history_phrases(text: str) -> list[tuple[int, str]]:
    """The project-history phrasings in ``text``: (lines before it, the phrase)."""
    return [
        (text.count("\n", 0, m.start()), " ".join(m.group(0).strip(" \t,(").split()))
        for m in HISTORY.finditer(text)
    ]


def comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every docstring (a statement that is a string) of
    a Python module; code and its other strings are left out."""
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found.append((node.lineno, node.value.value))
    return found


def _texts(root: Path, area: str) -> list[tuple[str, int | None, str]]:
    """What users read in one area of the tree under ``root``: (file, its first line, text);
    the line is None for a file's own name."""
    out: list[tuple[str, int | None, str]] = []

    def files(folder: str) -> list[Path]:
        return sorted(p for p in (root / folder).rglob("*") if p.is_file())

    def name(path: Path, folder: str) -> None:
        out.append((str(path.relative_to(root)), None, str(path.relative_to(root / folder))))

    def whole(path: Path) -> None:
        out.append((str(path.relative_to(root)), 1, path.read_text(errors="replace")))

    def code(path: Path) -> None:
        try:
            parts = comments_and_docstrings(path.read_text())
        except (SyntaxError, tokenize.TokenError):  # a Jinja template of plugin_template/:
            # all of it is prose to a user
            whole(path)
        else:
            out.extend((str(path.relative_to(root)), line, text) for line, text in parts)

    if area == "README":
        whole(root / "README.md")
        return out
    for p in files(area):
        if area in ("examples", "benchmarks"):
            name(p, area)
        if p.suffix == ".py":
            code(p)
        elif area == "examples" or p.suffix in (".md", ".txt") or p.name == "cookiecutter.json":
            whole(p)
    return out


def history_in(root: Path, area: str) -> list[str]:
    """Every project-history phrasing of ``area``, as ``file:line: phrase``."""
    return [
        f"{file}:{'name' if first is None else first + lines}: {phrase}"
        for file, first, text in _texts(root, area)
        for lines, phrase in history_phrases(text)
    ]


AREAS = ["docs", "README", "examples", "benchmarks", "core", "builtin_plugins", "contrib",
         "plugin_template"]  # fmt: skip


@pytest.mark.parametrize("area", AREAS)
def test_no_project_history_in_what_users_read(area: str) -> None:
    found = history_in(ROOT, area)
    assert not found, "history belongs in git, not here:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "## Issue 15, third pass: the per-pod fixed cost",
        "as session 5 measured",
        "after the session-3 preemption work",
        "the issue-15 table's harness",
        "side_by_side_issue15.sh",
        "(second pass) the queue",
        "in pass 2 the queue changed",
        "the figures of this session",
        "seed 002's cluster",
        "examples/seed002/taints",
        "Seed-003 predates that",
        "where the seed documents differ",
        "the seeds say",
        "the issue's table",
    ],
)
def test_history_phrasings_are_found(text: str) -> None:
    assert history_phrases(text)


@pytest.mark.parametrize(
    "text",
    [
        "`--seed 7` gives the same placements",
        "`seed: 42` in the workload",
        "ties broken with a seeded generator",
        "since kubernetes#106361, where expiry raced with slow binds",
        "pluggy issue #250 discusses exactly this",
        "the nodes that pass every filter",
        "the kubelet evicts one pod per pass",
        "deleted at pod GC's first pass after the quarantine",
        'the filters run once more (the second pass, "the pod fits")',
        "in every pytest session of an environment",
        "so that an interrupted session keeps what it measured",
        "issues a FailedScheduling event",
    ],
)
def test_legitimate_words_are_not_history(text: str) -> None:
    assert history_phrases(text) == []


@pytest.mark.parametrize(
    ("area", "files", "expected"),
    [
        ("examples", {"seed002/README.md": "# Taints\n"},
         [("examples/seed002/README.md:name", "seed002")]),
        ("examples", {"taints/README.md": "# Taints\n\nAs session\n4 found.\n"},
         [("examples/taints/README.md:3", "session 4")]),
        ("benchmarks", {"side_by_side_issue15.sh": "#!/bin/sh\n"},
         [("benchmarks/side_by_side_issue15.sh:name", "issue15")]),
        ("core", {"m.py": '"""A module (seed 003)."""\n'}, [("core/m.py:1", "seed 003")]),
        ("core", {"m.py": "x = 1\ny = 2  # measured in session 5\n"},
         [("core/m.py:2", "session 5")]),
        ("core", {"m.py": 'def f():\n    """Twice.\n\n    What issue 15 asks."""\n'},
         [("core/m.py:4", "issue 15")]),
        # Code and its strings other than docstrings are not prose: left to review.
        ("core", {"m.py": 'x = "issue 15"\n'}, []),
        ("docs", {"page.md": "# Bench\n\nThe issue's table.\n"},
         [("docs/page.md:3", "The issue's")]),
        ("docs", {"page.md": "`--seed 3` for the same objects.\n"}, []),
    ],
    ids=["example-folder", "example-text", "script-name", "module-docstring", "comment",
         "function-docstring", "code-string", "docs-page", "random-seed"],
)  # fmt: skip
def test_planted_history_is_reported_with_its_place(
    tmp_path: Path, area: str, files: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    for name, text in files.items():
        path = tmp_path / area / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = history_in(tmp_path, area)
    assert [f.rsplit(": ", 1)[1] for f in found] == [phrase for _, phrase in expected]
    assert [f.rsplit(": ", 1)[0] for f in found] == [where for where, _ in expected]
