"""The numba cache folder follows the package sources; numba arrives only when a kernel runs."""

import importlib.util
import subprocess
import sys

import pytest

from sim import jit


def test_cache_folder_is_keyed_by_the_sources():
    numba = jit._import_numba()
    digest = jit.source_digest()
    assert len(digest) == 16
    assert numba.config.CACHE_DIR.endswith(f"numba-{digest}")


def test_kernels_calling_kernels_compile_once_numba_arrives():
    """Placeholders are rebound everywhere, also in modules that imported them by name."""
    probe = """
import sys
import numpy as np
from sim.num.fpcore import fp_add            # a placeholder, imported by name
from sim.num.mac import add32                # an intrinsic, imported by name
assert "numba" not in sys.modules
assert int(fp_add(0x3C00, 0x3C00, 5, 10)) == 0x4000   # first call: numba comes in
import sim.num.fpcore as core
assert fp_add is core.fp_add and type(fp_add).__name__ == "CPUDispatcher"  # rebound here too
import sim.num.mac as mac
from sim.jit import Kernel
assert not isinstance(mac.add32, Kernel) and mac.add32 is sys.modules["sim.num.word32"].add32
"""
    subprocess.run([sys.executable, "-c", probe], check=True)


def test_integer_layers_never_import_numba():
    """An int8 convolution with its SDP, and the fp16 SDP, run in numpy only."""
    probe = """
import sys
from pathlib import Path
from sim.cli.run import bundled_traces
from sim.trace.player import run_trace
for name in ("nv_small/conv_6x7x6_3x3x6x10_pad_int8", "nv_full/sdp_3x5x12_mul_relu_fp16"):
    config, trace = name.split("/")
    result = run_trace(bundled_traces() / config / trace, config)
    assert result.status == "pass", (name, result.message)
assert "numba" not in sys.modules, "numba was imported"
"""
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=jit.Path(jit.__file__).parents[1])


def test_digest_changes_with_a_source(tmp_path, monkeypatch):
    pkg = tmp_path / "sim"
    pkg.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    fake = pkg / "jit.py"
    fake.write_text("")
    monkeypatch.setattr(jit, "__file__", str(fake))
    before = jit.source_digest()
    (pkg / "a.py").write_text("x = 2\n")
    assert jit.source_digest() != before


@pytest.mark.parametrize("n,min_chunk", [(0, 1), (1, 1), (7, 1), (100, 3), (100, 60), (5, 10)])
def test_run_split_covers_every_index_once(n, min_chunk, monkeypatch):
    monkeypatch.setattr(jit, "cores", lambda: 4)
    seen, calls = [], []

    def body(start, stop):
        calls.append(stop - start)
        seen.extend(range(start, stop))

    jit.run_split(body, n, min_chunk)
    assert sorted(seen) == list(range(n))
    assert len(calls) == max(1, min(4, n // min_chunk))


def test_run_split_keeps_its_threads_and_covers_every_index():
    import threading

    from sim import jit

    seen, threads = [], set()

    def body(start, stop):
        seen.extend(range(start, stop))
        threads.add(threading.get_ident())
        jit.run_split(lambda a, b: seen.extend(range(1000 + a, 1000 + b)), 4)  # nested: inline

    jit.run_split(body, 10)
    first = jit._POOL
    jit.run_split(body, 10)
    assert sorted(seen) == sorted(list(range(10)) * 2 + [1000 + i for i in range(4)] * 2 *
                                  min(jit.cores(), 10))
    assert jit._POOL is first or jit.cores() == 1  # the same helper threads, not new ones


def test_run_split_raises_what_a_helper_thread_raised(monkeypatch):
    """A share that fails on a helper thread fails run_split in the caller, after every
    share has run."""
    monkeypatch.setattr(jit, "cores", lambda: 2)
    ran = []

    def body(start, stop):
        ran.append(start)
        if start:
            raise KeyError("helper share")

    with pytest.raises(KeyError, match="helper share"):
        jit.run_split(body, 10)
    assert sorted(ran) == [0, 5]
    jit.run_split(lambda a, b: ran.append(a), 10)  # the helpers still serve
    assert sorted(ran[2:]) == [0, 5]


def test_the_helper_threads_grow_and_the_old_ones_end(monkeypatch):
    import threading
    import time

    monkeypatch.setattr(jit, "cores", lambda: 2)
    jit.run_split(lambda a, b: None, 2)
    small = jit._POOL
    monkeypatch.setattr(jit, "cores", lambda: small.threads + 2)
    helpers = set()
    lock = threading.Lock()
    barrier = threading.Barrier(small.threads + 2)  # every share at once: all threads differ

    def body(start, stop):
        barrier.wait(timeout=30)
        with lock:
            helpers.add(threading.get_ident())

    jit.run_split(body, small.threads + 2)
    assert jit._POOL is not small and jit._POOL.threads == small.threads + 1
    assert len(helpers) == small.threads + 2

    def helper_threads():
        return sum(t.name.startswith("nvdla-sim_") for t in threading.enumerate())

    deadline = time.monotonic() + 30
    while helper_threads() > jit._POOL.threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert helper_threads() == jit._POOL.threads  # the small pool's threads ended


def _array_args_marked_noalias(kernel) -> int:
    """How many pointer arguments of the compiled kernel carry ``noalias`` (the return and
    exception slots of numba's calling convention always do)."""
    import re

    ir = next(iter(kernel.inspect_llvm().values()))
    header = next(line for line in ir.splitlines()
                  if line.startswith("define") and "add_into" in line)
    return len(re.findall(r"noalias", header)) - 2


@pytest.mark.parametrize("distinct, marked", [(True, True), (False, False)])
def test_distinct_arrays_marks_the_array_data_noalias(distinct, marked):
    """``distinct_arrays`` is what lets LLVM vectorise a store loop without overlap checks."""
    import numpy as np

    jit._import_numba()

    def add_into(out, a, b):
        for i in range(out.size):
            out[i] = a[i] + b[i]

    kernel = jit.njit(distinct_arrays=distinct, cache=False)(add_into)
    out, a, b = np.zeros(8), np.arange(8.0), np.ones(8)
    kernel(out, a, b)
    assert (out == a + b).all()
    assert (_array_args_marked_noalias(kernel) >= 3) is marked


def test_numba_arrives_without_scipy_and_leaves_it_importable(tmp_path):
    """numba's CPU target would import scipy's BLAS (0.1-0.2 s) and cffi when it loads, and
    yaml to read a settings file; the kernels need none, so numba loads with them hidden
    (yaml only when there is no such file), and they import as usual afterwards."""
    probe = """
import importlib.util, sys
from sim.num.fpcore import fp_add
assert int(fp_add(0x3C00, 0x3C00, 5, 10)) == 0x4000   # numba arrives
assert "scipy" not in sys.modules, "numba imported scipy"
assert "cffi" not in sys.modules, "numba imported cffi"
import numba
settings = sys.argv[1] == "settings"
assert ("yaml" in sys.modules) is settings and numba.config.DEVELOPER_MODE == settings
for name in ("scipy.linalg", "cffi", "yaml"):
    if importlib.util.find_spec(name.split(".")[0]) is not None:
        importlib.import_module(name)                   # not left hidden
"""
    project = str(jit.Path(jit.__file__).parents[1])
    env = {**jit.os.environ, "PYTHONPATH": project}
    subprocess.run([sys.executable, "-c", probe, "none"], check=True, env=env, cwd=tmp_path)
    if importlib.util.find_spec("yaml") is not None:  # numba reads its file with yaml
        (tmp_path / ".numba_config.yaml").write_text("developer_mode: 1\n")
        subprocess.run([sys.executable, "-c", probe, "settings"], check=True, env=env,
                       cwd=tmp_path)


def test_numba_prepared_in_the_background_serves_the_first_kernel():
    """prepare_numba_in_background imports numba and loads its CPU target on another
    thread, turning no placeholder into a dispatcher: the first kernel call does that,
    after waiting for the thread, and kernels calling kernels still compile."""
    probe = """
import sys, threading
from sim import jit
from sim.num.fpcore import fp_add
jit.prepare_numba_in_background()
assert not jit.numba_loaded()
assert int(fp_add(0x3C00, 0x3C00, 5, 10)) == 0x4000   # waits for the thread if need be
for thread in threading.enumerate():
    if thread.name == "nvdla-sim-numba":
        thread.join()
assert jit._target_ready and jit.numba_loaded() and "scipy" not in sys.modules
import sim.num.fpcore as core
assert type(core.fp_add).__name__ == "CPUDispatcher"
jit.prepare_numba_in_background()  # numba is in: nothing more to start
assert not [t for t in threading.enumerate() if t.name == "nvdla-sim-numba"]
"""
    subprocess.run([sys.executable, "-c", probe], check=True)


def _doubled(x):
    return 2 * x


def test_a_kernel_opens_its_cache_at_its_first_compilation():
    """A cached kernel's dispatcher opens its on-disk cache when it first compiles (or
    loads from the cache), not when numba makes it; it stays numba's dispatcher class."""
    from numba.core.caching import FunctionCache, NullCache

    jit._import_numba()
    kernel = jit.njit(_doubled)  # numba is in: a dispatcher at once
    assert type(kernel).__name__ == "CPUDispatcher"
    assert isinstance(kernel._cache, NullCache)
    assert kernel(21) == 42
    assert isinstance(kernel._cache, FunctionCache)
    assert "compile" not in kernel.__dict__  # the class's compile from now on
    assert kernel(1.5) == 3.0
    assert "compile" not in jit.njit(cache=False)(_doubled).__dict__  # no cache to open


def test_cached_kernels_load_without_what_compiling_needs(tmp_path):
    """A kernel in the cache loads without the CPU target's implementations (0.2 s of
    imports, which numba's own loads bring in) and without the numba modules its pickled
    state names (which would import scipy); a kernel that misses the cache still compiles,
    after the implementations are loaded (with scipy still hidden); a load that fails
    without them is numba's own load, with them."""
    (tmp_path / "kernels.py").write_text(
        "import numpy as np\n\nfrom sim.jit import njit\n\n\n"
        "@njit\ndef double(x):\n    return 2 * x\n\n\n"
        "@njit\ndef total(x):\n    return np.sum(x)\n")
    probe = """
import sys
import numpy as np
from sim import jit
from kernels import double, total
if sys.argv[1] == "failing":  # the first load of a kernel raises (state it cannot rebuild)
    from numba.core import caching
    loads, load = [], caching.Cache._load_overload
    def flaky(cache, sig, target_context):
        loads.append(sig)
        if len(loads) == 1:
            raise RuntimeError("needs the implementations")
        return load(cache, sig, target_context)
    caching.Cache._load_overload = flaky
assert total(np.arange(4.0)) == 6.0
if sys.argv[1] == "fresh":
    assert jit._compiler_ready               # compiled: the implementations were loaded
    assert double(21) == 42
elif sys.argv[1] == "failing":  # numba's own load, after a lean one that failed
    assert jit._compiler_ready and total.stats.cache_hits and not total.stats.cache_misses
else:
    assert not jit._compiler_ready, "loaded the implementations for a cached kernel"
    # np.sum's kernel names numba's array maths (whose linalg would import scipy): a
    # stand-in, nothing imported
    assert "numba.np.arraymath" in jit._UNIMPORTED_GLOBALS
    assert "numba.np.arraymath" not in sys.modules and "numba.np.linalg" not in sys.modules
    assert double(1.5) == 3.0                # not in the cache: compiled
    assert "numba.np.linalg" in sys.modules and not jit._UNIMPORTED_GLOBALS
    assert jit._compiler_ready and "scipy" not in sys.modules  # linalg loaded, scipy hidden
"""
    project = str(jit.Path(jit.__file__).parents[1])
    env = {**jit.os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": jit.os.pathsep.join([str(tmp_path), project])}
    for run in ("fresh", "cached", "failing"):
        subprocess.run([sys.executable, "-c", probe, run], check=True, env=env)
