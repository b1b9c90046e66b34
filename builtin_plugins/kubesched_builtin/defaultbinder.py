"""DefaultBinder: bind the pod to the chosen node through the cluster client (Bind)."""

from __future__ import annotations

import logging
from typing import Any

from kubesched import Code, PodInfo, Status, hookimpl
from kubesched.api import Pod
from kubesched_builtin.names import DEFAULT_BINDER

NAME = DEFAULT_BINDER

ERR_NO_CLIENT = "no cluster client to bind with"
"""The ERROR reason when the framework was built without a client (e.g. a bare test)."""

log = logging.getLogger(__name__)


class DefaultBinder:
    """Creates the pod's binding (``pods/binding``) with ``handle.client.bind``.

    A failure of the client (conflict: already bound; not found: deleted) is an
    ``ERROR`` status carrying the client's message, as upstream's ``AsStatus(err)``;
    the scheduler then rolls the assumption back and requeues the pod.
    """

    name = NAME

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle

    @hookimpl
    def bind(self, pod: Pod, pod_info: PodInfo, node_name: str) -> Status | None:
        client = getattr(self._handle, "client", None)
        if client is None:
            return Status(Code.ERROR, ERR_NO_CLIENT)
        log.debug("attempting to bind pod %s to node %s", pod_info.key, node_name)
        try:
            client.bind(pod, node_name)
        except Exception as err:
            return Status.from_error(err)
        return None
