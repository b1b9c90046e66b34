"""kubesched: the Kubernetes scheduler as a Python plugin framework, and its plugin SDK.

Plugin authors import what they need from here, Kubernetes objects from
``kubesched.api`` and test helpers from ``kubesched.testing``. Everything in
``__all__`` is the SDK: it follows semantic versioning as ``__sdk_version__`` (see
the compatibility policy in docs/sdk.md); nothing deeper is promised.

The names load on first use, each from its own module (``__init__.pyi`` lists them), so
that a command such as ``kubesched --help`` does not pay for the whole SDK.
"""

from typing import Any

import lazy_loader

__version__ = "0.1.0"

_load, __dir__, _names = lazy_loader.attach_stub(__name__, __file__)
__all__ = [*_names, "__sdk_version__", "__version__"]


def __getattr__(name: str) -> Any:
    """The SDK name ``name``, imported from its module the first time it is asked for."""
    if name == "__sdk_version__":
        from kubesched.framework.sdk import SDK_VERSION

        return SDK_VERSION
    return _load(name)
