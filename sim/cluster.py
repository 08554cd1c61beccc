"""Run regression traces on a Dask distributed cluster (the ``[cluster]`` extra).

``nvdla-sim regress ROOT --scheduler tcp://host:8786`` sends one task per
trace to the cluster's workers.  Every worker needs nvdla-sim installed (the
same version) and must see the trace folders at the same paths (a shared
file system): tasks carry paths, not trace contents.  Results come back in
the order of the traces, so the table, JSON and JUnit files are those of a
local run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from .errors import SimError

CONNECT_TIMEOUT = "20s"


def check_address(scheduler: str) -> None:
    """A scheduler address is ``protocol://location`` (tcp://host:port, inproc://...) or
    ``host:port``."""
    protocol, sep, location = scheduler.partition("://")
    if sep:
        valid = protocol.isalnum() and bool(location)
    else:
        host, _, port = scheduler.rpartition(":")
        valid = bool(host) and port.isdigit()
    if not valid:
        raise SimError(f"--scheduler {scheduler}: not a scheduler address (expected "
                       f"tcp://host:port, e.g. tcp://10.0.0.5:8786)")


def _client(scheduler):
    if isinstance(scheduler, str):
        check_address(scheduler)
    try:
        from distributed import Client
    except ImportError:
        raise SimError("--scheduler needs Dask distributed: "
                       "pip install 'nvdla-sim[cluster]'") from None
    if not isinstance(scheduler, str):  # a Cluster object (tests, notebooks)
        return Client(scheduler)
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SimError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from None


def cluster_map(scheduler, function: Callable, items: Iterable) -> Iterator:
    """``function(item)`` for every item on the cluster, yielded in the items' order.

    ``scheduler`` is a scheduler address (``tcp://host:8786``) or a Dask
    cluster object.  Tasks are submitted at once; a task that raises
    re-raises here.  Leaving the generator early (an error, Ctrl-C) cancels
    what is still queued.
    """
    client = _client(scheduler)
    futures = []
    try:
        futures = client.map(function, list(items), pure=False)
        for future in futures:
            yield future.result()
    finally:
        if futures:
            client.cancel(futures)
        client.close()


class ClusterBackend:
    """A regression backend (see :mod:`sim.pool`) on a Dask cluster.

    Yields ``(index, TraceResult)`` in the traces' order.  A trace whose task
    raises (a worker that died) or runs past ``timeout`` seconds is reported
    as that trace's error and the regression goes on.
    """

    def __init__(self, scheduler, run_one: Callable, describe: Callable,
                 timeout: float | None = None):
        self.scheduler = scheduler
        self.run_one = run_one
        self.describe = describe
        self.timeout = timeout
        self._client = None
        self._futures: list = []

    def _error(self, item, message: str):
        from .trace.player import TraceResult, TraceStatus

        name, config = self.describe(item)
        return TraceResult(name, config, TraceStatus.ERROR, message, 0.0)

    def results(self, items: list) -> Iterator:
        self._client = _client(self.scheduler)  # says so when Dask is not installed
        from distributed import TimeoutError as DaskTimeout

        try:
            self._futures = self._client.map(self.run_one, list(items), pure=False)
            for index, (item, future) in enumerate(zip(items, self._futures, strict=True)):
                try:
                    yield index, future.result(timeout=self.timeout)
                except (TimeoutError, DaskTimeout):
                    future.cancel()
                    yield index, self._error(item, f"timed out after {self.timeout:g} s")
                except Exception as exc:  # the task died on its worker
                    yield index, self._error(item, f"worker failed: {type(exc).__name__}: {exc}")
        finally:
            self.close()

    def close(self) -> None:
        if self._client is not None:
            if self._futures:
                self._client.cancel(self._futures)
            self._client.close()
            self._client = None
            self._futures = []
