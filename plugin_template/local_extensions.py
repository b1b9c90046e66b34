"""Jinja filters of the kubesched plugin template (cookiecutter ``_extensions``)."""

from __future__ import annotations

import re

from cookiecutter.utils import simple_filter

EXTENSION_POINTS = (
    "PreEnqueue",
    "PreFilter",
    "Filter",
    "PostFilter",
    "PreScore",
    "Score",
    "Reserve",
    "Permit",
    "PreBind",
    "Bind",
    "PostBind",
)
"""The extension points the template can implement, in the order a pod meets them
(kubesched's ``EXTENSION_POINTS`` without QueueSort: a profile has exactly one)."""


def _words(name: str) -> list[str]:
    # "NodeLabelGate" -> ["Node", "Label", "Gate"]; "GPUFit" -> ["GPU", "Fit"].
    return re.findall(r"[A-Z]+(?=[A-Z][a-z]|\d|\b)|[A-Z]?[a-z]+|[A-Z]+|\d+", name)


def kebab_case(name: str) -> str:
    """``NodeLabelGate`` -> ``node-label-gate``."""
    return "-".join(w.lower() for w in _words(name))


@simple_filter
def kebab(name: str) -> str:
    """The ``kebab`` filter: ``NodeLabelGate`` -> ``node-label-gate``."""
    return kebab_case(name)


@simple_filter
def snake(name: str) -> str:
    """``NodeLabelGate`` -> ``node_label_gate``."""
    return "_".join(w.lower() for w in _words(name))


def parse_extension_points(text: str) -> list[str]:
    """``"score, filter"`` -> ``["Filter", "Score"]`` (canonical names, pod order).

    Raises ``ValueError`` naming an unknown extension point.
    """
    by_lower = {ep.lower(): ep for ep in EXTENSION_POINTS}
    chosen = set()
    for item in re.split(r"[,\s]+", str(text).strip()):
        if not item:
            continue
        if item.lower() not in by_lower:
            raise ValueError(
                f"unknown extension point {item!r}; choose among {', '.join(EXTENSION_POINTS)}"
            )
        chosen.add(by_lower[item.lower()])
    if not chosen:
        raise ValueError("choose at least one extension point")
    return [ep for ep in EXTENSION_POINTS if ep in chosen]


@simple_filter
def extension_points(text: str) -> list[str]:
    """The chosen extension points as a list (see ``parse_extension_points``)."""
    return parse_extension_points(text)
