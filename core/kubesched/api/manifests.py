"""Reading Kubernetes manifests (YAML/JSON files, directories, stdin) into typed objects."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import UserInputError, problems_from_validation_error
from .cluster import Lease, PodDisruptionBudget, PriorityClass, RuntimeClass
from .core import Namespace, Node, Pod, Service
from .meta import KubeObject
from .workloads import DaemonSet, Deployment, Job, ReplicaSet, ReplicationController, StatefulSet

__all__ = [
    "KINDS",
    "MANIFEST_SUFFIXES",
    "load_manifests",
    "parse_manifests",
    "parse_object",
    "parse_objects",
]

KINDS: dict[str, type[KubeObject]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        Pod,
        Node,
        Namespace,
        Service,
        ReplicaSet,
        Deployment,
        StatefulSet,
        DaemonSet,
        Job,
        ReplicationController,
        PriorityClass,
        PodDisruptionBudget,
        RuntimeClass,
        Lease,
    )
}
"""The object kinds kubesched reads, by ``kind``."""

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
"""File suffixes read from a directory."""

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _describe(doc: dict[str, Any], kind: str | None, fallback: str | None) -> str:
    """Name the object for messages: ``Pod default/web-0``, or ``document 3`` if nameless."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(name, str) and name:
        cls = KINDS.get(kind or "")
        if cls is not None and cls.namespaced:
            ns = meta.get("namespace") if isinstance(meta, dict) else None
            name = f"{ns if isinstance(ns, str) and ns else 'default'}/{name}"
        return f"{kind} {name}" if kind else name
    if fallback is not None:
        return fallback
    return f"{kind} (unnamed)" if kind else "object"


def _is_list(doc: dict[str, Any]) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in doc


def _doc_label(index: int | None) -> str | None:
    return f"document {index + 1}" if index is not None else None


def _parse_one(doc: Any, source: str | None, label: str | None) -> KubeObject:
    if not isinstance(doc, dict):
        raise UserInputError(
            f"expected a mapping (a Kubernetes object), got {type(doc).__name__}",
            source=source,
            obj=label,
        )
    kind = doc.get("kind")
    obj = _describe(doc, kind if isinstance(kind, str) else None, label)
    if not isinstance(kind, str) or not kind:
        raise UserInputError(
            "missing 'kind'; supported kinds: " + ", ".join(sorted(KINDS)), source=source, obj=obj
        )
    if _is_list(doc):
        raise UserInputError(f"{kind} must be read with parse_objects", source=source, obj=obj)
    cls = KINDS.get(kind)
    if cls is None:
        raise UserInputError(
            f"unsupported kind {kind!r}; supported kinds: " + ", ".join(sorted(KINDS)),
            source=source,
            obj=obj,
        )
    try:
        return cls.model_validate(doc)
    except ValidationError as err:
        raise UserInputError(
            "invalid object",
            source=source,
            obj=obj,
            problems=problems_from_validation_error(err),
        ) from None


def parse_object(
    doc: dict[str, Any], *, source: str | None = None, index: int | None = None
) -> KubeObject:
    """Validate one manifest document into its model class (chosen by ``kind``).

    ``source`` (a file name) and ``index`` (0-based position of the document in it,
    shown 1-based as ``document 3``) only serve the error message. Raises
    ``UserInputError`` naming the source, the object and each field path. A
    ``kind: List`` document is refused here: use :func:`parse_objects`.
    """
    return _parse_one(doc, source, _doc_label(index))


def parse_objects(
    doc: dict[str, Any], *, source: str | None = None, index: int | None = None
) -> list[KubeObject]:
    """Like :func:`parse_object`, but a ``List`` (or ``*List``) with ``items`` expands."""
    label = _doc_label(index)
    if not (isinstance(doc, dict) and _is_list(doc)):
        return [_parse_one(doc, source, label)]
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise UserInputError(
            "items: expected a list", source=source, obj=_describe(doc, doc.get("kind"), label)
        )
    prefix = f"{label} " if label else ""
    return [_parse_one(item, source, f"{prefix}items[{i}]") for i, item in enumerate(items)]


def _yaml_documents(text: str, source: str) -> Iterator[Any]:
    try:
        yield from yaml.load_all(text, Loader=_Loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise UserInputError(f"invalid YAML: {problem}{where}", source=source) from None


def parse_manifests(text: str, *, source: str = "<string>") -> list[KubeObject]:
    """Parse YAML text (one or more ``---``-separated documents, or JSON) into objects.

    Empty documents are skipped; ``List`` documents expand.
    """
    out: list[KubeObject] = []
    for i, doc in enumerate(_yaml_documents(text, source)):
        if doc is None:
            continue
        out.extend(parse_objects(doc, source=source, index=i))
    return out


def _parse_json(text: str, source: str) -> list[KubeObject]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserInputError(
            f"invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})", source=source
        ) from None
    if doc is None:
        return []
    return parse_objects(doc, source=source)


def _read_file(path: Path) -> list[KubeObject]:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserInputError(f"cannot read file: {err}", source=source) from None
    if path.suffix == ".json":
        return _parse_json(text, source)
    return parse_manifests(text, source=source)


def load_manifests(paths: Iterable[str | Path]) -> list[KubeObject]:
    """Load every object from ``paths``, in order.

    A path is a file (YAML, possibly multi-document, or ``.json``), a directory (its
    ``.yaml``/``.yml``/``.json`` files, recursively, in sorted order) or ``-`` for
    standard input. Raises ``UserInputError`` for a missing path, bad YAML/JSON (with
    the line) or an invalid object (with the field path).
    """
    out: list[KubeObject] = []
    for p in paths:
        if str(p) == "-":
            out.extend(parse_manifests(sys.stdin.read(), source="<stdin>"))
            continue
        path = Path(p)
        if path.is_dir():
            files = sorted(
                f for f in path.rglob("*") if f.is_file() and f.suffix in MANIFEST_SUFFIXES
            )
            for f in files:
                out.extend(_read_file(f))
        elif path.is_file():
            out.extend(_read_file(path))
        else:
            raise UserInputError("no such file or directory", source=str(path))
    return out
