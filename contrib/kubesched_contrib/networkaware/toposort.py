"""The AppGroup controller's topology sorting algorithms.

An AppGroup's dependency tree maps each workload that has dependencies to the workloads it
depends on; a workload only depended upon is a leaf, and a workload with neither is not in
the tree (nor, then, in the topology order) — as upstream's controller builds it. Each
algorithm returns the workload names in the order they should be placed, or raises
:class:`CycleError` when the dependencies form a cycle:

* ``KahnSort``: Kahn's algorithm with a stack of the workloads no one depends on any more;
* ``TarjanSort``: depth-first, each workload placed before everything it depends on;
* ``ReverseKahn`` / ``ReverseTarjan``: those orders reversed;
* ``AlternateKahn`` / ``AlternateTarjan``: first, last, second, second to last, ... of those.

Upstream walks Go maps, whose order is random, where the order is not forced; kubesched
walks the workloads by name, so that the same AppGroup always gets the same order (one of
upstream's possible ones).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "ALTERNATE_KAHN",
    "ALTERNATE_TARJAN",
    "KAHN_SORT",
    "REVERSE_KAHN",
    "REVERSE_TARJAN",
    "SORTING_ALGORITHMS",
    "TARJAN_SORT",
    "CycleError",
    "alternate",
    "kahn_sort",
    "normalize_tree",
    "tarjan_sort",
]

KAHN_SORT = "KahnSort"
TARJAN_SORT = "TarjanSort"
REVERSE_KAHN = "ReverseKahn"
REVERSE_TARJAN = "ReverseTarjan"
ALTERNATE_KAHN = "AlternateKahn"
ALTERNATE_TARJAN = "AlternateTarjan"

Tree = Mapping[str, Sequence[str]]


class CycleError(ValueError):
    """The dependencies form a cycle: no topology order exists."""


def normalize_tree(tree: Tree) -> dict[str, list[str]]:
    """``tree`` with every workload named only as a dependency added as a leaf."""
    normalized = {name: list(children) for name, children in tree.items()}
    for children in tree.values():
        for child in children:
            normalized.setdefault(child, [])
    return normalized


def kahn_sort(tree: Tree) -> list[str]:
    """Kahn's algorithm: a workload comes after every workload that depends on it."""
    graph = normalize_tree(tree)
    in_degree = dict.fromkeys(graph, 0)
    for children in graph.values():
        for child in children:
            in_degree[child] += 1
    # A stack, as upstream's: the last pushed is placed first.
    stack = [name for name in sorted(graph, reverse=True) if in_degree[name] == 0]
    placed: list[str] = []
    while stack:
        name = stack.pop()
        for child in graph[name]:
            in_degree[child] -= 1
            if in_degree[child] == 0:
                stack.append(child)
        placed.append(name)
    if len(placed) != len(graph):
        cycle = sorted(name for name, degree in in_degree.items() if degree > 0)
        raise CycleError(f"cycle involving elements: {', '.join(cycle)}")
    return placed


def tarjan_sort(tree: Tree) -> list[str]:
    """Depth-first (Tarjan): a workload comes before every workload it depends on."""
    graph = normalize_tree(tree)
    visiting: set[str] = set()
    done: set[str] = set()
    finished: list[str] = []

    def visit(name: str) -> None:
        if name in visiting:
            raise CycleError(f"found cycle at node: {name}")
        if name in done:
            return
        visiting.add(name)
        for child in graph[name]:
            visit(child)
        visiting.discard(name)
        done.add(name)
        finished.append(name)

    for name in sorted(graph):
        visit(name)
    return finished[::-1]


def alternate(order: Sequence[str]) -> list[str]:
    """First, last, second, second to last, ... of ``order``."""
    out = []
    low, high = 0, len(order) - 1
    while low <= high:
        out.append(order[low])
        if low != high:
            out.append(order[high])
        low, high = low + 1, high - 1
    return out


SORTING_ALGORITHMS: dict[str, Callable[[Tree], list[str]]] = {
    KAHN_SORT: kahn_sort,
    TARJAN_SORT: tarjan_sort,
    REVERSE_KAHN: lambda tree: kahn_sort(tree)[::-1],
    REVERSE_TARJAN: lambda tree: tarjan_sort(tree)[::-1],
    ALTERNATE_KAHN: lambda tree: alternate(kahn_sort(tree)),
    ALTERNATE_TARJAN: lambda tree: alternate(tarjan_sort(tree)),
}
"""Each ``spec.topologySortingAlgorithm`` and its sort; any other name sorts as KahnSort."""
