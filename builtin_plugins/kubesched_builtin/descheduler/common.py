"""Args and pod selection the descheduler strategies share (namespaces, label selector)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from kubesched.api import LabelSelector, Pod, compile_label_selector


class StrategyArgs(BaseModel):
    """Base of the strategies' args: camelCase keys, a misspelt key is an error."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)


class Namespaces(StrategyArgs):
    """``include`` only these namespaces, or ``exclude`` these (not both)."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_of(self) -> Namespaces:
        if self.include and self.exclude:
            raise ValueError("only one of Include/Exclude namespaces can be set")
        return self

    def admits(self, namespace: str) -> bool:
        """Whether a pod of ``namespace`` is considered."""
        if self.include:
            return namespace in self.include
        return namespace not in self.exclude


def selects(pod: Pod, namespaces: Namespaces | None, selector: LabelSelector | None) -> bool:
    """Whether a strategy with these ``namespaces`` and ``labelSelector`` args looks at
    ``pod``."""
    if namespaces is not None and not namespaces.admits(pod.namespace or ""):
        return False
    return selector is None or compile_label_selector(selector).matches(pod.metadata.labels)


def owner_kinds_excluded(pod: Pod, kinds: list[str]) -> bool:
    """Whether one of the pod's owners is of a kind in ``kinds``."""
    return any(ref.kind in kinds for ref in pod.metadata.owner_references)
