"""Reading Kubernetes manifests (YAML/JSON files, directories, stdin) into typed objects."""

from __future__ import annotations

import bisect
import json
import logging
import sys
import threading
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ConfigDict, ValidationError

from ..errors import ErrorType, FieldProblem, UserInputError, problems_from_validation_error
from ..notices import notice
from . import schema
from .cluster import Lease, PodDisruptionBudget, PriorityClass, RuntimeClass
from .core import Namespace, Node, Pod, Service
from .kubelet import KubeletConfiguration
from .meta import KubeObject
from .podgroups import WORKLOAD_API_VERSION, Workload, WorkloadPodGroup
from .quota import LimitRange, ResourceQuota
from .resource import (
    TAINT_RULE_API_VERSIONS,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from .rest import resource_name
from .storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from .validation import InvalidObjectError, validate_object
from .workloads import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)

__all__ = [
    "KINDS",
    "KIND_ENTRY_POINT_GROUP",
    "MANIFEST_SUFFIXES",
    "VERSIONED_KINDS",
    "DecodingError",
    "KeptObject",
    "kept_kind",
    "kept_kinds",
    "load_manifests",
    "parse_manifests",
    "parse_object",
    "parse_objects",
    "register_kind",
    "resolve_kind",
    "split_kind",
    "stored_key",
]

log = logging.getLogger(__name__)

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
        CronJob,
        ReplicationController,
        PriorityClass,
        PodDisruptionBudget,
        RuntimeClass,
        Lease,
        KubeletConfiguration,
        PersistentVolume,
        PersistentVolumeClaim,
        StorageClass,
        CSINode,
        CSIDriver,
        CSIStorageCapacity,
        DeviceClass,
        ResourceClaim,
        ResourceClaimTemplate,
        ResourceSlice,
        LimitRange,
        ResourceQuota,
        Workload,
    )
}
"""The object kinds kubesched reads, by ``kind``: the built-in ones, and those that
:func:`resolve_kind` added from the ``kubesched.kinds`` entry points or
:func:`register_kind` (CRD-like kinds of plugins, e.g. Coscheduling's PodGroup)."""

_BUILTIN_KINDS = frozenset(KINDS)

VERSIONED_KINDS: dict[tuple[str, str], type[KubeObject]] = {
    (WORKLOAD_API_VERSION, "PodGroup"): WorkloadPodGroup,
    (WORKLOAD_API_VERSION, "Workload"): Workload,
    **{(version, "DeviceTaintRule"): DeviceTaintRule for version in TAINT_RULE_API_VERSIONS},
}
"""Kinds read by apiVersion and kind: the Workload API, which kube-apiserver v1.36 serves
only when enabled (``--runtime-config=scheduling.k8s.io/v1alpha2=true`` with the
GenericWorkload gate), so the recorded schema does not list it, and whose PodGroup shares
its kind name with Coscheduling's (both are kept under the kind ``PodGroup``); and
DeviceTaintRule, likewise served only when enabled (``resource.k8s.io/v1beta2`` or
``v1alpha3`` with DRADeviceTaintRules)."""

KIND_ENTRY_POINT_GROUP = "kubesched.kinds"
"""Entry-point group of extra object kinds: ``PodGroup = "pkg.module:PodGroup"``, each a
``KubeObject`` subclass whose ``kind`` field defaults to the entry point's name."""

_extra_kinds_loaded = False
_extra_kinds_lock = threading.Lock()


def register_kind(cls: type[KubeObject]) -> type[KubeObject]:
    """Make ``cls`` a known kind (by its ``kind`` field's default); returns ``cls``.

    For kinds that are not installed through an entry point (tests, notebooks). A
    built-in kind cannot be replaced.
    """
    kind = cls.model_fields["kind"].default
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{cls.__name__}: the 'kind' field needs a default (the kind's name)")
    current = KINDS.get(kind)
    if current is not None and current is not cls and kind in _BUILTIN_KINDS:
        raise ValueError(f"kind {kind!r} is built in and cannot be replaced")
    KINDS[kind] = cls
    return cls


def _load_extra_kinds() -> None:
    """Read the ``kubesched.kinds`` entry points into :data:`KINDS`, once per process.

    Lazy so that importing kubesched imports no plugin package; a broken entry point is
    logged and skipped rather than breaking every manifest load.
    """
    global _extra_kinds_loaded
    with _extra_kinds_lock:
        if _extra_kinds_loaded:
            return
        _extra_kinds_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=KIND_ENTRY_POINT_GROUP):
            if ep.name in KINDS:
                continue
            try:
                cls = ep.load()
                if not (isinstance(cls, type) and issubclass(cls, KubeObject)):
                    raise TypeError(f"{ep.value} is not a KubeObject subclass")
                if cls.model_fields["kind"].default != ep.name:
                    raise TypeError(f"{ep.value} has kind {cls.model_fields['kind'].default!r}")
                KINDS[ep.name] = cls
            except Exception as err:  # one bad package must not break manifest loading
                log.warning(
                    "ignoring object kind %r from entry point %s: %s", ep.name, ep.value, err
                )


def resolve_kind(kind: str) -> type[KubeObject] | None:
    """The model class of ``kind``, consulting the ``kubesched.kinds`` entry points (once)
    for a kind that is not built in, then the kinds kube-apiserver serves that kubesched
    keeps without modelling (:func:`kept_kind`); None when no one knows it."""
    cls = KINDS.get(kind)
    if cls is None and not _extra_kinds_loaded:
        _load_extra_kinds()
        cls = KINDS.get(kind)
    if cls is None:
        served = _served_by_kind().get(kind)
        if served is not None:
            cls = kept_kind(served)
    if cls is None:
        cls = next((c for (_, k), c in VERSIONED_KINDS.items() if k == kind), None)
    return cls


def split_kind(kind: str) -> tuple[str, str | None]:
    """``("PodGroup", "scheduling.k8s.io/v1alpha2")`` for a kind named with its apiVersion
    (``scheduling.k8s.io/v1alpha2/PodGroup``), ``(kind, None)`` for a plain kind name."""
    api_version, _, name = kind.rpartition("/")
    return name, api_version or None


def stored_key(kind: str, key: str, api_version: str | None) -> str:
    """The key under which a store of objects by kind keeps the object ``key``
    (``namespace/name`` or ``name``) of ``kind`` at ``api_version``: ``key`` itself for the
    group of the class :func:`resolve_kind` gives (or an unknown apiVersion), suffixed
    with ``@group`` for another group sharing the kind name — the Workload API's PodGroup
    and Coscheduling's may have the same namespace and name."""
    if not api_version:
        return key
    group = api_version.rpartition("/")[0]
    cls = resolve_kind(kind)
    home = cls.model_fields["api_version"].default if cls is not None else None
    if not isinstance(home, str) or home.rpartition("/")[0] == group:
        return key
    return f"{key}@{group}"


class KeptObject(KubeObject):
    """An object of a built-in kind that kubesched validates and keeps but does not
    simulate (a ConfigMap, a Role, an Ingress...): its metadata as a model, every other
    field as read. Each such kind has its own subclass (:func:`kept_kind`)."""

    model_config = ConfigDict(extra="allow")


_KEPT: dict[str, type[KeptObject]] = {}


@cache
def _served_by_kind() -> dict[str, schema.ServedKind]:
    """The served kinds by name, the preferred (first recorded) version of each."""
    out: dict[str, schema.ServedKind] = {}
    for served in schema.served_kinds():
        out.setdefault(served.kind, served)
    return out


def kept_kind(served: schema.ServedKind) -> type[KeptObject]:
    """The :class:`KeptObject` subclass of ``served``'s kind (made once per kind)."""
    cls = _KEPT.get(served.kind)
    if cls is None:
        cls = _KEPT[served.kind] = type(
            served.kind,
            (KeptObject,),
            {
                "__doc__": f"A kept {served.kind} (not simulated).",
                "__module__": __name__,
                "namespaced": served.namespaced,
                "__annotations__": {"api_version": str | None, "kind": str | None},
                "api_version": served.api_version,
                "kind": served.kind,
            },
        )
    return cls


def kept_kinds() -> list[str]:
    """The kinds read so far as :class:`KeptObject` (validated and kept, not simulated)."""
    return list(_KEPT)


class DecodingError(UserInputError):
    """A document refused before validation, as ``kubectl apply`` and kube-apiserver
    refuse it: apiVersion or kind not set or not served, unknown or duplicate fields, a
    value of the wrong type (HTTP 400). ``message`` is their own text; each field is also
    a problem (``path``), but the text already names them, so it is shown alone."""

    def __str__(self) -> str:
        where = ": ".join(p for p in (self.source, self.obj) if p)
        return f"{where}: {self.message}" if where else self.message


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
"""File suffixes read from a directory."""

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe YAML loader, keeping note of keys a mapping repeats (the API server
    refuses them: ``key "a" already set in map``) where the plain loader keeps the last."""


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> Iterator[dict[str, Any]]:
    seen: set[Any] = set()
    repeats = []
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
            if key_node.value in seen:
                # The server's YAML decoder names the line where the repeated key's value
                # starts (a block sequence or mapping: the line after the key's).
                repeats.append((key_node.value, value_node.start_mark.line + 1))
            seen.add(key_node.value)
    data: dict[str, Any] = schema.DuplicateKeys({}, repeats) if repeats else {}
    yield data  # first, as PyYAML's own constructor does, for recursive documents
    data.update(loader.construct_mapping(node))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)


def _describe(doc: dict[str, Any], kind: str | None, fallback: str | None) -> str:
    """Name the object for messages: ``Pod default/web-0``, or ``document 3`` if nameless."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(name, str) and name:
        cls = resolve_kind(kind or "")
        if cls is not None and cls.namespaced:
            ns = meta.get("namespace") if isinstance(meta, dict) else None
            name = f"{ns if isinstance(ns, str) and ns else 'default'}/{name}"
        return f"{kind} {name}" if kind else name
    if fallback is not None:
        return fallback
    return f"{kind} (unnamed)" if kind else "object"


def _is_list(doc: dict[str, Any]) -> bool:
    """A ``List`` or ``*List`` (with ``items``) that expands into its objects."""
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in doc


def _doc_label(index: int | None) -> str | None:
    return f"document {index + 1}" if index is not None else None


def _kind_of(
    doc: dict[str, Any], source: str | None, obj: str
) -> tuple[str, schema.ServedKind | None]:
    """The document's kind and, when kube-apiserver serves its apiVersion and kind, how;
    refuses what ``kubectl apply`` refuses before anything reaches the server."""
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    missing = [f for f, v in (("apiVersion", api_version), ("kind", kind)) if not v]
    if missing:
        raise DecodingError(
            "error validating data: " + ", ".join(f"{f} not set" for f in missing),
            source=source,
            obj=obj,
            problems=[FieldProblem(f, "Required value", ErrorType.REQUIRED) for f in missing],
        )
    if not isinstance(kind, str) or not isinstance(api_version, str):
        raise DecodingError("apiVersion and kind must be strings", source=source, obj=obj)
    served = schema.served_kind(api_version, kind)
    if served is None and (api_version, kind) not in VERSIONED_KINDS:
        group, _, version = api_version.rpartition("/")
        # A group the server serves, or one without a domain (extensions/v1beta1), is
        # Kubernetes' own: an unknown version or kind there is an error, not a CRD.
        if schema.serves_group(group) or "." not in group or not version:
            raise DecodingError(
                f'no matches for kind "{kind}" in version "{api_version}"', source=source, obj=obj
            )
    return kind, served


def _preferred_version(kind: str) -> str | None:
    """The apiVersion a built-in or plugin kind is read at when a Python caller leaves
    it out (files must give it, as kubectl requires)."""
    served = _served_by_kind().get(kind)
    if served is not None:
        return served.api_version
    cls = resolve_kind(kind)
    return cls.model_fields["api_version"].default if cls is not None else None


Form = Literal["yaml", "json", "python"]
"""Where a document comes from: YAML or JSON text, or a program's dict."""


def _parse_one(doc: Any, source: str | None, label: str | None, form: Form) -> KubeObject | None:
    """One document as an object; None for a custom resource no plugin reads (noticed)."""
    if not isinstance(doc, dict):
        raise UserInputError(
            f"expected a mapping (a Kubernetes object), got {type(doc).__name__}",
            source=source,
            obj=label,
        )
    kind = doc.get("kind")
    obj = _describe(doc, kind if isinstance(kind, str) else None, label)
    if _is_list(doc):
        raise UserInputError(f"{kind} must be read with parse_objects", source=source, obj=obj)
    # Name the document too: several documents may carry the same object name.
    where = obj if label is None or obj == label else f"{label} ({obj})"
    if form == "python" and not doc.get("apiVersion") and isinstance(kind, str):
        doc = {**doc, "apiVersion": _preferred_version(kind)}
    kind, served = _kind_of(doc, source, where)
    raw_errors = []
    if served is not None:
        decoded = schema.decode_errors(doc, served, yaml=form == "yaml")
        if decoded.failed:
            raise DecodingError(
                decoded.message(served),
                source=source,
                obj=where,
                problems=[FieldProblem(path, text) for path, text in decoded.problems],
            )
        raw_errors = decoded.invalid
        cls = KINDS.get(kind) or kept_kind(served)
    else:
        # A kind of a group the server does not serve: a plugin's kind (or one of
        # kubesched's own files, KubeletConfiguration), else a custom resource. A
        # built-in kind's name in a foreign group is a custom resource too.
        cls = VERSIONED_KINDS.get((doc["apiVersion"], kind)) or resolve_kind(kind)
        if cls is None or (
            kind in _served_by_kind() and (doc["apiVersion"], kind) not in VERSIONED_KINDS
        ):
            notice(
                f"custom resource {doc['apiVersion']} {kind} is not a kind kubesched reads "
                "(no plugin registers it); skipped",
                source=source,
                obj=where,
            )
            return None
    try:
        parsed = cls.model_validate(doc)
    except ValidationError as err:
        raise UserInputError(
            "invalid object",
            source=source,
            obj=where,
            problems=problems_from_validation_error(err),
        ) from None
    errs = validate_object(parsed) + raw_errors
    if errs:
        refusal = InvalidObjectError.of(parsed, errs)
        raise UserInputError(
            f'{refusal.kind} "{refusal.name}" is invalid',
            source=source,
            obj=where,
            problems=[FieldProblem(e.field, e.body()) for e in errs],
        )
    return parsed


def parse_object(
    doc: dict[str, Any], *, source: str | None = None, index: int | None = None
) -> KubeObject:
    """Validate one manifest document into its model class (chosen by ``kind``), then
    validate it as kube-apiserver would (:mod:`kubesched.api.validation`).

    ``source`` (a file name) and ``index`` (0-based position of the document in it,
    shown 1-based as ``document 3``) only serve the error message. Raises
    ``UserInputError`` naming the source, the object and each field path. A
    ``kind: List`` document is refused here: use :func:`parse_objects`, as for a custom
    resource no plugin reads (which :func:`parse_objects` skips with a notice).
    """
    parsed = _parse_one(doc, source, _doc_label(index), "python")
    if parsed is None:
        raise UserInputError(
            f"{doc['apiVersion']} {doc['kind']} is a custom resource kubesched does not read",
            source=source,
            obj=_describe(doc, doc["kind"], _doc_label(index)),
        )
    return parsed


def parse_objects(
    doc: dict[str, Any],
    *,
    source: str | None = None,
    index: int | None = None,
    form: Form = "python",
) -> list[KubeObject]:
    """Like :func:`parse_object`, but a ``List`` (or ``*List``) with ``items`` expands,
    and a custom resource that no plugin reads is skipped with a notice.

    ``form`` says where ``doc`` comes from: ``"yaml"`` or ``"json"`` text, which must
    give ``apiVersion`` (as ``kubectl`` requires; YAML's unknown fields are listed in key
    order, its repeated keys by line, as the server lists them), or ``"python"``, a
    program's dict, read at its kind's preferred version when it gives none.
    """
    label = _doc_label(index)
    if not (isinstance(doc, dict) and _is_list(doc)):
        parsed = _parse_one(doc, source, label, form)
        return [] if parsed is None else [parsed]
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise UserInputError(
            "items: expected a list", source=source, obj=_describe(doc, doc.get("kind"), label)
        )
    prefix = f"{label} " if label else ""
    out = []
    for i, item in enumerate(items):
        parsed = _parse_one(item, source, f"{prefix}items[{i}]", form)
        if parsed is not None:
            out.append(parsed)
    return out


MAX_MANIFEST_BYTES = 256 * 1024 * 1024
"""Largest manifest file (or standard input) read: a bigger one is refused unread."""

MAX_ALIAS_EXPANSION = 1_000_000
"""Most YAML nodes a document may expand to through aliases (``*a``) beyond ten times
its written nodes: more is a "billion laughs" bomb, refused before anything walks it."""


def _check_aliases(text: str, source: str) -> None:
    """Refuse a document whose aliases expand it explosively, in one linear pass over
    the YAML events (the loader itself shares aliased nodes, but everything after it
    would walk the expansion)."""
    sizes: dict[str, int] = {}  # anchor -> expanded size of its node
    stack: list[list[Any]] = []  # open collections: [anchor, expanded size]
    written = expanded = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.DocumentStartEvent):
            sizes.clear()
            written = expanded = 0
            continue
        if isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            written += 1
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            written += 1
            stack.append([event.anchor, 1])
            continue
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            if anchor:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size
            continue
        else:
            continue
        expanded += size
        if stack:
            stack[-1][1] += size
        if expanded > MAX_ALIAS_EXPANSION + 10 * written:
            raise UserInputError(
                f"YAML aliases expand a document beyond {MAX_ALIAS_EXPANSION} nodes "
                "(an alias bomb?); refused",
                source=source,
            )


def _yaml_documents(text: str, source: str) -> Iterator[Any]:
    try:
        if "&" in text and "*" in text:  # anchors and aliases: a bomb is possible
            _check_aliases(text, source)
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
        out.extend(parse_objects(doc, source=source, index=i, form="yaml"))
    return out


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, noting the keys it repeats (the server refuses them)."""
    data = dict(pairs)
    if len(data) == len(pairs):
        return data
    seen: set[str] = set()
    repeats = []
    for key, _ in pairs:
        if key in seen:
            repeats.append((key, None))
        seen.add(key)
    return schema.DuplicateKeys(data, repeats)


def _parse_json(text: str, source: str) -> list[KubeObject]:
    try:
        doc = json.loads(text, object_pairs_hook=_json_object)
    except json.JSONDecodeError as err:
        raise UserInputError(
            f"invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})", source=source
        ) from None
    except RecursionError:
        raise UserInputError("invalid JSON: nested too deeply", source=source) from None
    if doc is None:
        return []
    return parse_objects(doc, source=source, form="json")


def _read_file(path: Path) -> list[KubeObject]:
    source = str(path)
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise UserInputError(
                f"file larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB; refused",
                source=source,
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserInputError(f"cannot read file: {err}", source=source) from None
    if path.suffix == ".json":
        return _parse_json(text, source)
    return parse_manifests(text, source=source)


def load_manifests(
    paths: Iterable[str | Path], *, sources: list[str] | None = None
) -> list[KubeObject]:
    """Load every object from ``paths``, in order.

    A path is a file (YAML, possibly multi-document, or ``.json``), a directory (its
    ``.yaml``/``.yml``/``.json`` files, recursively, in sorted order) or ``-`` for
    standard input. Raises ``UserInputError`` for a missing path, bad YAML/JSON (with
    the line) or an invalid object (with the field path). ``sources``, when given, gets
    the file of each object returned, in the same order (to name it in later messages).
    """
    out: list[KubeObject] = []
    origins = _Origins()
    for p in paths:
        if str(p) == "-":
            text = sys.stdin.read(MAX_MANIFEST_BYTES + 1)
            if len(text) > MAX_MANIFEST_BYTES:
                raise UserInputError(
                    f"more than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB; refused",
                    source="<stdin>",
                )
            out.extend(parse_manifests(text, source="<stdin>"))
            origins.add("<stdin>", len(out), text)
            continue
        path = Path(p)
        if path.is_dir():
            files = sorted(
                f for f in path.rglob("*") if f.is_file() and f.suffix in MANIFEST_SUFFIXES
            )
            for f in files:
                out.extend(_read_file(f))
                origins.add(str(f), len(out))
        elif path.is_file():
            out.extend(_read_file(path))
            origins.add(str(path), len(out))
        else:
            raise UserInputError("no such file or directory", source=str(path))
    _refuse_duplicates(out, origins)
    if sources is not None:
        start = 0
        for source, end in zip(origins.sources, origins.ends, strict=True):
            sources.extend([source] * (end - start))
            start = end
    return out


class _Origins:
    """Which file each loaded object came from: the files in order, each with the index
    just past its last object (and standard input's text, which cannot be read again)."""

    def __init__(self) -> None:
        self.sources: list[str] = []
        self.ends: list[int] = []
        self.stdin: str | None = None

    def add(self, source: str, end: int, text: str | None = None) -> None:
        """The objects up to index ``end`` (exclusive) not yet placed came from ``source``."""
        self.sources.append(source)
        self.ends.append(end)
        if text is not None:
            self.stdin = text

    def locate(self, index: int) -> str:
        """``file document N`` (with ``items[i]`` for a List's item) of object ``index``."""
        f = bisect.bisect_right(self.ends, index)
        source, start = self.sources[f], self.ends[f - 1] if f else 0
        text = self.stdin if source == "<stdin>" else Path(source).read_text(encoding="utf-8")
        # Only on the error path: the file parsed once already, so its documents and
        # their objects come out in the same order again.
        if source.endswith(".json"):
            docs: Iterable[Any] = [json.loads(text or "null")]
        else:
            docs = _yaml_documents(text or "", source)
        labels = []
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            if isinstance(doc, dict) and _is_list(doc):
                labels += [f"document {i + 1} items[{j}]" for j in range(len(doc["items"] or ()))]
            else:
                labels.append(f"document {i + 1}")
        return f"{source} {labels[index - start]}"


_KUBECTL_NAMES = {"<stdin>": "STDIN"}


def _refuse_duplicates(objects: list[KubeObject], origins: _Origins) -> None:
    """Refuse a second object of the same kind, namespace and name, as kube-apiserver
    refuses creating it (``kubectl create``'s words), naming both documents: one would
    silently replace the other."""
    seen: dict[tuple[str, str, str], int] = {}
    for i, obj in enumerate(objects):
        if not obj.metadata.name:
            continue  # generateName: every one is a new object
        # The group too: one kind name may live in two groups (PodGroup).
        group = (obj.api_version or "").rpartition("/")[0]
        first = seen.setdefault((group, obj.kind or "", obj.key), i)
        if first == i:
            continue
        second = origins.locate(i)
        source = origins.sources[bisect.bisect_right(origins.ends, i)]
        shown = _KUBECTL_NAMES.get(source, source)  # kubectl calls standard input STDIN
        raise UserInputError(
            f'Error from server (AlreadyExists): error when creating "{shown}": '
            f'{resource_name(obj.kind or "")} "{obj.name}" already exists '
            f"({second} repeats {obj.kind} {obj.key} of {origins.locate(first)})",
            source=source,
            obj=f"{obj.kind} {obj.key}",
        )
