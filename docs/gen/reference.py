"""Generate the reference pages of the documentation from the code.

* the configuration reference, from the pydantic models of ``kubesched.config`` and the
  ``Args`` model of every installed plugin;
* the hookspec reference, from the docstrings of ``kubesched.framework.hookspecs``;
* the SDK reference, from ``__all__`` of ``kubesched`` and ``kubesched.testing``.

Used by the mkdocs hook beside this file (``hooks.py``) and by ``tests/docs``;
``python docs/gen/reference.py OUTDIR`` writes the pages to OUTDIR.
"""

from __future__ import annotations

import inspect
import itertools
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

CONFIG_PAGE = "reference/configuration.md"
HOOKSPEC_PAGE = "reference/hookspecs.md"
SDK_PAGE = "reference/sdk.md"


# -- configuration ---------------------------------------------------------------------


def _nested_models(annotation: object) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _nested_models(arg)


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin in (tuple, list):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    return str(annotation).replace("typing.", "")


def _first_line(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n")[0].replace("\n", " ").strip()


def field_description(model: type[BaseModel], name: str) -> str:
    """A field's description: its own, else (a nested model) that model's summary, else
    (a ``Plugins`` extension point) which extension point it configures."""
    field = model.model_fields[name]
    if field.description:
        return field.description
    nested = list(_nested_models(field.annotation))
    if model.__name__ == "Plugins":
        from kubesched.framework.plugin import EXTENSION_POINTS_BY_CONFIG_KEY

        key = field.alias or name
        ep = EXTENSION_POINTS_BY_CONFIG_KEY.get(key)
        if ep is not None:
            return f"The plugins of the {ep.name} extension point (`{ep.hook}` hook)."
        if key == "multiPoint":
            return "Plugins enabled (or disabled) at every extension point they implement."
    if nested:
        return _first_line(nested[0].__doc__)
    return ""


def _default(field) -> str:
    if field.default is PydanticUndefined:
        return "required" if field.default_factory is None else "—"
    value = field.default
    if value is None or value == ():
        return "—"
    if isinstance(value, BaseModel):
        return "see below"
    return f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`'


def config_models() -> list[type[BaseModel]]:
    """``KubeSchedulerConfiguration`` and every model nested in it, breadth first."""
    from kubesched.config import KubeSchedulerConfiguration

    out: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [KubeSchedulerConfiguration]
    while todo:
        model = todo.pop(0)
        if model in out:
            continue
        out.append(model)
        for field in model.model_fields.values():
            todo.extend(m for m in _nested_models(field.annotation) if m not in out)
    return out


def plugin_args_models() -> list[tuple[str, type[BaseModel]]]:
    """``(plugin name, Args model)`` of every installed plugin that takes args."""
    from kubesched.framework.registry import PluginRegistry

    return [(e.name, e.args_model) for e in PluginRegistry.discover() if e.args_model]


def documented_fields() -> list[tuple[str, str, str]]:
    """``(model, key, description)`` of every field the configuration reference shows."""
    rows = []
    models = [(m.__name__, m) for m in config_models()]
    models += [(f"{name} args", m) for name, m in plugin_args_models()]
    for title, model in models:
        for name, field in model.model_fields.items():
            if title.endswith(" args") and name in ("kind", "api_version"):
                continue
            rows.append((title, field.alias or name, field_description(model, name)))
    return rows


def _table(model: type[BaseModel], skip: tuple[str, ...] = ()) -> list[str]:
    lines = ["| field | type | default | description |", "| --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        key = field.alias or name
        desc = field_description(model, name).replace("|", "\\|")
        bounds = [
            f"{op} {getattr(m, attr)}"
            for m in field.metadata
            for attr, op in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))
            if getattr(m, attr, None) is not None
        ]
        if bounds:
            desc += f" ({', '.join(bounds)})"
        type_name = _type_name(field.annotation).replace("|", "\\|")
        lines.append(f"| `{key}` | {type_name} | {_default(field)} | {desc} |")
    return lines


def config_reference() -> str:
    """The configuration reference page (Markdown)."""
    out = [
        "# Configuration reference: every field and plugin arg",
        "",
        "Generated from the pydantic models of `kubesched.config` and the `Args` model of",
        "every installed plugin; [Configuration](../configuration.md) explains how the",
        "pieces fit. Keys are camelCase, as in YAML; an unknown key is an error.",
        "",
    ]
    for model in config_models():
        out += [f"## {model.__name__}", "", _first_line(model.__doc__), "", *_table(model), ""]
    out += [
        "## Plugin args",
        "",
        "The `args` of a `pluginConfig` entry, per plugin (`kind`/`apiVersion` are accepted",
        "and ignored).",
        "",
    ]
    for name, model in plugin_args_models():
        out += [
            f"### {name}",
            "",
            f"`{model.__name__}`: {_first_line(model.__doc__)}",
            "",
            *_table(model, skip=("kind", "api_version")),
            "",
        ]
    return "\n".join(out)


# -- hookspecs -------------------------------------------------------------------------


def hookspecs() -> list[tuple[str, object]]:
    """``(name, function)`` of every hookspec, in the order of ``hookspecs.py``."""
    from kubesched.framework import hookspecs as module
    from kubesched.framework.plugin import PROJECT_NAME

    marker = f"{PROJECT_NAME}_spec"
    found = [
        (name, fn)
        for name, fn in vars(module).items()
        if inspect.isfunction(fn) and hasattr(fn, marker)
    ]
    return sorted(found, key=lambda item: item[1].__code__.co_firstlineno)


def _banners(source: str) -> dict[int, str]:
    # "# ----\n# Scheduling cycle (one pod at a time)\n# ----" above a group of hooks.
    lines = source.splitlines()
    out = {}
    for i in range(1, len(lines) - 1):
        if lines[i - 1].startswith("# ---") and lines[i + 1].startswith("# ---"):
            out[i + 1] = lines[i].lstrip("# ").strip()
    return out


def hookspec_reference() -> str:
    """The hookspec reference page (Markdown)."""
    from kubesched.framework import hookspecs as module
    from kubesched.framework.plugin import EXTENSION_POINTS, PROJECT_NAME

    source = inspect.getsource(module)
    banners = _banners(source)
    points = {ep.hook: ep.name for ep in EXTENSION_POINTS}
    companions = {h: ep.name for ep in EXTENSION_POINTS for h in ep.companion_hooks}
    out = [
        "# Hookspec reference",
        "",
        "Generated from `kubesched/framework/hookspecs.py`, the reference manual of the",
        "plugin API. A plugin implements a hook with a method of the same name marked",
        "`@kubesched.hookimpl`, taking any subset of the hook's parameters by name.",
        "[Concepts](../concepts.md) shows where each runs.",
        "",
        inspect.cleandoc(module.__doc__ or "").split("\n\n", 1)[-1],
        "",
    ]
    for name, fn in hookspecs():
        line = fn.__code__.co_firstlineno
        banner = max((b for b in banners if b < line), default=None)
        if banner is not None:
            title = banners.pop(banner)
            for b in [b for b in banners if b < line]:
                banners.pop(b)
            out += [f"## {title}", ""]
        sig = str(inspect.signature(fn)).replace("'", "")
        where = points.get(name) or (
            f"{companions[name]} (companion)" if name in companions else "registration"
        )
        opts = getattr(fn, f"{PROJECT_NAME}_spec").get("firstresult")
        out += [
            f"### `{name}`",
            "",
            f"Extension point: **{where}**{' · firstresult' if opts else ''}",
            "",
            "```python",
            f"def {name}{sig}",
            "```",
            "",
            inspect.cleandoc(fn.__doc__ or ""),
            "",
        ]
    return "\n".join(out)


# -- SDK -------------------------------------------------------------------------------


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj)).replace("'", "")  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def _public_methods(cls: type) -> list[tuple[str, object]]:
    own = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        fn = member.fget if isinstance(member, property) else member
        if isinstance(fn, staticmethod | classmethod):
            fn = fn.__func__
        if inspect.isfunction(fn):
            own.append((name, member))
    return own


def _attribute_docs() -> dict[str, str]:
    """The docstrings written under module-level assignments (``X = 1`` then a string) in
    the loaded kubesched modules: what constants say about themselves."""
    import ast

    docs: dict[str, str] = {}
    for mod_name, module in sorted(sys.modules.items()):
        if not mod_name.startswith("kubesched.") or not getattr(module, "__file__", None):
            continue
        try:
            tree = ast.parse(Path(module.__file__).read_text())
        except (OSError, SyntaxError):
            continue
        body = tree.body
        for node, nxt in itertools.pairwise(body):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            if (
                isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                for target in targets:
                    if isinstance(target, ast.Name):
                        docs.setdefault(target.id, inspect.cleandoc(nxt.value.value))
    return docs


def _describe(name: str, obj: object, attribute_docs: dict[str, str]) -> list[str]:
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    if inspect.isclass(obj):
        out = [f"#### class `{name}`", ""]
        if doc:
            out += [doc, ""]
        for attr, annotation in vars(obj).get("__annotations__", {}).items():
            if not attr.startswith("_"):
                out.append(f"- `{attr}`: `{annotation}`")
        for meth, member in _public_methods(obj):
            if isinstance(member, property):
                out.append(f"- `{meth}` (property): {_first_line(member.__doc__)}")
            else:
                fn = member.__func__ if isinstance(member, staticmethod | classmethod) else member
                out.append(f"- `{meth}{_signature(fn)}`: {_first_line(fn.__doc__)}")
        return [*out, ""]
    if callable(obj) and inspect.isroutine(obj):
        return [f"#### `{name}{_signature(obj)}`", "", doc, ""]
    value = repr(obj)
    shown = [] if " at 0x" in value else [f"`{value}`", ""]
    return [f"#### `{name}`", "", *shown, attribute_docs.get(name, ""), ""]


def _module_section(module: types.ModuleType, title: str) -> list[str]:
    names = [n for n in module.__all__ if not n.startswith("__")]
    kinds = {
        "Classes": [n for n in names if inspect.isclass(getattr(module, n))],
        "Functions": [n for n in names if inspect.isroutine(getattr(module, n))],
    }
    done = {n for group in kinds.values() for n in group}
    kinds["Constants and aliases"] = [n for n in names if n not in done]
    attribute_docs = _attribute_docs()
    out = [f"## `{title}`", "", _first_line(module.__doc__), ""]
    for kind, group in kinds.items():
        if group:
            out += [f"### {kind}", ""]
            for n in sorted(group, key=str.lower):
                out += _describe(n, getattr(module, n), attribute_docs)
    return out


def sdk_reference() -> str:
    """The SDK reference page (Markdown): every name of the SDK, generated from ``__all__``."""
    import kubesched
    import kubesched.testing

    out = [
        "# SDK reference",
        "",
        f"Plugin SDK version **{kubesched.__sdk_version__}** (`kubesched.__sdk_version__`).",
        "Generated from `__all__` of `kubesched` and `kubesched.testing`: exactly these",
        "names are promised to plugin authors, under the",
        "[compatibility policy](../sdk.md#compatibility-policy). Kubernetes objects come",
        "from `kubesched.api`; nothing else is public.",
        "",
    ]
    out += _module_section(kubesched, "kubesched")
    out += _module_section(kubesched.testing, "kubesched.testing")
    return "\n".join(out)


PAGES = {
    CONFIG_PAGE: config_reference,
    HOOKSPEC_PAGE: hookspec_reference,
    SDK_PAGE: sdk_reference,
}


if __name__ == "__main__":
    outdir = Path(sys.argv[1] if len(sys.argv) > 1 else "site-reference")
    for page, render in PAGES.items():
        path = outdir / page
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render())
        print(path)
