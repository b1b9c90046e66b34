"""The plugin SDK's boundaries: what contrib, the template and the docs may import, and the core's
independence from the plugins."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import kubesched
from kubesched.cli.main import main
from kubesched.cli.new_plugin_cmd import TEMPLATE_EXTENSION_POINTS, generate
from kubesched.framework.sdk import SDK_VERSION

ROOT = Path(__file__).resolve().parents[2]

PLUGIN_MODULES = frozenset(
    {"kubesched", "kubesched.api", "kubesched.testing", "kubesched.deschedule"}
)
"""What a plugin may import from kubesched: the SDK, the Kubernetes objects, the test kit,
and the descheduler plugins' handle."""
EMBEDDING_MODULES = frozenset(
    {"kubesched.config", "kubesched.simulate", "kubesched.capacity", "kubesched.testing.envtest"}
)
"""What the docs also show to programs embedding kubesched (configuration, simulation,
capacity planning) and to tests against a real API server (the envtest control plane)."""


def _imports(source: str) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every absolute import in ``source`` (``from x import y`` gives
    ``x``; ``import x.y`` gives ``x.y``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _violations(files: dict[str, str], allowed: frozenset[str]) -> list[str]:
    """The imports of kubesched packages outside ``allowed``, as ``file:line: module``."""
    out = []
    for name, source in files.items():
        for line, module in _imports(source):
            top = module.split(".")[0]
            if top.startswith("kubesched_") and top not in ("kubesched_builtin",):
                continue  # the plugin's own package (kubesched_contrib, the generated one)
            if (top == "kubesched" or top == "kubesched_builtin") and module not in allowed:
                out.append(f"{name}:{line}: {module}")
    return out


def _python_files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(root.rglob("*.py"))}


def test_contrib_imports_only_the_sdk() -> None:
    files = _python_files(ROOT / "contrib")
    assert files
    assert _violations(files, PLUGIN_MODULES) == []


def test_generated_template_imports_only_the_sdk(tmp_path: Path) -> None:
    project = generate(
        tmp_path,
        plugin_name="EveryPoint",
        extension_points=",".join(TEMPLATE_EXTENSION_POINTS),
        with_args=True,
        default_config=True,
    )
    files = {str(p.relative_to(tmp_path)): p.read_text() for p in project.rglob("*.py")}
    assert len(files) >= 2
    assert _violations(files, PLUGIN_MODULES) == []
    assert f'sdk_version = "{SDK_VERSION}"' in next(v for k, v in files.items() if "plugin" in k)


def _doc_examples() -> dict[str, str]:
    out = {}
    for md in sorted((ROOT / "docs").rglob("*.md")):
        blocks = re.findall(r"```python\n(.*?)```", md.read_text(), re.S)
        for i, block in enumerate(blocks):
            out[f"{md.relative_to(ROOT)}[{i}]"] = block
    return out


def test_doc_examples_import_only_public_modules() -> None:
    examples = _doc_examples()
    assert any("plugin-guide" in k for k in examples)
    assert _violations(examples, PLUGIN_MODULES | EMBEDDING_MODULES) == []


def test_core_imports_no_plugin() -> None:
    core = _python_files(ROOT / "core" / "kubesched")
    bad = [
        f"{name}:{line}: {module}"
        for name, source in core.items()
        for line, module in _imports(source)
        if module.split(".")[0] in ("kubesched_builtin", "kubesched_contrib")
    ]
    assert bad == []


@pytest.mark.parametrize(
    ("files", "allowed", "expected"),
    [
        ({"a.py": "from kubesched import Status\n"}, PLUGIN_MODULES, []),
        ({"a.py": "import kubesched.api\n"}, PLUGIN_MODULES, []),
        ({"a.py": "from kubesched_contrib.x import y\n"}, PLUGIN_MODULES, []),
        ({"a.py": "from .core import y\n"}, PLUGIN_MODULES, []),
        (
            {"a.py": "\nfrom kubesched.framework.types import NodeInfo\n"},
            PLUGIN_MODULES,
            ["a.py:2: kubesched.framework.types"],
        ),
        (
            {"a.py": "from kubesched_builtin.noderesources.fit import X\n"},
            PLUGIN_MODULES,
            ["a.py:1: kubesched_builtin.noderesources.fit"],
        ),
        (
            {"a.py": "def f():\n    import kubesched.scheduler\n"},
            PLUGIN_MODULES,
            ["a.py:2: kubesched.scheduler"],
        ),
    ],
    ids=["sdk", "api", "own-package", "relative", "deep-core", "builtin", "nested-import"],
)
def test_the_boundary_check_itself(files, allowed, expected) -> None:
    assert _violations(files, allowed) == expected


def test_sdk_all_names_exist_and_are_documented() -> None:
    missing = [n for n in kubesched.__all__ if not hasattr(kubesched, n)]
    assert missing == []
    assert kubesched.__sdk_version__ == SDK_VERSION
    undocumented = [
        n
        for n in kubesched.__all__
        if not n.startswith("__")
        and callable(getattr(kubesched, n))
        and not (getattr(kubesched, n).__doc__ or "").strip()
    ]
    assert undocumented == []


def test_template_default_sdk_version_is_the_current_one() -> None:
    cookiecutter = json.loads((ROOT / "plugin_template" / "cookiecutter.json").read_text())
    assert cookiecutter["_sdk_version"] == SDK_VERSION


def test_version_option_names_the_package_and_the_sdk(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == (
        f"kubesched {kubesched.__version__} (plugin SDK {SDK_VERSION})\n"
    )
    # The version printed is the installed distribution's (pyproject.toml's).
    assert importlib.metadata.version("kubesched") == kubesched.__version__
