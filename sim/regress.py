"""Regression over a tree of traces laid out ``<config>/<test>/``."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from .configs import CONFIGS
from .dram import write_atomically
from .errors import SimError
from .progress import Progress
from .trace.player import TraceResult, run_trace

STATUSES = ("pass", "fail", "error")


def _is_trace_dir(path: Path) -> bool:
    return (path / "input.txn").is_file() or any(path.glob("*.cfg"))


def discover(root: Path) -> list[tuple[str | None, Path]]:
    """(config, trace folder) pairs under ``root`` (a config folder or a tree of them)."""
    root = Path(root)
    if not root.is_dir():
        raise SimError(f"{root}: not a folder")
    items = []
    for config_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if _is_trace_dir(config_dir):  # root is itself one config's folder
            items.append((root.name if root.name in CONFIGS else None, config_dir))
            continue
        for test in sorted(p for p in config_dir.iterdir() if p.is_dir()):
            if _is_trace_dir(test):
                items.append((config_dir.name if config_dir.name in CONFIGS else None, test))
    return items


def _run_one(item) -> TraceResult:
    config, path, override = item
    name = f"{path.parent.name}/{path.name}"
    return run_trace(path, override or config, name=name)


def _results(items, jobs: int, scheduler):
    """TraceResults of ``items`` in order: on a Dask cluster, a process pool or here."""
    if scheduler is not None:
        from .cluster import cluster_map

        yield from cluster_map(scheduler, _run_one, items)
    elif jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            yield from pool.map(_run_one, items)
    else:
        for item in items:
            yield _run_one(item)


def regress(root: Path, jobs: int = 1, json_path=None, junit_path=None, config=None,
            scheduler=None) -> int:
    """Run every trace under ``root``; ``scheduler``: a Dask cluster (sim.cluster)."""
    items = [(cfg, path, config) for cfg, path in discover(root)]
    if not items:
        raise SimError(f"{root}: no traces found (expected <config>/<test>/ folders)")
    results: list[TraceResult] = []
    counts = dict.fromkeys(STATUSES, 0)
    start = time.perf_counter()
    with Progress(len(items)) as bar:
        for result in _results(items, jobs, scheduler):
            results.append(result)
            counts[result.status] += 1
            bar.step(f"{result.status} {result.name} ({result.seconds:.1f}s)",
                     " ".join(f"{k} {counts[k]}" for k in STATUSES))
    for r in results:
        if r.status != "pass":
            print(f"{r.status.upper():5} {r.name}: {r.message}")
    print_table(results, time.perf_counter() - start)
    if json_path:
        write_json(json_path, results)
    if junit_path:
        write_junit(junit_path, results)
    return 0 if counts["fail"] == counts["error"] == 0 else 1


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


def write_json(path, results: list[TraceResult]) -> None:
    doc = {
        "passed": sum(r.status == "pass" for r in results),
        "failed": sum(r.status == "fail" for r in results),
        "errors": sum(r.status == "error" for r in results),
        "traces": [r.as_json() for r in results],
    }
    write_atomically(path, json.dumps(doc, indent=1) + "\n")


def write_junit(path, results: list[TraceResult]) -> None:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    failures = sum(r.status == "fail" for r in results)
    errors = sum(r.status == "error" for r in results)
    total = sum(r.seconds for r in results)
    lines.append(f'<testsuite name="nvdla-sim" tests="{len(results)}" failures="{failures}" '
                 f'errors="{errors}" time="{total:.3f}">')
    for r in results:
        head = (f'  <testcase classname={quoteattr(r.config)} name={quoteattr(r.name)} '
                f'time="{r.seconds:.3f}"')
        if r.status == "pass":
            lines.append(head + "/>")
        else:
            tag = "failure" if r.status == "fail" else "error"
            lines.append(head + ">")
            lines.append(f"    <{tag} message={quoteattr(r.message)}>{escape(r.message)}</{tag}>")
            lines.append("  </testcase>")
    lines.append("</testsuite>")
    write_atomically(path, "\n".join(lines) + "\n")
