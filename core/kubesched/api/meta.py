"""Metadata shared by every Kubernetes model: ObjectMeta, owner references, label selectors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, ClassVar, NoReturn, Self, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "IntOrString",
    "KubeModel",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NullableDict",
    "NullableList",
    "ObjectMeta",
    "OwnerReference",
]


def _none_to_empty_list(v: Any) -> Any:
    return [] if v is None else v


def _none_to_empty_dict(v: Any) -> Any:
    return {} if v is None else v


def _int_or_string(v: Any) -> int | str:
    # One validator instead of a pydantic union, so an error has one message and a clean
    # field path (a union would add "int"/"str" branches to the location).
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise ValueError("must be an integer or a string (IntOrString)")
    return v


# Kubernetes serialises an empty list or map as null as often as it omits it; Go reads
# both as empty. These accept null and give the empty value.
T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
NullableList = Annotated[list[T], BeforeValidator(_none_to_empty_list)]
NullableDict = Annotated[dict[K, V], BeforeValidator(_none_to_empty_dict)]

IntOrString = Annotated[int | str, PlainValidator(_int_or_string)]
"""``intstr.IntOrString``: an int, or a string such as ``"50%"``."""


class _SharedFieldNames(set[str]):
    """The names of a model's explicitly set fields (pydantic's ``model_fields_set``),
    one instance shared by every model whose set fields are the same, so never changed.

    pydantic gives each instance its own ``set`` (216 bytes even when empty, about a
    quarter of a small model's bytes); a pod holds about ten models. ``KubeModel``
    swaps a fresh instance's set for the shared one and swaps again on every change.
    It stays a ``set`` because pydantic-core's ``exclude_unset`` needs one.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a shared set of field names is never changed")

    def add(self, name: str) -> None:
        """Nothing to do for a name already in; any other is refused (a change)."""
        if name not in self:
            self._refuse()

    discard = remove = pop = clear = update = _refuse
    difference_update = intersection_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


_FIELD_NAMES: dict[frozenset[str], _SharedFieldNames] = {}


def _shared_field_names(names: Iterable[str]) -> _SharedFieldNames:
    """The one shared set of these field names (made on first use; a schema has few)."""
    key = frozenset(names)
    shared = _FIELD_NAMES.get(key)
    if shared is None:
        shared = _FIELD_NAMES[key] = _SharedFieldNames(key)
    return shared


class KubeModel(BaseModel):
    """Base of all Kubernetes models: snake_case in Python, camelCase in YAML, extras ignored.

    The set of explicitly set fields is shared between instances (``_SharedFieldNames``);
    it behaves as pydantic's own: ``model_fields_set``, ``exclude_unset``, assignment
    and ``model_copy(update=...)`` give the same answers.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
    )

    def model_post_init(self, context: Any, /) -> None:
        """Swap the new instance's set of field names for the shared one. A model with
        extra fields keeps its own: their names come from the input, not the schema."""
        if self.__pydantic_extra__ is None:
            object.__setattr__(
                self, "__pydantic_fields_set__", _shared_field_names(self.__pydantic_fields_set__)
            )

    def _own_field_names(self) -> _SharedFieldNames | None:
        """Give this instance a private, changeable copy of its set of field names for
        pydantic to change; the shared set it had (None if it had its own)."""
        names = self.__pydantic_fields_set__
        if type(names) is not _SharedFieldNames:
            return None
        object.__setattr__(self, "__pydantic_fields_set__", set(names))
        return names

    def _share_field_names(self) -> None:
        names = self.__pydantic_fields_set__
        if type(names) is set:
            object.__setattr__(self, "__pydantic_fields_set__", _shared_field_names(names))

    def __setattr__(self, name: str, value: Any) -> None:
        names = self.__pydantic_fields_set__
        if type(names) is not _SharedFieldNames or name in names:
            # pydantic adds ``name`` to the set: nothing changes (the usual case).
            super().__setattr__(name, value)
            return
        self._own_field_names()
        try:
            super().__setattr__(name, value)
        finally:
            self._share_field_names()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """pydantic's ``model_copy``; the copy shares its set of field names too."""
        if not update:
            return super().model_copy(deep=deep)
        # pydantic adds the updated names to the copy's set, a copy of this one's.
        shared = self._own_field_names()
        try:
            copied = super().model_copy(update=update, deep=deep)
        finally:
            if shared is not None:
                object.__setattr__(self, "__pydantic_fields_set__", shared)
        if copied.__pydantic_extra__ is None:
            copied._share_field_names()
        return copied

    def to_dict(self) -> dict[str, Any]:
        """The object as a manifest dict (camelCase keys, unset/None fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OwnerReference(KubeModel):
    """``metav1.OwnerReference``: an object that owns this one (e.g. the ReplicaSet of a Pod)."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    """``metav1.ObjectMeta``: the fields of ``metadata`` the scheduler reads."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    labels: NullableDict[str, str] = Field(default_factory=dict)
    annotations: NullableDict[str, str] = Field(default_factory=dict)
    owner_references: NullableList[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] | None = None
    """None when the object has none (left out of its manifest)."""
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    resource_version: str | None = None
    generation: int | None = None

    @property
    def controller_ref(self) -> OwnerReference | None:
        """The owner reference with ``controller: true``, if any (``metav1.GetControllerOf``)."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


class LabelSelectorRequirement(KubeModel):
    """``metav1.LabelSelectorRequirement``: key, operator (In/NotIn/Exists/DoesNotExist), values."""

    key: str = ""
    operator: str = ""
    values: NullableList[str] = Field(default_factory=list)


class LabelSelector(KubeModel):
    """``metav1.LabelSelector``. Compile it with :func:`kubesched.api.compile_label_selector`."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class KubeObject(KubeModel):
    """A top-level Kubernetes object: apiVersion, kind and metadata.

    Each subclass says whether it is ``namespaced``; a namespaced object without a
    namespace gets ``default``, as the API server would give it.
    """

    namespaced: ClassVar[bool] = True

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @model_validator(mode="after")
    def _default_namespace(self) -> KubeObject:
        if self.namespaced and not self.metadata.namespace:
            self.metadata.namespace = "default"
        return self

    def newer_than(self, other: KubeObject) -> bool:
        """Whether this is a later version of the object than ``other``: resourceVersions
        compared as numbers (upstream's ``CompareResourceVersion``; the API server's and
        the embedded cluster's are); False when one is not a number."""
        try:
            return int(self.metadata.resource_version or 0) > int(
                other.metadata.resource_version or 0
            )
        except ValueError:
            return False

    @property
    def name(self) -> str:
        """``metadata.name`` ("" when unset)."""
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" for cluster-scoped objects)."""
        return self.metadata.namespace or ""

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
        if self.namespaced:
            return f"{self.metadata.namespace or 'default'}/{self.metadata.name or ''}"
        return self.metadata.name or ""
