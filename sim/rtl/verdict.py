"""A trace on the RTL, start to verdict: replay, plan, run the bench, judge each check.

A check whose region differs from the trace's expectation is localised as
``nvdla-sim diff`` does it: the dumped region is compared with the
simulator's bytes, and each differing byte named by the layer, unit and
element that wrote it.
"""

from __future__ import annotations

import shutil
import tempfile
import zlib
from dataclasses import field
from pathlib import Path

import numpy as np

from ..errors import SimError
from ..records import record
from ..trace.vocabulary import bench_problems
from .bench import BenchRun, check_bench, run_bench
from .plan import Check, parse_trace, plan_trace

PASS, FAIL, NOT_REACHED = "pass", "FAIL", "not reached"
CDMA_HANG_HINT = (
    "a testbench that drives tmc2slcg_disable_clock_gating = 0 (as NVIDIA's nvdla.cpp does) "
    "hangs here when an earlier convolution's weights were released after its CDMA layer "
    "ended: the CDMA counts the weight entries in CBUF on its gated clock and misses those "
    "releases, then refuses weights once the count passes its weight banks; drive it to 1 "
    "(see the README, 'Run it on your RTL')")


@record(frozen=False)
class CheckVerdict:
    check: Check
    verdict: str
    detail: str = ""


@record(frozen=False)
class RtlReport:
    trace: Path
    config: str
    run: BenchRun
    verdicts: list[CheckVerdict] = field(default_factory=list)
    diff: object = None  # sim.diff.DiffReport of the failing regions, or None
    notes: list[str] = field(default_factory=list)

    @property
    def memory_failed(self) -> bool:
        return any(v.verdict != PASS for v in self.verdicts) or not self.run.finished

    @property
    def passed(self) -> bool:
        return not self.memory_failed and not self.run.read_failures

    def lines(self) -> list[str]:
        run = self.run
        out = [f"{self.trace}: {len(self.verdicts)} memory checks, {run.waits_done} interrupts "
               f"awaited, {run.cycles} cycles, {run.seconds:.1f} s on the testbench"]
        for v in self.verdicts:
            c = v.check
            out.append(f"  {v.verdict:11} {c.where}  {c.addr:#x}+{c.size:#x}"
                       + (f"  {v.detail}" if v.detail else ""))
        for f in run.read_failures:
            out.append(f"  FAIL        {f.where}  register read: {f.what}, read {f.got:#x}")
        if run.stopped_waiting:
            out.append(f"  HANG        the RTL never raised {run.stopped_waiting}")
        elif not run.finished:
            out.append(f"  ERROR       the testbench stopped without a verdict "
                       f"(exit {run.exit_code}): {' | '.join(run.tail[-3:])}")
        out += [f"  note: {n}" for n in self.notes]
        if self.diff is not None:
            out += self.diff.summary_lines(more="see the dumps")
        out.append("PASS" if self.passed else "FAIL")
        return out


def run_on_rtl(trace, bench, config: str | None = None, keep: Path | None = None,
               idle: float = 60.0, timeout: float | None = None,
               full_log: bool = False) -> RtlReport:
    """Run ``trace`` on the testbench ``bench``; its files go to ``keep`` (kept) or a
    temporary folder (removed)."""
    from ..diff.simulate import simulate

    bench = check_bench(bench)
    sim = simulate(trace, config)  # validates the trace; the bytes each check should see
    plan = plan_trace(sim.trace_file, sim.config, sim.regions)
    refused = []
    if sim.trace_file.suffix == ".cfg":
        refused = bench_problems(parse_trace(sim.trace_file))
    folder = _work_folder(keep)
    report = None
    try:
        run = run_bench(bench, plan, folder, idle, timeout, full_log)
        report = RtlReport(sim.trace_file, sim.config, run)
        report.notes += [f"the simulator itself: {n}" for n in sim.notes]
        report.notes += [f"NVIDIA's trace tools would refuse {p}" for p in refused[:3]]
        if len(refused) > 3:
            report.notes.append(f"... and {len(refused) - 3} more constructs they would refuse")
        failing = _judge(report, plan.checks, folder)
        if failing:
            report.diff = _localise(sim, failing)
        if run.stopped_waiting.startswith("CDMA"):
            report.notes.append(CDMA_HANG_HINT)
        if keep is None and not report.passed:  # the evidence stays for the user
            report.notes.append(f"the testbench's files (trace.bin, bench.log, the dumped "
                                f"regions) are kept in {folder}")
        return report
    finally:
        if keep is None and (report is None or report.passed):
            shutil.rmtree(folder, ignore_errors=True)


def _work_folder(keep: Path | None) -> Path:
    if keep is None:
        return Path(tempfile.mkdtemp(prefix="nvdla-rtl-"))
    keep = Path(keep)
    if keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
        raise SimError(f"{keep}: exists and is not an empty folder (nothing of yours is "
                       f"overwritten)")
    keep.mkdir(parents=True, exist_ok=True)
    return keep


def _judge(report: RtlReport, checks: list[Check], folder: Path) -> list[tuple]:
    """Each check's verdict from its dump; (check, dumped bytes) of the failing ones."""
    failing = []
    dumped = set(report.run.dumped)
    for check in checks:
        path = folder / check.file
        if check.file not in dumped or not path.is_file():
            report.verdicts.append(CheckVerdict(check, NOT_REACHED))
            continue
        data = path.read_bytes()
        if check.passes(data):
            report.verdicts.append(CheckVerdict(check, PASS))
            continue
        if check.crc is not None:
            detail = f"CRC {zlib.crc32(data) & 0xFFFFFFFF:#010x}, expected {check.crc:#010x}"
        else:
            first = next(i for i in range(check.size) if data[i] != check.golden[i])
            detail = (f"differs from the golden file at {check.addr + first:#x}: "
                      f"expected {check.golden[first]:#04x}, got {data[first]:#04x}")
        if data == check.region.simulated:
            detail += "; the simulator computes the same bytes (the trace's expectation differs)"
        report.verdicts.append(CheckVerdict(check, FAIL, detail))
        failing.append((check, data))
    return failing


def _localise(sim, failing: list[tuple]):
    """The differences of the failing regions, each byte named by its layer and element."""
    from ..diff.localise import build_cubes, compare_region
    from ..diff.report import DiffReport

    cubes = build_cubes(sim.writes)
    diffs = []
    for check, data in failing:
        actual = np.frombuffer(data, dtype=np.uint8)
        diffs.append(compare_region(check.region, check.region.simulated, actual,
                                    np.ones(check.size, dtype=bool), sim.writes, cubes))
    report = DiffReport(sim, diffs, None)
    return None if report.identical else report
