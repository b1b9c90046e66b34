"""``KubeletConfiguration``: the eviction settings of the kubelets of the embedded cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from .meta import KubeObject, NullableDict
from .quantity import parse_quantity

__all__ = [
    "DEFAULT_EVICTION_HARD",
    "DEFAULT_PRESSURE_TRANSITION_PERIOD",
    "KUBELET_CONFIG_ANNOTATION",
    "SIGNALS",
    "KubeletConfiguration",
    "Threshold",
]

SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
"""The eviction signals the embedded kubelets observe."""

DEFAULT_EVICTION_HARD = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}
"""The kubelet's hard thresholds (Linux) when ``evictionHard`` is not given at all. As the
kubelet documents, a configuration that gives some of them does not inherit the others."""

DEFAULT_PRESSURE_TRANSITION_PERIOD = 300.0
"""``evictionPressureTransitionPeriod`` default (5m)."""

KUBELET_CONFIG_ANNOTATION = "kubesched.io/kubelet-config"
"""A Node annotation naming the KubeletConfiguration its kubelet runs with; nodes without it
use the configuration named ``default`` if there is one, else the kubelet's defaults."""


@dataclass(frozen=True)
class Threshold:
    """One eviction threshold: ``signal < value``, hard (``grace_period`` 0) or soft.

    ``quantity`` (bytes or a count) or ``percentage`` (a float32 fraction, as the kubelet
    parses it) gives the value; ``min_reclaim`` likewise (None: 0)."""

    signal: str
    quantity: int | None
    percentage: float | None
    grace_period: float = 0.0
    min_reclaim_quantity: int | None = None
    min_reclaim_percentage: float | None = None
    text: str = ""

    @property
    def hard(self) -> bool:
        """A threshold with no grace period evicts at once."""
        return self.grace_period == 0

    def value(self, capacity: int) -> int:
        """``GetThresholdQuantity``: the amount below which the threshold is met."""
        return _amount(self.quantity, self.percentage, capacity)

    def min_reclaim(self, capacity: int) -> int:
        """The minimum reclaim amount for this signal."""
        return _amount(self.min_reclaim_quantity, self.min_reclaim_percentage, capacity)


def _amount(quantity: int | None, percentage: float | None, capacity: int) -> int:
    if quantity is not None:
        return quantity
    if percentage is None:
        return 0
    # int64(float64(capacity) * float64(float32 percentage)), as the kubelet computes it.
    return int(float(capacity) * float(np.float32(percentage)))


def _parse_value(signal: str, text: str, what: str) -> tuple[int | None, float | None]:
    text = str(text).strip()
    if text.endswith("%"):
        try:
            pct = float(np.float32(float(text[:-1])) / np.float32(100))
        except ValueError:
            raise ValueError(f"{signal}: invalid percentage {text!r}") from None
        if pct <= 0 and what == "threshold":
            raise ValueError(f"eviction percentage threshold {signal} must be positive: {text}")
        return None, pct
    try:
        q = parse_quantity(text)
    except ValueError as err:
        raise ValueError(f"{signal}: {err}") from None
    value = q.value()
    if what == "threshold" and value <= 0:
        raise ValueError(f"eviction threshold {signal} must be positive: {text}")
    if value < 0:
        raise ValueError(f"negative eviction minimum reclaim specified for {signal}")
    return value, None


def _check_signals(values: dict[str, str], field: str) -> None:
    for signal in values:
        if signal not in SIGNALS:
            raise ValueError(
                f"{field}: unsupported eviction signal {signal}; supported: {', '.join(SIGNALS)}"
            )


class KubeletConfiguration(KubeObject):
    """``kubelet.config.k8s.io/v1beta1 KubeletConfiguration``: its eviction fields.

    Other fields of a real kubelet configuration are ignored. A nameless one is named
    ``default`` and applies to every node without the ``kubesched.io/kubelet-config``
    annotation. Values are quantities or percentages; durations Go durations (``1m30s``).
    """

    namespaced: ClassVar[bool] = False

    api_version: str | None = "kubelet.config.k8s.io/v1beta1"
    kind: str | None = "KubeletConfiguration"
    eviction_hard: NullableDict[str, str] | None = Field(
        None, description="Hard thresholds by signal (default: the kubelet's)."
    )
    eviction_soft: NullableDict[str, str] = Field(default_factory=dict)
    eviction_soft_grace_period: NullableDict[str, str] = Field(default_factory=dict)
    eviction_max_pod_grace_period: int = 0
    eviction_minimum_reclaim: NullableDict[str, str] = Field(default_factory=dict)
    eviction_pressure_transition_period: str | None = None

    @model_validator(mode="after")
    def _validate_eviction(self) -> KubeletConfiguration:
        if not self.metadata.name:
            self.metadata.name = "default"
        self.thresholds()  # raises ValueError on a bad threshold
        return self

    def pressure_transition_period(self) -> float:
        """``evictionPressureTransitionPeriod`` in seconds."""
        if self.eviction_pressure_transition_period is None:
            return DEFAULT_PRESSURE_TRANSITION_PERIOD
        from kubesched.config.duration import parse_duration

        return parse_duration(self.eviction_pressure_transition_period)

    def thresholds(self) -> list[Threshold]:
        """``ParseThresholdConfig``: hard, then soft thresholds, with their grace periods
        and minimum reclaims; ``ValueError`` naming the field when one is wrong."""
        from kubesched.config.duration import parse_duration

        hard = DEFAULT_EVICTION_HARD if self.eviction_hard is None else self.eviction_hard
        _check_signals(hard, "evictionHard")
        _check_signals(self.eviction_soft, "evictionSoft")
        _check_signals(self.eviction_soft_grace_period, "evictionSoftGracePeriod")
        _check_signals(self.eviction_minimum_reclaim, "evictionMinimumReclaim")
        if self.eviction_max_pod_grace_period < 0:
            raise ValueError("evictionMaxPodGracePeriod: must be >= 0")
        reclaim = {
            s: _parse_value(s, v, "reclaim") for s, v in self.eviction_minimum_reclaim.items()
        }
        out = []
        for field, values in (("evictionHard", hard), ("evictionSoft", self.eviction_soft)):
            for signal, text in values.items():
                try:
                    q, pct = _parse_value(signal, text, "threshold")
                except ValueError as err:
                    raise ValueError(f"{field}: {err}") from None
                grace = 0.0
                if field == "evictionSoft":
                    period = self.eviction_soft_grace_period.get(signal)
                    if period is None:
                        raise ValueError(
                            "evictionSoftGracePeriod: grace period must be specified for the "
                            f"soft eviction threshold {signal}"
                        )
                    grace = parse_duration(period)
                rq, rpct = reclaim.get(signal, (None, None))
                out.append(Threshold(signal, q, pct, grace, rq, rpct, f"{signal}<{text}"))
        return out
