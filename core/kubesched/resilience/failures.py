"""The failures a resilience sweep plays: every node, every zone, or seeded random draws of
several nodes at once."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from kubesched.api import Node
from kubesched.errors import UserInputError
from kubesched.notices import notice
from kubesched.simulate.report import ZONE_LABEL

__all__ = ["Failure", "every_node", "every_zone", "random_failures"]


@dataclass(frozen=True)
class Failure:
    """Nodes that become unreachable together, and how the report names them."""

    name: str
    """e.g. ``node node-3``, ``zone zone-a``, ``random #2``."""
    nodes: tuple[str, ...]


def every_node(nodes: Iterable[Node]) -> list[Failure]:
    """One failure per node, by node name."""
    return [Failure(f"node {name}", (name,)) for name in sorted(n.name for n in nodes)]


def every_zone(nodes: Iterable[Node], source: str) -> list[Failure]:
    """One failure per ``topology.kubernetes.io/zone`` value, with every node of that zone.
    Nodes without the label are in no zone's failure (with a notice); a cluster where no
    node has it is a ``UserInputError``."""
    zones: dict[str, list[str]] = {}
    unlabelled = []
    for node in nodes:
        zone = node.metadata.labels.get(ZONE_LABEL)
        if zone:
            zones.setdefault(zone, []).append(node.name)
        else:
            unlabelled.append(node.name)
    if not zones:
        raise UserInputError(
            f"no node has the label {ZONE_LABEL}: there is no zone to fail (use --nodes or "
            "--random)",
            source=source,
        )
    if unlabelled:
        notice(
            f"{len(unlabelled)} node(s) have no {ZONE_LABEL} label and are in no zone's "
            f"failure: {', '.join(sorted(unlabelled))}",
            source=source,
        )
    return [Failure(f"zone {z}", tuple(sorted(zones[z]))) for z in sorted(zones)]


def random_failures(
    nodes: Iterable[Node], count: int, size: int, seed: int, source: str
) -> list[Failure]:
    """``count`` draws of ``size`` distinct nodes each, from a generator seeded with
    ``seed``: the same cluster and seed always give the same draws (which may repeat on a
    cluster with few such sets). ``size`` above the number of nodes is a
    ``UserInputError``."""
    names = sorted(n.name for n in nodes)
    if size > len(names):
        raise UserInputError(
            f"--size {size} is more than the cluster's {len(names)} node(s)", source=source
        )
    rng = random.Random(seed)
    return [
        Failure(f"random #{i + 1}", tuple(sorted(rng.sample(names, size)))) for i in range(count)
    ]
