"""User-facing errors: what was wrong, in which file, which object and which field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import ValidationError


def format_loc(loc: Iterable[str | int]) -> str:
    """Render a pydantic location tuple as a Kubernetes-style field path.

    ``("profiles", 1, "pluginConfig", 0, "args", "scoringStrategy")`` becomes
    ``profiles[1].pluginConfig[0].args.scoringStrategy``.
    """
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif path:
            path += f".{part}"
        else:
            path = str(part)
    return path


class FieldProblem:
    """One problem at one field path."""

    __slots__ = ("message", "path")

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def __repr__(self) -> str:
        return f"FieldProblem({self.path!r}, {self.message!r})"


def problems_from_validation_error(
    err: ValidationError, prefix: Sequence[str | int] = ()
) -> list[FieldProblem]:
    """Turn a pydantic ``ValidationError`` into field problems, paths prefixed by ``prefix``."""
    problems = []
    for e in err.errors(include_url=False):
        # pydantic puts the validator kind (e.g. "function-after[...]") into loc for
        # some validators; those are not field names.
        loc = [p for p in e["loc"] if not (isinstance(p, str) and "[" in p and "]" in p)]
        message = e["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        elif message.startswith("Assertion failed, "):
            message = message[len("Assertion failed, ") :]
        problems.append(FieldProblem(format_loc([*prefix, *loc]), message))
    return problems


class KubeschedError(Exception):
    """Base class of the errors kubesched reports to a user without a traceback."""


class UserInputError(KubeschedError):
    """A manifest, configuration or argument that is wrong.

    ``source`` names the file (or ``<stdin>``), ``obj`` the object inside it
    (``Pod default/web-0`` or ``profiles[0]``), and ``problems`` each field path
    with what is wrong there.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        obj: str | None = None,
        problems: Sequence[FieldProblem] = (),
    ) -> None:
        self.message = message
        self.source = source
        self.obj = obj
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(p for p in (self.source, self.obj) if p)
        head = f"{where}: {self.message}" if where else self.message
        if not self.problems:
            return head
        if len(self.problems) == 1:
            return f"{head}: {self.problems[0]}"
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)
