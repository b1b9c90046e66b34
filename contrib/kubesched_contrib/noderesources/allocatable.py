"""NodeResourcesAllocatable: favour nodes with the least (or most) allocatable resources (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/noderesources/allocatable.go`` (master):
a node's raw score is the weighted average ``sum(w * s(allocatable)) / sum(w)`` over the
configured resources (Go integer division, truncating toward zero), where ``s`` is
``-allocatable`` in mode ``Least`` and ``allocatable`` in mode ``Most``. It ignores what
is requested: it ranks nodes by size, e.g. to fill small nodes first and keep big ones
free. NormalizeScore maps the lowest..highest raw scores linearly onto 0..100 (all 0
when they are equal). Defaults weigh a millicore like a MiB: cpu ``1<<20``, memory 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ArgsError,
    ArgsModel,
    NodeBatch,
    NodeInfo,
    NodeScores,
    PluginArgs,
    go_div,
    go_div_array,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched.api import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name

NAME = "NodeResourcesAllocatable"

LEAST = "Least"
MOST = "Most"


class AllocatableResourceSpec(ArgsModel):
    """A resource and its weight (``ResourceSpec``); unlike the built-in plugins' specs
    the weight is not defaulted: it must be positive."""

    name: str = Field(description="cpu, memory, ephemeral-storage or a scalar resource.")
    weight: int = Field(default=0, description="Weight in the average; must be positive.")


def default_resources() -> tuple[AllocatableResourceSpec, ...]:
    """Upstream's default: a millicore weighs as much as a MiB."""
    return (
        AllocatableResourceSpec(name=CPU, weight=1 << 20),
        AllocatableResourceSpec(name=MEMORY, weight=1),
    )


class NodeResourcesAllocatableArgs(PluginArgs):
    """``NodeResourcesAllocatableArgs`` with scheduler-plugins' v1 defaults."""

    resources: tuple[AllocatableResourceSpec, ...] = Field(
        default_factory=default_resources,
        description="Resources to weigh; empty means cpu (weight 1<<20) and memory (1).",
    )
    mode: str = Field(
        default=LEAST,
        description="Least: favour the node with the least allocatable; Most: the most.",
    )

    @model_validator(mode="after")
    def _validate(self) -> NodeResourcesAllocatableArgs:
        if not self.resources:
            # SetDefaults_NodeResourcesAllocatableArgs; frozen, hence object.__setattr__.
            object.__setattr__(self, "resources", default_resources())
        if not self.mode:
            object.__setattr__(self, "mode", LEAST)
        # ValidateNodeResourcesAllocatableArgs.
        errors: list[ArgsError] = []
        for i, r in enumerate(self.resources):
            if r.weight <= 0:
                errors.append(
                    invalid(
                        ("resources", i, "weight"),
                        r.weight,
                        f"resource weight of {r.name} should be a positive value, got :{r.weight}",
                    )
                )
        if self.mode not in (LEAST, MOST):
            errors.append(invalid(("mode",), self.mode, "invalid support ModeType"))
        raise_args_errors("NodeResourcesAllocatableArgs", errors)
        return self


def _allocatable(node_info: NodeInfo, resource: str) -> int:
    """``calculateResourceAllocatableRequest``'s allocatable side."""
    a = node_info.allocatable
    if resource == CPU:
        return a.milli_cpu
    if resource == MEMORY:
        return a.memory
    if resource == EPHEMERAL_STORAGE:
        return a.ephemeral_storage
    if is_scalar_resource_name(resource):
        return a.scalar_resources.get(resource, 0)
    return 0  # a resource the scheduler does not count on nodes


class NodeResourcesAllocatable:
    """Ranks nodes by their weighted allocatable resources, smallest (or largest) first."""

    name = NAME
    sdk_version = "1.0"
    Args = NodeResourcesAllocatableArgs

    def __init__(self, args: NodeResourcesAllocatableArgs | None, handle: Any) -> None:
        args = args or NodeResourcesAllocatableArgs()
        # A map in upstream: a repeated name keeps its last weight, counted once.
        self.weights: dict[str, int] = {r.name: r.weight for r in args.resources}
        self.weight_sum = sum(self.weights.values())
        self.sign = -1 if args.mode == LEAST else 1

    @hookimpl
    def score(self, node_info: NodeInfo) -> int:
        total = sum(
            self.sign * _allocatable(node_info, name) * w for name, w in self.weights.items()
        )
        return go_div(total, self.weight_sum)

    @hookimpl
    def score_nodes(self, nodes: NodeBatch) -> np.ndarray:
        table, rows = nodes.table, nodes.rows
        total = np.zeros(len(nodes), dtype=np.int64)
        for name, w in self.weights.items():
            known = name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)
            column = table.allocatable.get(name) if known else None
            if column is not None:
                total += self.sign * column[rows] * w
        return go_div_array(total, np.full(len(nodes), self.weight_sum, dtype=np.int64))

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        values = scores.values
        if not len(values):
            return
        lowest, highest = int(values.min()), int(values.max())
        old_range = highest - lowest
        if old_range == 0:
            values[:] = MIN_NODE_SCORE
            return
        new_range = MAX_NODE_SCORE - MIN_NODE_SCORE
        values[:] = (values - lowest) * new_range // old_range + MIN_NODE_SCORE
