"""Where a regression's traces run: in this process, or in a pool of worker processes.

A backend takes a list of work items and yields ``(index, TraceResult)`` as
traces finish, in any order; ``close()`` stops whatever still runs (a
regression interrupted by Ctrl-C calls it, then writes the results it has).
``sim.regress`` picks one; other schedulers (a cluster) implement the same
two methods.

:class:`WorkerPool` isolates every trace in a worker process: a trace that
takes longer than ``timeout`` seconds is killed and reported as an error, a
worker that dies (a crash of the interpreter, the OOM killer) is reported as
that trace's error and replaced, and the regression goes on.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator

from .trace.player import TraceResult, TraceStatus


class InProcess:
    """Run traces one after another in this process (no timeout, no isolation)."""

    def __init__(self, run_one: Callable):
        self.run_one = run_one

    def results(self, items: list) -> Iterator[tuple[int, TraceResult]]:
        for index, item in enumerate(items):
            yield index, self.run_one(item)

    def close(self) -> None:
        pass


def _serve(conn, run_one: Callable) -> None:
    """A worker: run the items it is sent, one at a time, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        index, item = job
        conn.send((index, run_one(item)))


class _Worker:
    def __init__(self, ctx, run_one: Callable):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, run_one), daemon=True)
        # the worker starts with SIGINT blocked: a Ctrl-C at the terminal reaches the
        # whole process group, and only the parent decides what it stops
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        child.close()
        self.job = None  # (index, item) running
        self.started = 0.0

    def submit(self, index: int, item) -> None:
        self.job = (index, item)
        self.started = time.monotonic()
        self.conn.send(self.job)

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()
        self.job = None


class WorkerPool:
    """``jobs`` worker processes; a trace over ``timeout`` seconds is killed and reported."""

    def __init__(self, run_one: Callable, describe: Callable, jobs: int = 1,
                 timeout: float | None = None):
        self.run_one = run_one
        self.describe = describe  # item -> (name, config) for results made here
        self.jobs = max(1, jobs)
        self.timeout = timeout
        # multiprocessing only here: its imports (20-35 ms) are a tax on every in-process
        # regression, which never needs them
        import multiprocessing

        self.ctx = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []

    def _error(self, item, message: str, seconds: float) -> TraceResult:
        name, config = self.describe(item)
        return TraceResult(name, config, TraceStatus.ERROR, message, seconds)

    def results(self, items: list) -> Iterator[tuple[int, TraceResult]]:
        try:
            yield from self._results(items)
        finally:
            self.close()

    def _results(self, items: list) -> Iterator[tuple[int, TraceResult]]:
        from multiprocessing.connection import wait

        pending = list(enumerate(items))[::-1]
        self.workers = [_Worker(self.ctx, self.run_one)
                        for _ in range(min(self.jobs, len(items)))]
        for w in self.workers:
            if pending:
                w.submit(*pending.pop())
        while any(w.job for w in self.workers):
            busy = [w for w in self.workers if w.job]
            wait_for = None
            if self.timeout is not None:
                now = time.monotonic()
                wait_for = max(0.0, min(w.started + self.timeout - now for w in busy))
            ready = wait([w.conn for w in busy], wait_for)
            for w in busy:
                index, item = w.job
                elapsed = time.monotonic() - w.started
                if w.conn in ready:
                    try:
                        done, result = w.conn.recv()
                    except (EOFError, OSError):  # the worker died mid-trace
                        w.process.join(5)
                        code = w.process.exitcode
                        result = self._error(item, f"crashed: the worker process died "
                                             f"(exit code {code})", elapsed)
                        done = index
                        w = self._replace(w)
                    yield done, result
                elif self.timeout is not None and elapsed >= self.timeout:
                    w = self._replace(w)
                    yield index, self._error(item, f"timed out after {self.timeout:g} s "
                                             "(--timeout)", elapsed)
                else:
                    continue
                w.job = None
                if pending:
                    w.submit(*pending.pop())

    def _replace(self, worker: _Worker) -> _Worker:
        worker.kill()
        fresh = _Worker(self.ctx, self.run_one)
        self.workers[self.workers.index(worker)] = fresh
        return fresh

    def close(self) -> None:
        """Stop every worker: idle ones are asked to leave, busy ones are killed."""
        for w in self.workers:
            if not w.job:
                try:
                    w.conn.send(None)
                except OSError:
                    pass
                w.process.join(2)
            w.kill()
        self.workers = []
