"""The documentation is tied to the code: hookspecs, configuration fields, plugins."""

from __future__ import annotations

import importlib.util
import re
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
