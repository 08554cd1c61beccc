"""Fuzz every parser and decoder a user feeds, in-process; report crashes and errors.

    python tools/fuzz.py --iterations 1000000 [--seed 1] [--shared ../shared]

Inputs are mutated from real material (the bundled traces, ``../shared``'s
NVIDIA and oracle traces and their memory files): windows of ``.cfg`` and
``input.txn`` traces with truncated lines, bad or huge numbers, unknown
registers, missing files, binary garbage; record and hex ``.dat`` files with
unbalanced braces and bad payloads; raw images; plain hex and ``$readmemh``
memory files; ``nvdla-sim gen`` layer specs (TOML, from ``examples/specs``);
``nvdla-sim layout`` command lines with wrong shapes, dtypes and strides; loadables
(NVIDIA's and ``../shared/networks``') with bytes flipped, cut and extended; and, every
``--play-every`` inputs, a whole mutated trace run on the machine (with
small memory limits, so each input's work is bounded).

An input passes when it is accepted or rejected with a ``SimError`` (or a
failed check, or argparse's usage exit 2) whose message is one line.  Anything
else is a crash: its traceback and input are saved under ``--crash-dir``.
The report gives the inputs per target, the crashes and the distinct error
messages (numbers, paths and quoted text replaced by placeholders).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sim.cli import layout as layout_cli  # noqa: E402
from sim.configs import CONFIGS  # noqa: E402
from sim.errors import CheckFailed, SimError  # noqa: E402
from sim.gen.spec import load_spec  # noqa: E402
from sim.limits import MemoryLimits  # noqa: E402
from sim.memfiles import (  # noqa: E402
    format_memory_file,
    load_image,
    read_hex_dat,
    read_memory_file,
    read_record_dat,
)
from sim.trace.cfg import parse_cfg  # noqa: E402
from sim.trace.player import TracePlayer  # noqa: E402
from sim.trace.txn import parse_txn  # noqa: E402

# Work bound for whole-trace runs: no DMA transfer above 1 MiB, 32 MiB per memory.
PLAY_LIMITS = MemoryLimits(access=1 << 20, resident=32 << 20)

NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\b\d+\b")
REGISTER = re.compile(r"NVDLA_\w+\.\w+")
BAD_NUMBERS = ["0xzz", "12ab", "", "-1", "0x", "1e9", "0x" + "f" * 24, str(1 << 31),
               hex(1 << 32), hex((1 << 63) + 1), hex(1 << 64), "0xffffffff", "0xfffffffffff0",
               "0b101", "0o17", "NaN", "0x7fffffff", "-0x80000000", "99999999999999999999"]
GARBAGE = ["\x00", "\xff\xfe", "{", "}", "(", ")", '"', ",", ";", "//", "#", "\t", "\r",
           "\u2028", "\x1b[2J", "{offset:", "payload:", "size:0xffffffff", "ą"]


# -- mutation -------------------------------------------------------------------

def mutate_line(rng: random.Random, line: str) -> str:
    kind = rng.randrange(12)
    if kind == 0 and line:  # truncate
        return line[: rng.randrange(len(line))]
    if kind in (1, 2):  # a number becomes bad or huge
        nums = list(NUMBER.finditer(line))
        if nums:
            m = rng.choice(nums)
            return line[: m.start()] + rng.choice(BAD_NUMBERS) + line[m.end():]
    if kind == 3:  # an unknown or misspelt register
        regs = list(REGISTER.finditer(line))
        if regs:
            m = rng.choice(regs)
            name = list(m.group())
            name[rng.randrange(len(name))] = rng.choice("XYZ_.0")
            return line[: m.start()] + "".join(name) + line[m.end():]
    if kind == 4:  # a missing file
        return re.sub(r'"[^"]*"|\S+\.dat', '"no_such_file.dat"', line, count=1)
    if kind == 5 and line:  # delete characters
        i = rng.randrange(len(line))
        return line[:i] + line[i + rng.randrange(1, 8):]
    if kind == 6:  # insert garbage
        i = rng.randrange(len(line) + 1)
        return line[:i] + rng.choice(GARBAGE) + line[i:]
    if kind == 7:  # binary noise
        return "".join(chr(rng.randrange(256)) for _ in range(rng.randrange(1, 40)))
    if kind == 8:
        return line.swapcase()
    if kind == 9:  # a random value in a register write: exercises unit validation
        nums = list(NUMBER.finditer(line))
        if nums:
            m = nums[-1]
            value = rng.choice([0, 1, rng.getrandbits(rng.choice((4, 8, 13, 16, 32)))])
            return line[: m.start()] + hex(value) + line[m.end():]
    if kind == 10:  # unbalanced braces / quotes
        return line.replace(rng.choice(["{", "}", "(", ")", '"']), "", 1)
    return line


def mutate_text(rng: random.Random, text: str, max_window: int = 40) -> str:
    lines = text.splitlines()
    if lines and max_window:
        start = rng.randrange(len(lines))
        lines = lines[start : start + rng.randrange(1, max_window + 1)]
    if lines and rng.random() < 0.003:  # a long input: one line repeated (quadratic scans)
        lines = lines + [mutate_line(rng, rng.choice(lines))] * rng.randrange(1000, 20000)
    for _ in range(rng.randrange(1, 4)):
        if not lines:
            lines.append("")
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            lines.insert(i, lines[i])
        elif op == 1 and len(lines) > 1:
            del lines[i]
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = mutate_line(rng, lines[i])
    return "\n".join(lines) + rng.choice(["\n", "", "\r\n"])


# -- corpus -----------------------------------------------------------------------

class Corpus:
    def __init__(self, roots: list[Path]):
        files = [p for r in roots if r.is_dir() for p in sorted(r.rglob("*")) if p.is_file()]
        self.cfg = [p for p in files if p.suffix == ".cfg"]
        self.txn = [p for p in files if p.name == "input.txn"]
        small = [p for p in files if p.suffix == ".dat" and p.stat().st_size < 64 << 10]
        self.record_dat = [p for p in small if "offset" in p.read_text(errors="replace")[:200]]
        self.hex_dat = [p for p in small if p not in set(self.record_dat)]
        self.specs = sorted((REPO / "examples" / "specs").glob("*.toml"))
        self.loadables = [p for r in roots if (r.parent / "networks").is_dir()
                          for p in sorted((r.parent / "networks").rglob("*.nvdla"))
                          if p.stat().st_size < 1 << 20] if roots else []
        self.loadables += [p for p in files if p.name.endswith("_fbuf")]
        self.text = {}
        self.data = {}
        self.folders = sorted({p.parent for p in self.cfg + self.txn
                               if self._trace_size(p.parent) < 256 << 10})

    @staticmethod
    def _trace_size(folder: Path) -> int:
        return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())

    def read_bytes(self, path: Path) -> bytes:
        if path not in self.data:
            self.data[path] = path.read_bytes()
        return self.data[path]

    def read(self, path: Path) -> str:
        if path not in self.text:
            self.text[path] = path.read_text(errors="replace")
        return self.text[path]


# -- targets: each runs one input -----------------------------------------------------

def t_cfg(rng, corpus, work):
    path = work / "t.cfg"
    path.write_text(mutate_text(rng, corpus.read(rng.choice(corpus.cfg))), errors="replace")
    parse_cfg(path)


def t_txn(rng, corpus, work):
    path = work / "input.txn"
    path.write_text(mutate_text(rng, corpus.read(rng.choice(corpus.txn))), errors="replace")
    parse_txn(path)


def t_record_dat(rng, corpus, work):
    path = work / "m.dat"
    path.write_text(mutate_text(rng, corpus.read(rng.choice(corpus.record_dat)), 12),
                    errors="replace")
    if rng.random() < 0.5:
        read_record_dat(path)
    else:
        load_image(path)


def t_hex_dat(rng, corpus, work):
    path = work / "h.dat"
    path.write_text(mutate_text(rng, corpus.read(rng.choice(corpus.hex_dat)), 12),
                    errors="replace")
    read_hex_dat(path)


def t_raw(rng, corpus, work):
    path = work / rng.choice(["r.bin", "r.dat"])
    path.write_bytes(rng.randbytes(rng.randrange(0, 512)))
    load_image(path)


def t_words(rng, corpus, work):
    """Plain hex / $readmemh memory files (what diff reads), from our own writer's output."""
    data = rng.randbytes(rng.randrange(0, 96))
    fmt = rng.choice(["hex", "readmemh"])
    text = format_memory_file(rng.choice([0, 0x80000000, 0x40]), data, fmt,
                              rng.choice([1, 2, 4, 8]))
    path = work / rng.choice(["w.hex", "w.mem", "w.txt", "w.vmh"])
    path.write_text(mutate_text(rng, text, 0), errors="replace")
    read_memory_file(path)


def t_gen_spec(rng, corpus, work):
    """``nvdla-sim gen`` layer specs (TOML), mutated from examples/specs: parsed and checked."""
    path = work / "spec.toml"
    path.write_text(mutate_text(rng, corpus.read(rng.choice(corpus.specs)), 0), errors="replace")
    load_spec(path)


LAYOUT_FORMATS = ["feature", "bias", "prelu", "bn", "ew", "weight-dc", "weight-img",
                  "weight-winograd", "dvsdk", "kneron-4w4c8b", "kneron-1w16c8b",
                  "kneron-16w1c8b", "R8", "A8B8G8R8", "Y8___U8V8_N444", "Y10___U10V10_N444",
                  "A2B10G10R10", "R16_F", "nonsense"]
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.float16, np.float32, np.int64, np.bool_]
HUGE_DIMS = [0, -1, 1 << 31, 1 << 20, 8193, 65536]


def _dims(rng, n):
    return [rng.choice(HUGE_DIMS) if rng.random() < 0.1 else rng.randrange(1, 12)
            for _ in range(n)]


def t_layout(rng, corpus, work):
    fmt = rng.choice(LAYOUT_FORMATS)
    action = rng.choice(["pack", "unpack"])
    argv = [action, fmt]
    src = work / ("in.npy" if action == "pack" else rng.choice(["in.bin", "in.dat"]))
    out = work / ("out.bin" if action == "pack" else "out.npy")
    if action == "pack":
        shape = [d for d in _dims(rng, rng.randrange(0, 5)) if 0 < d < 64]
        arr = (np.random.default_rng(rng.getrandbits(32)).integers(-300, 300, shape)
               .astype(rng.choice(DTYPES)))
        if rng.random() < 0.05:
            src.write_bytes(rng.randbytes(64))  # not an .npy file
        else:
            np.save(src, arr)
    else:
        src.write_bytes(rng.randbytes(rng.randrange(0, 4096)))
        argv += ["--shape", ",".join(str(d) for d in _dims(rng, rng.randrange(1, 5)))]
    argv += [str(src), str(out)]
    for opt, values in (("--precision", ["int8", "int16", "fp16", "int4"]),
                        ("--config", list(CONFIGS) + ["nv_huge"]),
                        ("--line-stride", ["0", "1", "32", "0x40", "-32", hex(1 << 40), "zz"]),
                        ("--surface-stride", ["0", "32", "256", hex(1 << 33)]),
                        ("--batch-stride", ["0", "64", "4096"]),
                        ("--x-offset", ["0", "1", "7", "-1", "100000"]),
                        ("--uv-line-stride", ["0", "32", "64"]),
                        ("--post-extension", ["1", "2", "4", "3"]),
                        ("--data-size", ["1", "2", "3"]), ("--components", ["1", "2"])):
        if rng.random() < 0.2:
            argv += [opt, rng.choice(values)]
    for flag in ("--transpose", "--per-element"):
        if rng.random() < 0.1:
            argv.append(flag)
    with contextlib.redirect_stderr(io.StringIO()) as err, \
            contextlib.redirect_stdout(io.StringIO()):
        try:
            code = layout_cli.main(argv)
        except SystemExit as exc:  # argparse usage error
            code = exc.code
    message = err.getvalue().strip()
    if code not in (0, 2):
        raise AssertionError(f"layout exit {code}: {message}")
    if code == 2:
        raise SimError(message.splitlines()[-1] if message else "layout: exit 2, no message")


def t_play(rng, corpus, work):
    folder = rng.choice(corpus.folders)
    config = next((p.name for p in folder.parents if p.name in CONFIGS), "nv_small")
    dest = work / "play" / config / folder.name
    if dest.parent.exists():
        shutil.rmtree(dest.parent)
    dest.mkdir(parents=True)
    for f in folder.iterdir():
        if f.suffix in (".cfg", ".txn"):
            text = corpus.read(f)
            if rng.random() < 0.2:
                text = mutate_text(rng, text, 0)
            (dest / f.name).write_text(mutate_registers(rng, text), errors="replace")
        elif f.is_file():
            (dest / f.name).symlink_to(f)
    trace = dest / "input.txn" if (dest / "input.txn").exists() else next(dest.glob("*.cfg"))
    player = TracePlayer(trace, config, limits=PLAY_LIMITS)
    try:
        player.play()
    finally:
        STATS["layers run"] += player.machine.layers_run


WRITE = re.compile(r"^(\s*(?:reg_write\s*\(\s*[\w.]+\s*,|write_reg\s+\S+)\s*)(0x[0-9a-fA-F]+|\d+)",
                   re.MULTILINE)


def mutate_registers(rng: random.Random, text: str) -> str:
    """Change a few register values: a bit flipped, a field's worth of random bits, 0, ~0."""
    writes = list(WRITE.finditer(text))
    if not writes:
        return text
    out = text
    for m in sorted(rng.sample(writes, min(len(writes), rng.randrange(1, 4))),
                    key=lambda m: -m.start()):
        value = int(m.group(2), 0)
        choice = rng.randrange(4)
        if choice == 0:
            value ^= 1 << rng.randrange(32)
        elif choice == 1:
            value = rng.getrandbits(rng.choice((1, 2, 4, 8, 13, 16, 32)))
        elif choice == 2:
            value = rng.choice((0, 0xFFFFFFFF, 1 << 31, 0x1FFF))
        else:
            value = (value + rng.choice((-32, -1, 1, 8, 32, 4096))) & 0xFFFFFFFF
        out = out[: m.start(2)] + hex(value) + out[m.end(2):]
    return out


STATS = collections.Counter()


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """A flatbuffer damaged as files are: bytes flipped or overwritten, cut, extended."""
    out = bytearray(data)
    for _ in range(rng.randrange(1, 9)):
        kind = rng.randrange(5)
        at = rng.randrange(len(out)) if out else 0
        if kind == 0 and out:
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 1 and out:  # an offset or count made huge, negative or zero
            value = rng.choice([0, 1, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, rng.getrandbits(32)])
            out[at:at + 4] = value.to_bytes(4, "little")
        elif kind == 2:
            del out[rng.randrange(len(out) + 1):]
        elif kind == 3:
            out += rng.randbytes(rng.randrange(64))
        elif out:
            out[at:at + 16] = rng.randbytes(16)
    return bytes(out)


def t_loadable(rng, corpus, work):
    """A damaged loadable: parsed, then its memories placed and its input bound."""
    from sim.machine import Machine
    from sim.runtime.loadable import parse_loadable
    from sim.runtime.runner import input_tensor, place_memories, task_addresses

    data = mutate_bytes(rng, corpus.read_bytes(rng.choice(corpus.loadables)))
    loadable = parse_loadable(data, "fuzz.nvdla")
    machine = Machine(rng.choice(sorted(CONFIGS)), PLAY_LIMITS)
    place = place_memories(loadable, machine, {})
    input_tensor(loadable, 0)
    for task in loadable.tasks:
        task_addresses(loadable, place, task)


TARGETS = {"cfg": t_cfg, "txn": t_txn, "record_dat": t_record_dat, "hex_dat": t_hex_dat,
           "raw": t_raw, "layout": t_layout, "words": t_words, "gen_spec": t_gen_spec,
           "loadables": t_loadable}


# -- driver -------------------------------------------------------------------------

def normalise(message: str, work: Path) -> str:
    text = message.replace(str(work), "WORK")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"0x[0-9a-fA-F]+|\b\d+\b", "N", text)
    text = re.sub(r"\S*(WORK|/)\S*", "PATH", text)
    return text[:160]


class Hang(Exception):
    """An input ran longer than --hang seconds (raised by SIGALRM in the input's code)."""


def _alarm(signum, frame):
    raise Hang("input still running after the --hang limit")


def _bounded(seconds: float, target, *args) -> None:
    """Run one input; SIGALRM stops it (as a Hang) after ``seconds``."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        target(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def run(iterations: int, seed: int, shared: Path, play_every: int, crash_dir: Path,
        progress: bool = True, slow_after: float = 2.0, hang_after: float = 60.0) -> dict:
    corpus = Corpus([REPO / "traces", shared / "nvdla-traces", shared / "oracle-traces"])
    rng = random.Random(seed)
    counts = collections.Counter()
    errors = collections.Counter()
    crashes = []
    slow = []  # (target, input, seconds) of parser inputs slower than slow_after
    multiline = 0
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    names = [n for n in TARGETS if getattr(corpus, n, True)]
    signal.signal(signal.SIGALRM, _alarm)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=shm, prefix="nvdla-fuzz-") as tmp:
        work = Path(tmp)
        for i in range(iterations):
            name = "play" if play_every and i % play_every == play_every - 1 else rng.choice(names)
            target = t_play if name == "play" else TARGETS[name]
            state = rng.getstate()
            counts[name] += 1
            began = time.perf_counter()
            try:
                _bounded(hang_after, target, rng, corpus, work)
                counts["accepted"] += 1
            except (SimError, CheckFailed) as exc:
                msg = str(exc)
                if "\n" in msg.strip():
                    multiline += 1
                errors[normalise(msg, work)] += 1
            except Exception:  # a crash or a hang: keep its traceback and a way to replay it
                crashes.append((name, seed, i, traceback.format_exc()))
                crash_dir.mkdir(parents=True, exist_ok=True)
                case = crash_dir / f"crash_{len(crashes):04d}_{name}"
                shutil.copytree(work, case, dirs_exist_ok=True, symlinks=True)
                (case / "traceback.txt").write_text(traceback.format_exc() + f"\nstate {state}\n")
            took = time.perf_counter() - began
            if took > slow_after and name != "play":  # a parser must stay linear
                slow.append((name, i, took))
                case = crash_dir / f"slow_{len(slow):04d}_{name}"
                shutil.copytree(work, case, dirs_exist_ok=True, symlinks=True)
            if progress and (i + 1) % 10000 == 0:
                rate = (i + 1) / (time.perf_counter() - start)
                print(f"{i + 1} inputs, {len(crashes)} crashes, {len(errors)} distinct errors, "
                      f"{rate:.0f}/s", file=sys.stderr, flush=True)
    return {"inputs": iterations, "seconds": time.perf_counter() - start, "counts": counts,
            "errors": errors, "crashes": crashes, "multiline": multiline, "slow": slow}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=10000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    p.add_argument("--play-every", type=int, default=200,
                   help="run a whole mutated trace on the machine every N inputs (0: never)")
    p.add_argument("--crash-dir", type=Path, default=Path("fuzz-crashes"))
    p.add_argument("--errors", type=int, default=60, help="distinct errors to list")
    p.add_argument("--slow", type=float, default=2.0,
                   help="seconds after which a parser input counts as slow (saved, reported)")
    p.add_argument("--hang", type=float, default=60.0,
                   help="seconds after which any input is stopped and reported as a crash")
    p.add_argument("--memory-limit", type=float, default=6.0,
                   help="GiB of address space this process may use: an input that makes the "
                        "simulator allocate more is a crash (MemoryError), not an OOM kill")
    args = p.parse_args(argv)
    limit = int(args.memory_limit * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    r = run(args.iterations, args.seed, args.shared, args.play_every, args.crash_dir,
            slow_after=args.slow, hang_after=args.hang)
    print(f"inputs {r['inputs']} in {r['seconds']:.0f}s; crashes {len(r['crashes'])}; "
          f"multi-line errors {r['multiline']}; slow parses {len(r['slow'])}; "
          f"distinct errors {len(r['errors'])}")
    print("per target: " + ", ".join(f"{k} {v}" for k, v in sorted(r["counts"].items())))
    print("machine: " + ", ".join(f"{k} {v}" for k, v in sorted(STATS.items())))
    for msg, n in r["errors"].most_common(args.errors):
        print(f"{n:9}  {msg}")
    for name, seed, i, tb in r["crashes"][:20]:
        print(f"CRASH {name} seed {seed} input {i}: {tb.strip().splitlines()[-1]}")
    for name, i, took in r["slow"][:20]:
        print(f"SLOW {name} seed {args.seed} input {i}: {took:.1f}s")
    return 1 if r["crashes"] or r["multiline"] or r["slow"] else 0


if __name__ == "__main__":
    sys.exit(main())
