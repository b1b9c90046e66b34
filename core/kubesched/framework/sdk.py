"""The plugin SDK's version, and whether a plugin built for another SDK version can run."""

from __future__ import annotations

import re

SDK_VERSION = "1.7"
"""The version of the plugin SDK (the ``kubesched`` namespace's ``__all__``), ``MAJOR.MINOR``;
published as ``kubesched.__sdk_version__``. See docs/sdk.md for the compatibility policy."""

_VERSION_RE = re.compile(r"(\d+)\.(\d+)")


def _parse(version: str) -> tuple[int, int] | None:
    m = _VERSION_RE.fullmatch(version.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def sdk_incompatibility(declared: object, current: str = SDK_VERSION) -> str | None:
    """Why a plugin declaring ``sdk_version = declared`` may not work with SDK ``current``,
    or None when it is compatible (or declares nothing).

    Compatible means the same major version and a minor version no newer than
    ``current``'s: a minor release only adds to the SDK, so a plugin built for 1.0 runs on
    1.3, but one built for 1.3 may use what 1.0 lacks, and a new major may have removed
    what any older plugin uses.
    """
    if declared is None:
        return None
    built = _parse(declared) if isinstance(declared, str) else None
    if built is None:
        return f"sdk_version {declared!r} is not MAJOR.MINOR (e.g. {current!r})"
    have = _parse(current)
    assert have is not None, current
    if built[0] != have[0] or built[1] > have[1]:
        return (
            f"built for plugin SDK {declared}, but this kubesched provides SDK {current} "
            f"(compatible: {have[0]}.0 to {current})"
        )
    return None
