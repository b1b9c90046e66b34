"""Peaks: place pods where the jump in the node's power draw is smallest (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/trimaran/peaks``. Each node has a power
model ``power(u) = K0 + K1 × e^(K2 × u)`` of its CPU utilisation ``u`` (percent); with
``x`` the node's measured CPU utilisation and ``p = 100 × (x × capacity / 100 + request)
/ capacity`` the utilisation once the pod's cpu request runs there, the raw score is the
jump ``K1 × (e^(K2 × p) - e^(K2 × x))`` scaled by 10^15 and truncated to an integer (0
when ``p`` exceeds 100, or without metrics). NormalizeScore maps the smallest jump to 100
and the largest to 0.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, PrivateAttr, ValidationError, model_validator

from kubesched import (
    ArgsError,
    ArgsModel,
    NodeBatch,
    NodeInfo,
    NodeScores,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched.api import Pod

from ..normalize import reverse_min_max
from .metrics import (
    MetricsSource,
    TrimaranArgs,
    cpu_capacity_column,
    cpu_capacity_milli,
    cpu_utilization,
    pod_requests,
)

__all__ = [
    "NAME",
    "NODE_POWER_MODEL_ENV",
    "Peaks",
    "PeaksArgs",
    "PowerModel",
    "power_jump",
]

NAME = "Peaks"

NODE_POWER_MODEL_ENV = "NODE_POWER_MODEL"
"""Environment variable naming a JSON file of power models, read when the args give none."""

POWER_SCALE = 10**15
"""Upstream scales the (small, fractional) power jump to an integer score by this."""

# Scaled jumps beyond int64 (never with real power models) saturate at the largest
# float64 values that convert to int64.
_LOWEST, _HIGHEST = -(2.0**63), 2.0**63 - 1024


class PowerModel(ArgsModel):
    """A node's power model ``K0 + K1 × e^(K2 × utilisation)``."""

    k0: float = Field(default=0.0, description="Constant term (idle power).")
    k1: float = Field(default=0.0, description="Multiplier of the exponential term.")
    k2: float = Field(default=0.0, description="Exponent per percent of CPU utilisation.")


def _load_power_models(path: str) -> dict[str, PowerModel]:
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: must be an object of node name to power model")
    models = {}
    for node, model in raw.items():
        if not isinstance(model, dict):
            raise ValueError(f"{path}: {node}: must be an object with k0, k1, k2")
        try:
            models[node] = PowerModel.model_validate(model)
        except ValidationError as err:
            raise ValueError(f"{path}: {node}: {err.errors()[0]['msg']}") from None
    return models


class PeaksArgs(TrimaranArgs):
    """``PeaksArgs``: the metrics source (for ``watcherAddress``) and the power models."""

    node_power_model: dict[str, PowerModel] = Field(
        default_factory=dict,
        description=(
            "Power model per node name; empty: read from the JSON file named by the "
            "NODE_POWER_MODEL environment variable. A node without a model scores 0."
        ),
    )
    _models: dict[str, PowerModel] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _power_models(self) -> PeaksArgs:
        errors: list[ArgsError] = []
        if self.node_power_model:
            self._models = dict(self.node_power_model)
        else:
            # initNodePowerModels: without models in the args the plugin fails to start
            # unless the environment names a readable file of them.
            path = os.environ.get(NODE_POWER_MODEL_ENV, "")
            try:
                if not path:
                    raise ValueError(f"${NODE_POWER_MODEL_ENV} is not set")
                self._models = _load_power_models(path)
            except ValueError as err:
                errors.append(
                    invalid(
                        ("nodePowerModel",),
                        {},
                        f"empty, and no power model file to read instead: {err}",
                    )
                )
        raise_args_errors("PeaksArgs", errors)
        return self

    def power_models(self) -> Mapping[str, PowerModel]:
        """The power model of each node, from the args or the environment's file."""
        return self._models


def power_jump(x: float, p: float, model: PowerModel) -> float:
    """Upstream ``getPowerJumpForUtilisation``: the power added going from ``x`` to
    ``p`` percent of CPU utilisation."""
    return model.k1 * (math.exp(model.k2 * p) - math.exp(model.k2 * x))


def _to_score(jump: float) -> int:
    # Go's int64(float) truncates toward zero.
    scaled = jump * POWER_SCALE
    if math.isnan(scaled):
        return 0
    return int(max(min(scaled, _HIGHEST), _LOWEST))


class Peaks:
    """Favours the node whose power draw grows least with the pod's CPU request."""

    name = NAME
    sdk_version = "1.0"
    Args = PeaksArgs

    def __init__(self, args: PeaksArgs | None, handle: Any) -> None:
        args = args or PeaksArgs()
        self.source = MetricsSource(args, handle)
        self.models = args.power_models()

    @hookimpl
    def score(self, pod: Pod, node_info: NodeInfo) -> int:
        util = cpu_utilization(self.source.node_metrics(node_info.node))
        if util is None:
            return 0
        request = float(pod_requests(pod)[0])
        cap = float(cpu_capacity_milli(node_info.node))
        predicted = 100 * ((util / 100) * cap + request) / cap if cap != 0 else 0.0
        if predicted > 100:
            return 0
        model = self.models.get(node_info.name, PowerModel())
        return _to_score(power_jump(util, predicted, model))

    @hookimpl
    def score_nodes(self, pod: Pod, nodes: NodeBatch) -> np.ndarray:
        table, rows = nodes.table, nodes.rows
        util = self.source.columns(table).cpu_util[rows]
        cap = cpu_capacity_column(table)[rows]
        k1, k2 = (
            table.derived(
                (NAME, key, id(self.models)),
                lambda t, key=key: np.array(
                    [getattr(self.models.get(name, PowerModel()), key) for name in t.names],
                    dtype=np.float64,
                ),
            )[rows]
            for key in ("k1", "k2")
        )
        request = float(pod_requests(pod)[0])
        has = ~np.isnan(util)
        x = np.where(has, util, 0.0)
        with np.errstate(all="ignore"):
            predicted = np.where(cap != 0, 100 * ((x / 100) * cap + request) / cap, 0.0)
            scaled = k1 * (np.exp(k2 * predicted) - np.exp(k2 * x)) * POWER_SCALE
        scaled = np.where(has & (predicted <= 100) & ~np.isnan(scaled), scaled, 0.0)
        return np.trunc(np.clip(scaled, _LOWEST, _HIGHEST)).astype(np.int64)

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        reverse_min_max(scores)
