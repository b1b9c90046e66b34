"""``ControlPlane.add_user`` on a running control plane: the new token user authenticates at
once, with its groups, and kube-apiserver is not restarted (its watches stay open)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.backend.protocol import BackendError
from kubesched.testing.envtest import ControlPlane

from .conftest import FAST

pytestmark = pytest.mark.envtest

REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def _who(kubeconfig: Path) -> dict[str, Any]:
    """The user the API server sees behind ``kubeconfig``'s token."""
    client = KubeClient(load_configuration(str(kubeconfig)), FAST)
    try:
        review = client.request(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=REVIEW
        )
        return review["status"]["userInfo"]
    finally:
        client.close()


@pytest.mark.parametrize(
    ("user", "groups"),
    [("envtest-plain", ()), ("envtest-admin", ("system:masters", "team-a"))],
    ids=["no-groups", "groups"],
)
def test_an_added_user_authenticates_without_a_restart(
    control_plane: ControlPlane, user: str, groups: tuple[str, ...]
) -> None:
    pids = control_plane.pids()
    kubeconfig = control_plane.add_user(user, groups)
    assert control_plane.pids() == pids  # kube-apiserver kept running
    seen = _who(kubeconfig)
    assert seen["username"] == user
    assert sorted(seen["groups"]) == sorted([*groups, "system:authenticated"])


def test_a_token_never_added_is_refused(control_plane: ControlPlane, tmp_path: Path) -> None:
    kubeconfig = control_plane.write_kubeconfig(
        tmp_path / "stranger.kubeconfig", control_plane.token("envtest-stranger")
    )
    with pytest.raises(BackendError, match="Unauthorized"):
        _who(kubeconfig)
