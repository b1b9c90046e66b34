"""SeccompProfile (``security-profiles-operator.x-k8s.io/v1beta1``): a seccomp profile as a CR.

The kind of the security-profiles-operator (SPO), which installs each profile on the
nodes as ``operator/<namespace>/<name>.json``. Registered as an object kind through the
``kubesched.kinds`` entry point, so manifests with ``kind: SeccompProfile`` load into the
embedded cluster and plugins read them with ``handle.lister.get_object("SeccompProfile",
namespace, name)``.
"""

from __future__ import annotations

from pydantic import Field

from kubesched.api import KubeModel, KubeObject, NullableList

__all__ = ["SECCOMP_PROFILE_KIND", "SeccompProfile", "SeccompProfileSpec", "Syscall"]

SECCOMP_PROFILE_KIND = "SeccompProfile"


class Syscall(KubeModel):
    """``Syscall``: what the profile does (``action``) for these syscall ``names``."""

    names: NullableList[str] = Field(default_factory=list)
    action: str = ""
    errno_ret: int | None = None


class SeccompProfileSpec(KubeModel):
    """``SeccompProfileSpec``: the default action and the per-syscall rules."""

    default_action: str = ""
    architectures: NullableList[str] = Field(default_factory=list)
    syscalls: NullableList[Syscall] = Field(default_factory=list)
    base_profile_name: str | None = None
    disabled: bool = False


class SeccompProfile(KubeObject):
    """``security-profiles-operator.x-k8s.io/v1beta1.SeccompProfile``."""

    api_version: str | None = "security-profiles-operator.x-k8s.io/v1beta1"
    kind: str | None = SECCOMP_PROFILE_KIND
    spec: SeccompProfileSpec = Field(default_factory=SeccompProfileSpec)
