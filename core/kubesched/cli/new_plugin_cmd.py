"""``kubesched new-plugin``: generate a plugin package from the cookiecutter template."""

from __future__ import annotations

import argparse
import importlib.resources
import keyword
import re
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kubesched.errors import KubeschedError
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.sdk import SDK_VERSION

TEMPLATE_EXTENSION_POINTS = tuple(
    ep.name
    for ep in EXTENSION_POINTS
    if ep.name not in ("QueueSort", "PlacementGenerate", "PlacementScore")
)
"""What the template can implement: every extension point but QueueSort (a profile has
exactly one queue sort, and the built-in PrioritySort is nearly always what one wants) and
the two of a pod group's cycle (alpha, behind TopologyAwareWorkloadScheduling)."""


MAX_LABEL_NAME_LENGTH = 63
"""The longest name part of a label key (Kubernetes' qualified-name limit): the generated
plugin's example label is ``example.com/<plugin name in kebab case>``."""


class NewPluginError(KubeschedError):
    """Options the template cannot honour, or a generation that failed."""


def template_path(stack: ExitStack) -> Path:
    """The directory of the cookiecutter template shipped in the kubesched package.

    In a checkout ``kubesched/plugin_template`` links to the repository's
    ``plugin_template/``; in a wheel it is package data. ``stack`` keeps it on disk
    for as long as it is open (``importlib.resources`` may extract it from a zip).
    """
    return stack.enter_context(
        importlib.resources.as_file(importlib.resources.files("kubesched") / "plugin_template")
    )


def parse_extension_points(text: str) -> list[str]:
    """``"score, filter"`` -> ``["Filter", "Score"]``: canonical names, in the order a pod
    meets them. Raises ``NewPluginError`` naming an unknown one."""
    by_lower = {ep.lower(): ep for ep in TEMPLATE_EXTENSION_POINTS}
    chosen: set[str] = set()
    for item in text.replace(",", " ").split():
        if item.lower() not in by_lower:
            raise NewPluginError(
                f"unknown extension point {item!r}; choose among "
                f"{', '.join(TEMPLATE_EXTENSION_POINTS)}"
            )
        chosen.add(by_lower[item.lower()])
    if not chosen:
        raise NewPluginError("choose at least one extension point")
    return [ep for ep in TEMPLATE_EXTENSION_POINTS if ep in chosen]


def generate(
    output_dir: str | Path = ".",
    *,
    no_input: bool = True,
    overwrite: bool = False,
    default_config: bool = False,
    **context: Any,
) -> Path:
    """Run the template with cookiecutter's API; return the generated project directory.

    ``context`` overrides the template's variables (``plugin_name``, ``distribution_name``,
    ``package_name``, ``description``, ``author``, ``extension_points``, ``with_args``).
    ``default_config`` ignores the user's cookiecutter configuration (~/.cookiecutterrc).
    """
    from cookiecutter.exceptions import CookiecutterException, OutputDirExistsException
    from cookiecutter.main import cookiecutter

    name = context.get("plugin_name")
    if name is not None:
        check_plugin_name(name)
    package = context.get("package_name")
    if package is not None and (not package.isidentifier() or keyword.iskeyword(package)):
        raise NewPluginError(f"package name {package!r} is not a Python identifier")
    if "extension_points" in context:
        context["extension_points"] = ",".join(parse_extension_points(context["extension_points"]))
    # The generated plugin declares the SDK of the kubesched that generated it.
    context.setdefault("_sdk_version", SDK_VERSION)
    try:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise NewPluginError(
            f"cannot create the output directory {str(output_dir)!r}: {err.strerror}"
        ) from None
    with ExitStack() as stack:
        try:
            out = cookiecutter(
                str(template_path(stack)),
                no_input=no_input,
                extra_context=context,
                output_dir=str(output_dir),
                overwrite_if_exists=overwrite,
                default_config=default_config,
            )
        except OutputDirExistsException:
            raise NewPluginError(
                f"directory {str(Path(output_dir) / _project_dir_name(context))!r} already "
                "exists (use --force to overwrite it)"
            ) from None
        except CookiecutterException as err:
            raise NewPluginError(f"generating the plugin failed: {err}") from None
        except OSError as err:
            where = f" {err.filename!r}" if err.filename else ""
            raise NewPluginError(f"cannot write the project{where}: {err.strerror}") from None
    return Path(out)


def check_plugin_name(name: str) -> None:
    """Refuse a plugin name the template cannot use: not CamelCase letters and digits, or
    so long that the example label key ``example.com/<kebab-name>`` would be invalid."""
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
        raise NewPluginError(
            f"plugin name {name!r} must be CamelCase letters and digits (e.g. NodeLabelGate)"
        )
    label_name = kebab_case(name)
    if len(label_name) > MAX_LABEL_NAME_LENGTH:
        raise NewPluginError(
            f"plugin name {name!r} is too long: its example label key example.com/{label_name} "
            f"would have a name part of {len(label_name)} characters (at most "
            f"{MAX_LABEL_NAME_LENGTH})"
        )


def kebab_case(name: str) -> str:
    """``NodeLabelGate`` -> ``node-label-gate``, as the template's own filter derives it."""
    with ExitStack() as stack:
        sys.path.insert(0, str(template_path(stack)))
        try:
            import local_extensions
        finally:
            sys.path.pop(0)
    return local_extensions.kebab_case(name)


def _project_dir_name(context: dict[str, Any]) -> str:
    """The directory the template creates: the distribution name, given or derived."""
    if "distribution_name" in context:
        return str(context["distribution_name"])
    return f"kubesched-{kebab_case(context.get('plugin_name', 'MyPlugin'))}"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``new-plugin`` command."""
    parser = subparsers.add_parser(
        "new-plugin",
        help="generate a plugin package (code, tests, pyproject.toml) from the template",
        description="Generate a third-party plugin package from kubesched's cookiecutter "
        "template: the plugin class with the chosen extension points, an Args model, tests "
        "that use kubesched.testing, and a pyproject.toml registering the plugin. Prompts "
        "for what the options do not say, unless --no-input.",
    )
    parser.add_argument("--name", help="the plugin's name, CamelCase (e.g. NodeLabelGate)")
    parser.add_argument(
        "--extension-points",
        "-e",
        metavar="LIST",
        help="comma-separated, among " + ", ".join(TEMPLATE_EXTENSION_POINTS),
    )
    parser.add_argument(
        "--args",
        dest="with_args",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the plugin takes args (an Args model for its pluginConfig)",
    )
    parser.add_argument("--description", help="one-line description")
    parser.add_argument("--author", help="the author's name")
    parser.add_argument("--distribution", help="distribution name (default: kubesched-<name>)")
    parser.add_argument("--package", help="Python package name (default: from the distribution)")
    parser.add_argument(
        "--output-dir", "-o", default=".", metavar="DIR", help="where to create the project"
    )
    parser.add_argument(
        "--no-input", action="store_true", help="do not prompt: defaults for what is not given"
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing project")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    context: dict[str, Any] = {}
    for option, key in (
        ("name", "plugin_name"),
        ("extension_points", "extension_points"),
        ("with_args", "with_args"),
        ("description", "description"),
        ("author", "author"),
        ("distribution", "distribution_name"),
        ("package", "package_name"),
    ):
        value = getattr(args, option)
        if value is not None:
            context[key] = value
    if not args.no_input and not sys.stdin.isatty():
        raise NewPluginError(
            "standard input is not a terminal, so there is no one to answer the prompts: "
            "pass --no-input, with --name, --extension-points and the other options for what "
            "the defaults do not cover"
        )
    out = generate(args.output_dir, no_input=args.no_input, overwrite=args.force, **context)
    print(f"created {out}")
    print(f"next: pip install -e '{out}[test]' && pytest {out}")
    return 0
