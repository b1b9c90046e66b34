"""The long-running scheduler of ``kubesched run``: informers, leader election, loop, shutdown."""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid

from kubesched.backend.kube.cluster import KubeCluster
from kubesched.backend.kube.writer import WriterProcess
from kubesched.backend.protocol import BackendError
from kubesched.config import EffectiveConfiguration
from kubesched.config.serialize import config_to_dict
from kubesched.framework.events import EventResource
from kubesched.framework.registry import PluginRegistry
from kubesched.leaderelection import LeaderElectionMetrics, LeaderElector
from kubesched.logsafe import safe
from kubesched.metrics import Metrics
from kubesched.scheduler import EventHandlers, Scheduler
from kubesched.server import HealthServer
from kubesched.serving.options import ServingOptions, secure_server

log = logging.getLogger(__name__)

HOUSEKEEPING_PERIOD = 1.0
"""How often assumed pods expire and Permit waits time out (upstream: 1 s cleanup loop)."""

EXIT_LOST_LEASE = 1
"""Exit status when leadership was lost (upstream exits with "leaderelection lost")."""

EXIT_WRITER_EXITED = 1
"""Exit status when the writer process exited while the scheduler ran."""

STARTUP_BACKOFF = (0.8, 30.0)
"""First and longest wait, in seconds, between two start-up attempts to reach the API
server (doubling, with up to 20 % jitter): the informers' relist backoff, as
kube-scheduler's reflectors wait for a server that is not there yet."""


def default_identity() -> str:
    """A replica's leader-election identity: ``hostname_uuid``, as kube-scheduler's."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


_NOT_KINDS = (EventResource.ASSIGNED_POD, EventResource.UNSCHEDULED_POD, EventResource.WILDCARD)
"""Event resources that are no kind to watch (pods split by state; any kind)."""


def cluster_needs(scheduler: Scheduler) -> tuple[set[str], set[str]]:
    """The kinds the profiles' plugins read (their ``reads``) or registered events on, and
    the kinds they write (``writes``): a real cluster's backend watches those kinds and
    checks those permissions, as upstream starts the informers its plugins use."""
    kinds: set[str] = set()
    writes: set[str] = set()
    for fwk in scheduler.frameworks.values():
        for runner in fwk.runners.values():
            kinds.update(getattr(runner.plugin, "reads", ()))
            writes.update(getattr(runner.plugin, "writes", ()))
        kinds.update(
            event.resource.value
            for _, event, _ in fwk.events_to_register()
            if event.resource not in _NOT_KINDS
        )
    return kinds, writes


class SchedulerRunner:
    """Schedules a cluster until ``stop()``: kube-scheduler's ``Run``.

    Informers fill the cache first (``/readyz`` turns ready once they listed; with
    ``delayCacheUntilActive``, only once this replica leads); then, with leader
    election on, only while this replica leads does the loop pop pods, and
    the cluster refuses writes once the lease is not renewed within renewDeadline. On
    ``stop`` it takes no new pod, rejects the pods waiting at Permit, lets the bindings
    in flight finish or roll back, releases the lease and closes the connections.
    """

    def __init__(
        self,
        config: EffectiveConfiguration,
        registry: PluginRegistry,
        cluster: KubeCluster,
        *,
        metrics: Metrics | None = None,
        identity: str | None = None,
        server: ServingOptions | None = None,
        writer: WriterProcess | None = None,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.metrics = metrics or Metrics()
        self.identity = identity or default_identity()
        cluster.events.instance = self.identity
        self.scheduler = Scheduler(
            config,
            registry,
            cluster,
            lister=cluster.lister,
            metrics=self.metrics,
            concurrent_binding=True,
        )
        self.scheduler.record_details = False
        kinds, writes = cluster_needs(self.scheduler)
        unknown = cluster.watch_kinds(sorted(kinds))
        if unknown:
            log.warning("kubesched does not watch %s on a cluster", ", ".join(unknown))
        cluster.writes.update(writes)
        self.handlers = EventHandlers(self.scheduler)
        le = config.config.leader_election
        self.elector: LeaderElector | None = None
        self.leading = threading.Event()
        if le.leader_elect:
            self.elector = LeaderElector(
                cluster,
                le,
                self.identity,
                metrics=LeaderElectionMetrics(self.metrics.registry),
                on_started_leading=self.leading.set,
                on_stopped_leading=self.leading.clear,
            )
            # Fencing: every bind, status patch, delete and event asks this at the moment
            # it is sent, after any wait in the client's rate limiter.
            cluster.client.fence = self.elector.is_leader
        else:
            self.leading.set()
        self.writer = writer
        """The process that sends bindings, status patches and Events, if any (started
        by ``run``, stopped at shutdown)."""
        self.writer_exited = ""
        """Why the writer process went away while running ("" while it has not)."""
        if writer is not None:
            writer.on_exit = self._writer_exited
            if self.elector is not None:
                # Fenced as the elector: from no lease until the first renewal.
                writer.fence_until(None)
                self.elector.on_renewed = writer.fence_until
        self.serving = server
        self.server: HealthServer | None = None
        self.lost_lease = False
        self.startup_error = "not checked yet"
        """Why the start-up check of the API server failed last ("" once it passed)."""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- health ---------------------------------------------------------------------------
    def _api_checked(self) -> tuple[bool, str]:
        if self.startup_error:
            return False, f"waiting for the API server: {self.startup_error}"
        return True, ""

    def _synced(self) -> tuple[bool, str]:
        return (True, "") if self.cluster.synced() else (False, "informers not synced")

    def _election(self) -> tuple[bool, str]:
        if self.elector is None:
            return True, "disabled"
        if self.lost_lease:
            return False, "lost the lease"
        if self.elector.is_leader():
            return True, "leader"
        return True, f"standby (leader: {safe(self.elector.reported_leader or 'unknown')})"

    def _configz(self) -> dict:
        """``/configz``: the configuration this run uses, defaults filled in."""
        return config_to_dict(self.config.config)

    # -- life cycle ---------------------------------------------------------------------
    def listen(self) -> None:
        """Make the HTTPS server of the serving options, if any: its port bound, its
        certificate loaded or made, the client CA looked up (``run`` does it if not done
        before). Raises ``OSError`` when the port is taken."""
        if self.serving is None or self.server is not None:
            return
        self.server = secure_server(
            self.serving,
            self.metrics.registry,
            self.cluster.client,
            ready_checks={
                "api-server": self._api_checked,
                "informer-sync": self._synced,
                "leaderElection": self._election,
                "scheduling": self.scheduler.scheduling_health,
            },
            configz=self._configz,
            profiling=self.config.config.enable_profiling,
        )

    def stop(self) -> None:
        """Ask the runner to stop (signal handlers call this)."""
        self._stop.set()

    def run(self) -> int:
        """Run until ``stop()``, a lost lease or the writer process's exit; the exit
        status (0, or 1 for a lost lease or a writer process gone)."""
        self.listen()
        try:
            if self.writer is not None:
                # Before any other thread starts: the writer process is then forked (see
                # WriterProcess.start).
                self.cluster.use_writer(self.writer)
                try:
                    self.writer.start(self.identity)
                except BackendError as err:
                    log.error("cannot start: %s", safe(err))
                    self.writer_exited = str(err)
                    return EXIT_WRITER_EXITED
            if self.server is not None:
                self.server.start()
                log.info("serving securely on %s:%d", self.server.address, self.server.port)
            if not self._wait_for_api_server():
                return 0
            if self.elector is not None:
                self._spawn("leader-election", self._elect)
            if self.config.config.delay_cache_until_active and self.elector is not None:
                # Upstream's delayCacheUntilActive: a standby keeps no cache (no lists,
                # no watches) until it leads.
                log.info("waiting for leadership before filling the cache")
                while not self.leading.wait(0.2):
                    if self._stop.is_set():
                        return EXIT_LOST_LEASE if self.lost_lease else 0
            self.cluster.start()
            # The informers retry with backoff (and log why) if the API server goes away
            # now; a signal still stops the wait.
            while not self.cluster.wait_for_sync(1.0):
                if self._stop.is_set():
                    return EXIT_LOST_LEASE if self.lost_lease else 0
            self.handlers.connect(self.cluster)
            self.cluster.start_dispatch()
            log.info("informers synced; pid %d, identity %s", os.getpid(), self.identity)
            self._threads += self.scheduler.queue.run(self._stop)
            self._spawn("housekeeping", self._housekeeping)
            self._loop()
        finally:
            self._shutdown()
        if self.writer_exited:
            return EXIT_WRITER_EXITED
        return EXIT_LOST_LEASE if self.lost_lease else 0

    def _writer_exited(self, why: str) -> None:
        """The writer process went away: stop, and exit non-zero."""
        self.writer_exited = why
        self._stop.set()

    def _wait_for_api_server(self) -> bool:
        """Check, until it works or ``stop()``, that the API server answers and allows all
        ``kubesched run`` needs; False if stopped first. Each failure is one log line
        naming the request, the server's answer and where the credentials came from, as
        kube-scheduler keeps retrying (in a Deployment a crash loop would only slow the
        start down once the API server or the credentials are fixed)."""
        le = self.config.config.leader_election
        leases = (le.resource_namespace, le.resource_name) if le.leader_elect else None
        delay, longest = STARTUP_BACKOFF
        attempt = 0
        while not self._stop.is_set():
            attempt += 1
            try:
                self.cluster.check_access(leases=leases)
            except BackendError as err:
                self.startup_error = safe(err)
                wait = delay * (1 + 0.2 * random.random())
                log.error(
                    "cannot start (attempt %d): %s; credentials: %s; retrying in %.1fs",
                    attempt,
                    self.startup_error,
                    safe(self.cluster.client.credentials or "unknown"),
                    wait,
                )
                self._stop.wait(wait)
                delay = min(delay * 2, longest)
                continue
            self.startup_error = ""
            log.info(
                "the API server at %s allows what kubesched needs (credentials: %s)",
                self.cluster.client.host,
                safe(self.cluster.client.credentials or "unknown"),
            )
            return True
        return False

    def _spawn(self, name: str, target: object) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _elect(self) -> None:
        assert self.elector is not None
        if self.elector.run(self._stop):
            log.error("leaderelection lost")
            self.lost_lease = True
            self._stop.set()

    def _housekeeping(self) -> None:
        s = self.scheduler
        while not self._stop.wait(HOUSEKEEPING_PERIOD):
            s.cache.cleanup_assumed_pods(s.clock.now())
            s.expire_waiting_pods()

    def _loop(self) -> None:
        s = self.scheduler
        while not self._stop.is_set():
            if not self.leading.is_set() or (
                self.elector is not None and not self.elector.is_leader()
            ):
                self.leading.wait(0.2)
                continue
            s.schedule_one(block=True, timeout=0.5)

    def _shutdown(self) -> None:
        self._stop.set()
        started = time.monotonic()
        self.scheduler.close()
        # The queued events go out while this replica still leads: once the lease is
        # released, every write, events included, is fenced off.
        self.cluster.events.close()
        if self.elector is not None and not self.lost_lease:
            self.elector.release()
        self.handlers.disconnect()
        self.cluster.close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self.server is not None:
            self.server.stop()
        log.info("stopped in %.2fs", time.monotonic() - started)
