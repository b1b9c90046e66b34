"""Calling plugin hook implementations fast, with whatever subset of parameters they take."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any

from kubesched.framework import hookspecs


@cache
def spec_params(hook: str) -> tuple[str, ...]:
    """The parameter names of hookspec ``hook``, in order."""
    return tuple(inspect.signature(getattr(hookspecs, hook)).parameters)


def impl_params(method: Callable[..., Any]) -> tuple[str, ...]:
    """The parameters a bound hook implementation requires (pluggy's rule: those
    without a default value)."""
    return tuple(
        name
        for name, p in inspect.signature(method).parameters.items()
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY, p.KEYWORD_ONLY)
    )


def positional_caller(method: Callable[..., Any], hook: str) -> Callable[..., Any]:
    """A callable taking all of ``hook``'s parameters positionally, in spec order, that
    calls ``method`` with the subset it declares.

    The framework calls plugins on the hot path; when an implementation takes every
    parameter in order (the common case) the bound method itself is returned, so no
    wrapper costs a call.
    """
    full = spec_params(hook)
    wanted = impl_params(method)
    unknown = [p for p in wanted if p not in full]
    if unknown:
        raise TypeError(f"hook {hook!r} has no parameter(s) {unknown}; it takes {list(full)}")
    if wanted == full:
        return method
    positions = tuple(full.index(p) for p in wanted)
    if not positions:
        return lambda *args: method()
    if len(positions) == 1:
        (a,) = positions
        return lambda *args: method(args[a])
    if len(positions) == 2:
        a, b = positions
        return lambda *args: method(args[a], args[b])
    return lambda *args: method(*[args[i] for i in positions])
