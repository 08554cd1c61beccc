"""Regression over a tree of traces laid out ``<config>/<test>/``."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .configs import CONFIGS
from .errors import SimError
from .files import write_atomically
from .progress import Progress
from .trace.player import TraceResult, TraceStatus, run_trace

STATUSES = tuple(TraceStatus)  # pass, fail, error
SAVE_EVERY = 1.0  # seconds between rewrites of the JSON/JUnit files while running


def _lists_trace(folder: str, names: list[str], files: list[str]) -> bool:
    """Whether a folder holds a trace (a file ``input.txn``, or anything named ``*.cfg``),
    from its entries' names ``names`` (files and folders) and ``files`` (those not folders)
    the walk has listed: only an ``input.txn`` among the files is asked about (is it a
    file, not a broken link)."""
    if "input.txn" in files and os.path.isfile(os.path.join(folder, "input.txn")):
        return True
    return any(name.endswith(".cfg") for name in names)


def _config_within(parts: list[str], root_name: str) -> str | None:
    """The nearest configuration named by the folders above a trace below the root (its
    path's ``parts`` below it), or by the root itself."""
    above = [*reversed(parts[:-1]), root_name]
    return next((name for name in above if name in CONFIGS), None)


def _walk(folder: str, real: str, seen: set, found: list) -> None:
    """``os.walk(folder, followlinks=True)`` as :func:`discover` walks it (a real folder
    once, hidden folders left out, the others in name order), appending (folder as the walk
    joins it, its entries' names, its files) of each folder it meets to ``found``.
    ``real`` is ``os.path.realpath(folder)``: a folder that is no link has its parent's
    real path and its name, so only links are resolved (realpath's lstat of every part
    of every folder cost as much as the rest of the walk)."""
    if real in seen:
        return
    seen.add(real)
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:  # as os.walk passes over a folder it cannot list
        return
    names, files, dirs = [], [], []
    for entry in entries:
        names.append(entry.name)
        try:
            is_dir = entry.is_dir()  # a link's target (os.walk's test)
        except OSError:
            is_dir = False
        if is_dir:
            if entry.name[:1] != ".":
                dirs.append(entry)
        else:
            files.append(entry.name)
    found.append((folder, names, files))
    for entry in sorted(dirs, key=lambda e: e.name):
        path = os.path.join(folder, entry.name)
        try:
            link = entry.is_symlink()
        except OSError:
            link = True  # realpath tells
        _walk(path, os.path.realpath(path) if link else os.path.join(real, entry.name),
              seen, found)


def _discover(root: Path) -> list[tuple[str | None, Path, list[str]]]:
    """:func:`discover`'s (config, trace folder) pairs, each with the names of the
    folder's entries as the walk listed them (the trace player need not list it again)."""
    root = Path(root)
    if not root.is_dir():
        raise SimError(f"{root}: not a folder")
    top = os.fspath(root)
    found: list = []
    _walk(top, os.path.realpath(top), set(), found)
    items = []
    for folder, names, files in found[1:]:  # the root itself is no trace
        if _lists_trace(folder, names, files):  # its parts below the root, as joined
            parts = folder[len(top):].strip(os.sep).split(os.sep)
            items.append((_config_within(parts, root.name), Path(folder), names))
    return sorted(items, key=lambda item: str(item[1]))


def discover(root: Path) -> list[tuple[str | None, Path]]:
    """(config, trace folder) pairs anywhere under ``root``.

    The configuration is the nearest folder above a trace (or ``root`` itself)
    named after one; None otherwise (the trace's header may name it, else the
    trace is reported as an error, and the others still run).  A folder is a
    trace's when it holds a file ``input.txn`` or anything named ``*.cfg``, as the
    walk lists it (no second listing of every folder).  Linked folders are
    followed, each real folder walked once.
    """
    return [(config, path) for config, path, _ in _discover(root)]


def trace_items(root: Path, config: str | None = None) -> list[tuple]:
    """The work items of a regression over ``root`` (:func:`run_item` runs one): each
    trace's config, folder, ``config`` overriding it (None: none), name below the root,
    and the names of its folder's entries."""
    return [(cfg, path, config, path.relative_to(root).as_posix(), names)
            for cfg, path, names in _discover(root)]


def run_item(item) -> TraceResult:
    """Run one of :func:`trace_items`' items, as a regression does."""
    config, path, override, name, names = item
    return run_trace(path, override or config, name=name, names=names)




def _describe(item) -> tuple[str, str]:
    config, path, override, name, _ = item
    return name, override or config or "?"


def make_backend(jobs: int = 1, timeout: float | None = None, scheduler=None):
    """A Dask cluster when ``scheduler`` is given; in this process when serial without a
    timeout; else a pool of worker processes."""
    if scheduler is not None:
        from .cluster import ClusterBackend

        return ClusterBackend(scheduler, run_item, _describe, timeout)
    from .pool import InProcess, WorkerPool  # multiprocessing: only when regress runs

    if jobs <= 1 and timeout is None:
        return InProcess(run_item)
    return WorkerPool(run_item, _describe, jobs, timeout)


def regress(root: Path, jobs: int = 1, json_path=None, junit_path=None, config=None,
            timeout: float | None = None, scheduler=None, backend=None) -> int:
    """Run every trace under ``root``; 0 all pass, 1 otherwise, 130 interrupted.

    ``scheduler``: a Dask scheduler address or cluster (:mod:`sim.cluster`).

    The JSON and JUnit files are rewritten (atomically) as traces finish, so
    an interrupted or killed regression leaves the results it had.
    """
    items = trace_items(root, config)
    if not items:
        raise SimError(f"{root}: no traces found (expected <config>/<test>/ folders)")
    if timeout is not None and timeout <= 0:
        raise SimError(f"--timeout {timeout:g}: must be a positive number of seconds")
    backend = backend or make_backend(jobs, timeout, scheduler)
    done: dict[int, TraceResult] = {}
    counts = dict.fromkeys(STATUSES, 0)
    start = time.perf_counter()
    last_save = start - SAVE_EVERY  # the first result is saved at once
    interrupted = False

    def save(final: bool) -> None:
        ordered = [done[i] for i in sorted(done)]
        if json_path:
            write_json(json_path, ordered, complete=final and not interrupted)
        if junit_path:
            write_junit(junit_path, ordered)

    with Progress(len(items)) as bar:
        try:
            for index, result in backend.results(items):
                done[index] = result
                counts[result.status] += 1
                bar.step(f"{result.status} {result.name} ({result.seconds:.1f}s)",
                         " ".join(f"{k} {counts[k]}" for k in STATUSES))
                if time.perf_counter() - last_save > SAVE_EVERY:
                    save(False)
                    last_save = time.perf_counter()
        except KeyboardInterrupt:
            interrupted = True
            backend.close()
    results = [done[i] for i in sorted(done)]
    for r in results:
        if r.status != TraceStatus.PASS:
            print(f"{r.status.upper():5} {r.name}: {r.message}")
    print_table(results, time.perf_counter() - start)
    save(True)
    if interrupted:
        print(f"interrupted: {len(results)} of {len(items)} traces ran", file=sys.stderr)
        return 130
    return 0 if counts[TraceStatus.FAIL] == counts[TraceStatus.ERROR] == 0 else 1


def print_table(results: list[TraceResult], seconds: float, out=None) -> None:
    out = out or sys.stdout
    configs = sorted({r.config for r in results})
    print(f"\n{'config':24} {'pass':>6} {'fail':>6} {'error':>6}", file=out)
    for cfg in configs:
        sub = [r for r in results if r.config == cfg]
        row = [sum(r.status == s for r in sub) for s in STATUSES]
        print(f"{cfg:24} {row[0]:6} {row[1]:6} {row[2]:6}", file=out)
    total = [sum(r.status == s for r in results) for s in STATUSES]
    print(f"{'total':24} {total[0]:6} {total[1]:6} {total[2]:6}   ({seconds:.1f}s)", file=out)


def write_json(path, results: list[TraceResult], complete: bool = True) -> None:
    doc = {
        "complete": complete,
        "passed": sum(r.status == TraceStatus.PASS for r in results),
        "failed": sum(r.status == TraceStatus.FAIL for r in results),
        "errors": sum(r.status == TraceStatus.ERROR for r in results),
        "traces": [r.as_json() for r in results],
    }
    write_atomically(path, json.dumps(doc, indent=1) + "\n")


def write_junit(path, results: list[TraceResult]) -> None:
    from xml.sax.saxutils import escape, quoteattr  # pulls in urllib: only for JUnit

    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    failures = sum(r.status == TraceStatus.FAIL for r in results)
    errors = sum(r.status == TraceStatus.ERROR for r in results)
    total = sum(r.seconds for r in results)
    lines.append(f'<testsuite name="nvdla-sim" tests="{len(results)}" failures="{failures}" '
                 f'errors="{errors}" time="{total:.3f}">')
    for r in results:
        head = (f'  <testcase classname={quoteattr(r.config)} name={quoteattr(r.name)} '
                f'time="{r.seconds:.3f}"')
        if r.status == TraceStatus.PASS:
            lines.append(head + "/>")
        else:
            tag = "failure" if r.status == TraceStatus.FAIL else "error"
            lines.append(head + ">")
            lines.append(f"    <{tag} message={quoteattr(r.message)}>{escape(r.message)}</{tag}>")
            lines.append("  </testcase>")
    lines.append("</testsuite>")
    write_atomically(path, "\n".join(lines) + "\n")
