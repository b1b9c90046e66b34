"""Delegated authentication (client certificates, TokenReview) and authorization
(SubjectAccessReview) of the secure server's requests, as kube-scheduler's."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.backend.kube.client import KubeClient
from kubesched.backend.protocol import BackendError, NotFoundError

log = logging.getLogger(__name__)

AUTHENTICATED = "system:authenticated"
ANONYMOUS_GROUP = "system:unauthenticated"

AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
"""Where the API server publishes its client CA for delegated authentication."""

REVIEW_TIMEOUT = 10.0
"""Seconds a TokenReview or SubjectAccessReview may take (upstream's webhook timeout: 10 s)."""


class AuthenticationError(Exception):
    """Credentials were presented and refused (or could not be checked): 401."""


class AuthorizationError(Exception):
    """The authorizer could not decide (the API server failed to answer): 500."""


@dataclass(frozen=True)
class UserInfo:
    """Who sent a request, as a TokenReview or a client certificate says."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())


ANONYMOUS = UserInfo("system:anonymous", groups=(ANONYMOUS_GROUP,))
"""A request without credentials (upstream enables anonymous delegated authentication)."""


class TTLCache:
    """Answers kept for a time, at most ``size`` of them (the oldest go first)."""

    def __init__(self, size: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.clock = clock
        self._items: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        """The live answer for ``key``, or None."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            if found[0] <= self.clock():
                del self._items[key]
                return None
            return found[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (a ttl of 0 keeps nothing)."""
        if ttl <= 0:
            return
        with self._lock:
            self._items[key] = (self.clock() + ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


def user_from_certificate(peer: dict[str, Any]) -> UserInfo | None:
    """The user of a verified client certificate (``ssl.getpeercert()``): its common
    name, its organizations as groups, as upstream's x509 authenticator."""
    name, groups = None, []
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return UserInfo(name, groups=(*groups, AUTHENTICATED))


class Authenticator:
    """Who a request is: a verified client certificate's subject, a bearer token's user
    by TokenReview (cached ``cache_ttl`` seconds, refusals too), else anonymous.

    Without a ``client`` no token is reviewed and every token request is anonymous, as
    kube-scheduler does without an authentication kubeconfig.
    """

    def __init__(
        self,
        client: KubeClient | None,
        *,
        cache_ttl: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.cache_ttl = cache_ttl
        self.cache = TTLCache(clock=clock)

    def authenticate(self, authorization: str | None, peer: dict[str, Any] | None) -> UserInfo:
        """The user of a request from its ``Authorization`` header and its verified peer
        certificate. Raises ``AuthenticationError`` for a refused token."""
        if peer:
            user = user_from_certificate(peer)
            if user is not None:
                return user
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or self.client is None:
            return ANONYMOUS
        key = hashlib.sha256(token.encode()).digest()
        cached = self.cache.get(key)
        if cached is None:
            cached = self._review(token)
            self.cache.put(key, cached, self.cache_ttl)
        if isinstance(cached, str):
            raise AuthenticationError(cached)
        return cached

    def _review(self, token: str) -> UserInfo | str:
        """The token's user, or why it is refused (a string, cached as well)."""
        assert self.client is not None
        try:
            review = self.client.request(
                "POST",
                "/apis/authentication.k8s.io/v1/tokenreviews",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenReview",
                    "spec": {"token": token},
                },
                timeout=REVIEW_TIMEOUT,
            )
        except BackendError as err:
            # Not cached: the next request asks again.
            raise AuthenticationError(f"TokenReview failed: {err}") from err
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return status.get("error") or "token not authenticated"
        user = status.get("user") or {}
        groups = tuple(user.get("groups") or ())
        if AUTHENTICATED not in groups:
            groups = (*groups, AUTHENTICATED)
        extra = tuple(sorted((k, tuple(v)) for k, v in (user.get("extra") or {}).items()))
        return UserInfo(user.get("username", ""), user.get("uid", ""), groups, extra)


def path_allowed(path: str, patterns: Sequence[str]) -> bool:
    """Whether ``path`` is one of ``patterns`` (exact, or a prefix ending in ``*``), as
    upstream's ``--authorization-always-allow-paths``."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if path.startswith(pattern[:-1]):
                return True
        elif path == pattern:
            return True
    return False


class Authorizer:
    """May ``user`` ``verb`` the non-resource ``path``: the always-allowed paths, else a
    SubjectAccessReview (allowed answers cached ``authorized_ttl`` seconds, denied ones
    ``unauthorized_ttl``). Without a ``client`` every other path is forbidden, as
    kube-scheduler does without an authorization kubeconfig."""

    def __init__(
        self,
        client: KubeClient | None,
        *,
        always_allow_paths: Sequence[str] = ("/healthz", "/readyz", "/livez"),
        authorized_ttl: float = 10.0,
        unauthorized_ttl: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.always_allow_paths = tuple(always_allow_paths)
        self.authorized_ttl = authorized_ttl
        self.unauthorized_ttl = unauthorized_ttl
        self.cache = TTLCache(clock=clock)

    def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason). Raises ``AuthorizationError`` when the API server cannot
        answer."""
        if path_allowed(path, self.always_allow_paths):
            return True, ""
        if self.client is None:
            return False, ""
        key = (user, verb, path)
        cached = self.cache.get(key)
        if cached is None:
            cached = self._review(user, verb, path)
            ttl = self.authorized_ttl if cached[0] else self.unauthorized_ttl
            self.cache.put(key, cached, ttl)
        return cached

    def _review(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        assert self.client is not None
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        try:
            review = self.client.request(
                "POST",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                body={
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": spec,
                },
                timeout=REVIEW_TIMEOUT,
            )
        except BackendError as err:
            raise AuthorizationError(f"SubjectAccessReview failed: {err}") from err
        status = review.get("status") or {}
        return bool(status.get("allowed")), status.get("reason") or ""


def lookup_client_ca(client: KubeClient, tolerate_failure: bool) -> str | None:
    """The client CA the API server publishes in ``kube-system/extension-apiserver-
    authentication`` (key ``client-ca-file``), as kube-scheduler looks it up when not
    given ``--client-ca-file``. A failure is logged and tolerated when
    ``tolerate_failure``; otherwise raised as ``BackendError``."""
    try:
        data = (client.request("GET", AUTH_CONFIGMAP, timeout=REVIEW_TIMEOUT) or {}).get("data")
    except NotFoundError:
        log.warning(
            "configmap/extension-apiserver-authentication in kube-system not found, "
            "so client certificate authentication won't work"
        )
        return None
    except BackendError as err:
        if not tolerate_failure:
            raise BackendError(
                f"unable to load configmap based client CA file: {err}", err.code
            ) from err
        log.warning(
            "Unable to get configmap/extension-apiserver-authentication in kube-system "
            "(%s). Usually fixed by 'kubectl create rolebinding -n kube-system ROLEBINDING_NAME "
            "--role=extension-apiserver-authentication-reader "
            "--serviceaccount=YOUR_NS:YOUR_SA'; continuing without client certificate "
            "authentication",
            err,
        )
        return None
    return (data or {}).get("client-ca-file") or None
