"""Secure serving of ``kubesched run``: certificates (``certs``), delegated authentication
and authorization (``auth``), profiling (``debug``), and the flags that set them
(``options``, kube-scheduler's); the HTTP server itself is ``kubesched.server``."""
