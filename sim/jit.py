"""The one place numba options live, and numba's late arrival.

Every compiled kernel in the project is decorated with ``@njit`` from here, so
caching and other options are set once: ``cache=True`` keeps CI and user runs
from recompiling on every start.

Importing numba costs about half a second, more than most layers take, and
most layers (integer convolution, the SDP, integer pooling...) run in numpy
without any kernel.  So ``njit`` hands out a :class:`Kernel` placeholder and
numba is imported only when a kernel is first called.  At that moment every
placeholder becomes a real numba dispatcher and every module global that
named a placeholder (``from sim.num.fpcore import fp_add`` included) is
rebound to it, so kernels that call each other compile as usual.

Kernels are compiled without ``parallel=True`` (numba's parallel pass more
than doubles a kernel's compile time); a kernel that is worth spreading over
the cores takes a range of its outer loop and :func:`run_split` calls it from
threads (kernels release the GIL).

Numba invalidates a cached kernel only when the kernel's own source file
changes, not when a helper it inlined from another file does; a stale kernel
would silently compute with old arithmetic.  So the cache lives in a folder
named after a digest of the whole ``sim`` package: any source change starts
from a fresh cache.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager, suppress
from pathlib import Path

JIT_OPTIONS = {"cache": True, "nogil": True}
_KERNELS: list[Kernel] = []
_numba = None  # the numba module once a kernel has been called
_import_lock = threading.RLock()
_target_lock = threading.Lock()  # _load_target's
_target_ready = False  # numba imported and its CPU target loaded


def source_digest() -> str:
    """Digest of every Python source of the ``sim`` package."""
    import hashlib  # loads OpenSSL: only when numba does

    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_CACHE_DIR = None  # cache_dir(), once found


def _cache_dir() -> str:
    global _CACHE_DIR
    if _CACHE_DIR is None:
        _CACHE_DIR = cache_dir()
    return _CACHE_DIR


def cache_dir() -> str:
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "nvdla-sim"
    )
    # numba's reference-count debugging changes the runtime's functions (an extra
    # argument) and numba's cache index does not know it: a kernel cached without it
    # calls the debugging runtime with a missing argument (a crash, or garbage printed)
    debugging = os.environ.get("NUMBA_DEBUG_NRT", "0").strip() not in ("", "0")
    return os.path.join(base, f"numba-{source_digest()}" + ("-nrt-debug" if debugging else ""))


def numba_loaded() -> bool:
    """Whether numba has been brought in (by a kernel's first call): a kernel called
    now costs no import."""
    return _numba is not None


def _import_numba():
    """Import and configure numba, then turn every placeholder into a dispatcher."""
    global _numba
    with _import_lock:
        if _numba is None:
            _numba = _load_numba()
    return _numba


def _load_target() -> None:
    """Import numba and ready its CPU target to run kernels from the cache, once: the slow
    part of bringing numba in (about 0.25 s), which touches none of the simulator's state.

    What numba needs to compile a kernel, not to load one, waits for the first kernel
    that misses the cache (:func:`_ready_to_compile`).
    """
    global _target_ready
    with _target_lock:
        if not _target_ready:
            # numba's settings file, read with yaml (20-40 ms of imports) when present
            unused = () if os.path.exists(".numba_config.yaml") else ("yaml",)
            with _unused_packages_hidden(HIDDEN_FROM_NUMBA + unused):
                import numba  # noqa: F401
                from numba.core import entrypoints
                from numba.core.registry import cpu_target
                from numba.core.runtime import rtsys

                # numba looks for extensions among the installed packages' entry points
                # (a scan of every package's metadata) before a dispatcher's first call,
                # loaded kernel or not; kernels use none
                entrypoints._already_initialized = True

                # each leaves numba's own way where this numba lacks what it replaces
                # (numba>=0.62 is all the project asks for)
                with suppress(AttributeError, ImportError):
                    _links_cached_code_lazily(cpu_target.target_context.codegen())
                with suppress(AttributeError, ImportError):
                    _environments_without_imports()
                # numba's runtime (reference counts, array allocation), which cached
                # kernels call; numba's own cache loads have the whole target loaded
                # instead (_ready_to_compile)
                with _runtime_from_the_cache():
                    rtsys.initialize(cpu_target.target_context)
            _target_ready = True


@contextmanager
def _runtime_from_the_cache():
    """numba's runtime functions, compiled by LLVM when the runtime starts (15 ms of every
    process that runs a kernel), come from the cache folder instead, once compiled there.

    The file is named after what the machine code depends on: numba's and llvmlite's
    versions and the processor LLVM compiles for.  A file that cannot be read or loaded is
    compiled again; one that cannot be written is not kept.
    """
    import hashlib
    import pickle

    import llvmlite
    import numba
    from numba.core.runtime import nrtdynmod

    numbas_own = getattr(nrtdynmod, "compile_nrt_functions", None)
    if numbas_own is None:  # another numba: its own way
        yield
        return

    def compile_nrt_functions(ctx):
        try:
            codegen = ctx.codegen()
            # what the runtime's code depends on: the versions, the processor, and numba's
            # reference-count debugging switches (they change the functions made)
            what = repr((numba.__version__, llvmlite.__version__, sys.version_info[:2],
                         codegen.magic_tuple(), numba.config.DEBUG_NRT,
                         getattr(numba.config, "DEBUG_NRT_STACK_LIMIT", 0)))
        except AttributeError:
            return numbas_own(ctx)
        path = os.path.join(_cache_dir(), "runtime-"
                            f"{hashlib.sha256(what.encode()).hexdigest()[:16]}.pickle")
        try:
            with open(path, "rb") as file:
                return codegen.unserialize_library(pickle.load(file))
        except Exception:  # noqa: BLE001 - absent or unusable: compiled below
            pass
        try:
            module, library = nrtdynmod.create_nrt_module(ctx)
            library.enable_object_caching()  # keeps the machine code to write
            library.add_ir_module(module)
            library.finalize()
            state = library.serialize_using_object_code()
        except AttributeError:
            return numbas_own(ctx)
        partial = f"{path}.{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(partial, "wb") as file:
                pickle.dump(state, file)
            os.replace(partial, path)  # whole or absent for a process reading it
        except OSError:
            with suppress(OSError):
                os.remove(partial)
        return library

    nrtdynmod.compile_nrt_functions = compile_nrt_functions
    try:
        yield
    finally:
        nrtdynmod.compile_nrt_functions = numbas_own


_UNIMPORTED_GLOBALS: dict[str, dict] = {}  # numba module name -> its kernels' globals


def _environments_without_imports() -> None:
    """Load cached kernels without importing the numba modules whose functions they inlined.

    A cached kernel carries the environment (module globals, constants) of every function
    compiled into it, numba's own array and math implementations included, and numba's
    load imports each one's module for its globals: 30-40 ms of imports in every fp16 run
    (``numba.np.arrayobj`` and what it imports).  Only object-mode code reads an
    environment's globals; the kernels are all nopython, and their machine code reads only
    constants.  So a module not imported yet lends a stand-in dict, filled with the
    module's globals when numba is readied to compile (:func:`_ready_to_compile`).
    """
    from numba.core import environment

    numbas_own = environment._rebuild_env
    # what the stand-in needs, checked now rather than at a kernel's load
    environment.lookup_environment, environment.Environment._memo  # noqa: B018

    def rebuild_env(modname, consts, env_name):
        if (_compiler_ready or not isinstance(modname, str) or not modname.startswith("numba.")
                or modname in sys.modules or environment.lookup_environment(env_name)):
            return numbas_own(modname, consts, env_name)
        stand_in = _UNIMPORTED_GLOBALS.setdefault(modname, {"__name__": modname})
        env = environment.Environment(stand_in)
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
        return env

    # pickled by name as numba's (an environment's __reduce__ names this module global)
    rebuild_env.__module__ = numbas_own.__module__
    rebuild_env.__qualname__ = numbas_own.__qualname__
    environment._rebuild_env = rebuild_env


def _fill_stand_in_globals() -> None:
    """The stand-in globals of :func:`_environments_without_imports` become their
    modules' (imported by the CPU target's refresh), before anything compiles."""
    import importlib

    for modname, stand_in in list(_UNIMPORTED_GLOBALS.items()):
        stand_in.update(importlib.import_module(modname).__dict__)
        del _UNIMPORTED_GLOBALS[modname]


def _links_cached_code_lazily(codegen) -> None:
    """Load cached kernels without parsing the LLVM bitcode they carry for linking.

    A cached kernel is its machine code and its bitcode (with its callees', inlined: the
    FC kernel's is 400 KB); numba parses the bitcode at every load, to list the symbols
    the code defines and to keep it for kernels compiled later that link it (a fifth of
    loading a kernel, 50 ms of an AlexNet run).  Here the symbols come from the machine
    code's ELF symbol table (:mod:`sim.jit_symbols`: the same names) and the bitcode is
    parsed only when a compilation links it.  Anything else (another numba, a non-ELF
    object) loads numba's way.
    """
    import struct

    from llvmlite import binding as llvm

    from .jit_symbols import defined_symbols

    library_class = getattr(codegen, "_library_class", None)
    engine = getattr(codegen, "_engine", None)
    if library_class is None or not isinstance(getattr(engine, "_defined_symbols", None), set):
        return
    # what a load below calls, checked now: a numba without one loads its own way
    used = ("enable_object_caching", "_set_compiled_object", "_finalize_final_module",
            "_get_module_for_linking")
    if not all(hasattr(library_class, method) for method in used):
        return

    class LinkBitcodeParsedWhenLinked(library_class):
        link_bitcode = None

        def _get_module_for_linking(self):
            if self._shared_module is None and self.link_bitcode is not None:
                self._shared_module = llvm.parse_bitcode(self.link_bitcode)
                self.link_bitcode = None
            return super()._get_module_for_linking()

    numbas_own = codegen.unserialize_library

    def unserialize_library(state):
        name, kind, data = state
        try:
            symbols = defined_symbols(data[0]) if kind == "object" else None
        except (struct.error, ValueError, UnicodeDecodeError):  # a damaged object: numba's way
            symbols = None
        if symbols is None:
            return numbas_own(state)
        library = LinkBitcodeParsedWhenLinked(codegen, name)
        library.enable_object_caching()
        library._set_compiled_object(data[0])
        library.link_bitcode = data[1]
        library._finalize_final_module()
        engine._defined_symbols |= symbols
        return library

    codegen.unserialize_library = unserialize_library


_compiler_lock = threading.Lock()  # _ready_to_compile's
_compiler_ready = False  # the CPU target's implementations loaded


def _ready_to_compile() -> None:
    """Load the CPU target's implementations of Python and numpy, once: what numba needs to
    compile a kernel (about 0.2 s of imports), not to load a compiled one from the cache.

    numba loads them at its first compilation and at every load from the cache; a run whose
    kernels are all in the cache never needs them, so cached kernels load without
    (:func:`_loads_without_compiler`) and this runs before a kernel compiles.
    """
    global _compiler_ready
    from numba.core.compiler_lock import global_compiler_lock

    # numba's compiler lock first, as numba's own load takes them (a cache miss calls this
    # holding it, and the refresh below takes it too): the other order could deadlock
    with global_compiler_lock, _compiler_lock:
        if not _compiler_ready:
            with _unused_packages_hidden():
                from numba.core.registry import cpu_target

                # the CPU target loads its implementations now, while the packages are
                # hidden
                cpu_target.target_context.refresh()
                _fill_stand_in_globals()
            _compiler_ready = True


def prepare_numba_in_background() -> None:
    """Start :func:`_load_target` on another thread, for a command that will run kernels
    after work of its own that leaves the processor idle (a loadable with fp16 layers,
    while NVIDIA's firmware starts): the first kernel then waits only for the rest.

    Only for a process the command owns: while it runs, scipy and cffi (and yaml, without a
    ``.numba_config.yaml`` here) cannot be imported (:func:`_unused_packages_hidden`).  A
    failure is left for the first kernel to meet.
    """
    if _numba is not None or _target_ready:
        return

    def load() -> None:
        try:
            _load_target()
        except Exception:  # noqa: BLE001 - the first kernel's own import raises it
            pass

    threading.Thread(target=load, name="nvdla-sim-numba", daemon=True).start()


def _load_numba():
    _load_target()
    import numba

    path = _cache_dir()
    try:
        os.makedirs(path, exist_ok=True)
        numba.config.CACHE_DIR = path
    except OSError:
        pass  # unwritable: numba falls back to its own locations
    for kernel in _KERNELS:
        kernel.dispatcher = kernel.make(numba)
    _rebind_globals(numba)
    return numba


def _rebind_globals(numba) -> None:
    """Point every module global that holds a placeholder at the real object."""
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        if not isinstance(names, dict):
            continue
        for name, value in list(names.items()):
            if isinstance(value, Kernel):
                names[name] = value.dispatcher


HIDDEN_FROM_NUMBA = ("scipy", "cffi")


@contextmanager
def _unused_packages_hidden(names=HIDDEN_FROM_NUMBA):
    """scipy and cffi (``names``), unless loaded already, cannot be imported inside this
    block (by any thread: the simulator imports neither).

    When numba's CPU target first loads its implementations, it imports scipy's BLAS
    bindings if scipy is installed, to offer ``np.dot`` and ``np.linalg`` in kernels
    (with scipy's own imports 0.1-0.2 s of every process that runs a kernel), and cffi,
    to call cffi functions from kernels (about 35 ms); so does loading a cached kernel
    whose pickled state names numba's numpy implementations (``np.sum``).  The
    simulator's kernels use neither, so numba is left believing they are not installed.
    """
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # an import of it or of any submodule fails at once
    try:
        yield
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


class Kernel:
    """A numba kernel not compiled yet; calling it brings numba in."""

    def __init__(self, py_func, options: dict):
        self.py_func = py_func
        self.options = options
        self.dispatcher = None  # the numba object, once numba is imported
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__doc__ = py_func.__doc__
        self.__module__ = py_func.__module__
        self.__wrapped__ = py_func

    def __call__(self, *args, **kwargs):
        if self.dispatcher is None:
            _import_numba()
        return self.dispatcher(*args, **kwargs)

    def make(self, numba):
        return _dispatcher(numba, self.py_func, self.options)

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"


class Intrinsic(Kernel):
    """A ``numba.extending.intrinsic`` (code generated inside kernels) not made yet."""

    def make(self, numba):
        from numba.extending import intrinsic as make_intrinsic

        return make_intrinsic(self.py_func)


PARALLEL_ELEMENTS = 1 << 17  # numpy work below this many elements is not worth a thread


def cores() -> int:
    """Processor cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_POOL = None  # threads kept between layers: starting them per layer cost milliseconds
_IN_POOL = threading.local()


class _Call:
    """A call handed to the helper threads; :meth:`result` waits for it and raises what it
    raised.

    Whichever thread takes the call first runs it: a helper, or the caller in
    :meth:`result` when no helper has started it yet (on a busy machine a helper may wait
    for a core for milliseconds, and the caller would wait with it for a call it can run
    itself; a share of pieces then finds none left)."""

    __slots__ = ("_body", "_done", "_error", "_taken")

    def __init__(self, body: Callable[[], object]):
        self._body = body
        self._error = None
        self._done = threading.Lock()
        self._done.acquire()  # released when the call has run
        self._taken = threading.Lock()  # held by the thread that runs it

    def run(self) -> None:
        """Run the call, unless another thread has taken it."""
        if not self._taken.acquire(blocking=False):
            return
        try:
            self._body()
        except BaseException as exc:  # noqa: BLE001 - raised by result(), in the caller
            self._error = exc
        finally:
            self._done.release()

    def result(self) -> None:
        self.run()  # not started by a helper: run here
        with self._done:
            pass
        if self._error is not None:
            raise self._error


class _Helpers:
    """Helper threads taking calls from one queue: what run_split needs of a pool (a
    concurrent.futures pool costs its import, milliseconds at a process's first large layer,
    and a Future and a condition per call)."""

    def __init__(self, threads: int):
        try:  # queue's own SimpleQueue without the rest of queue (heapq...)
            from _queue import SimpleQueue
        except ImportError:
            from queue import SimpleQueue

        self.threads = threads
        self._calls = SimpleQueue()
        for i in range(threads):
            threading.Thread(target=self._serve, name=f"nvdla-sim_{i}", daemon=True).start()

    def _serve(self) -> None:
        _IN_POOL.active = True
        while (call := self._calls.get()) is not None:
            call.run()

    def submit(self, body: Callable[[], object]) -> _Call:
        call = _Call(body)
        self._calls.put(call)
        return call

    def shutdown(self) -> None:
        """The threads end once the calls already handed to them have run."""
        for _ in range(self.threads):
            self._calls.put(None)


def _pool(threads: int) -> _Helpers:
    """The process's helper threads (at least ``threads`` of them), made on first use."""
    global _POOL
    if _POOL is None or _POOL.threads < threads:
        if _POOL is not None:
            _POOL.shutdown()
        _POOL = _Helpers(threads)
    return _POOL


def _forget_pool() -> None:
    """A forked child has none of its parent's threads: it makes its own pool."""
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_split(body: Callable[[int, int], object], n: int, min_chunk: int = 1,
              pieces: int | None = None) -> None:
    """Call ``body(start, stop)`` on consecutive slices of ``range(n)``, one thread per core.

    ``body`` runs a nogil kernel or numpy (which releases the GIL); slices
    shorter than ``min_chunk`` are not worth a thread.  The calling thread
    takes the first slice and kept helper threads the others; a ``body`` that
    splits again runs its slices in its own thread (no waiting on a busy pool).

    ``pieces``: ``range(n)`` is cut into that many slices instead, which the threads
    take one at a time as they finish the last: on a machine whose other work slows one
    core, the others take more (fixed halves would wait for the slow one).
    """
    workers = max(1, min(cores(), n // max(1, min_chunk)))
    if workers == 1 or getattr(_IN_POOL, "active", False):
        body(0, n)
        return
    if pieces is None:
        bounds = [n * i // workers for i in range(workers + 1)]
        first, rest = (lambda: body(bounds[0], bounds[1])), [
            (lambda i=i: body(bounds[i], bounds[i + 1])) for i in range(1, workers)]
    else:
        pieces = max(workers, min(pieces, n))
        slices = iter([(n * i // pieces, n * (i + 1) // pieces) for i in range(pieces)])
        lock = threading.Lock()

        def take():
            while True:
                with lock:
                    piece = next(slices, None)
                if piece is None:
                    return
                body(*piece)

        first, rest = take, [take] * (workers - 1)
    pool = _pool(workers - 1)
    jobs = [pool.submit(job) for job in rest]
    try:
        first()
    finally:
        for job in jobs:
            job.result()


def intrinsic(func):
    """``numba.extending.intrinsic``, made when numba is imported (only kernels call it)."""
    if _numba is not None:
        return Intrinsic(func, {}).make(_numba)
    kernel = Intrinsic(func, {})
    _KERNELS.append(kernel)
    return kernel


def njit(*args, **kwargs):
    """``numba.njit`` with the project's options (explicit kwargs win), compiled on first call.

    ``distinct_arrays=True`` promises that no two array arguments of the kernel share
    memory (:func:`_distinct_arrays_compiler`).
    """
    options = {**JIT_OPTIONS, **kwargs}

    def decorate(func):
        if _numba is not None:
            return _dispatcher(_numba, func, options)
        kernel = Kernel(func, options)
        _KERNELS.append(kernel)
        return kernel

    if args and callable(args[0]):
        return decorate(args[0])
    if args:
        raise TypeError("njit: explicit signatures are not supported")
    return decorate


@intrinsic
def prefer_wide_vectors(typingctx):
    """Let LLVM vectorise the kernel that calls this at the processor's full vector width.

    LLVM prefers 256-bit vectors on processors with AVX-512 (a global default that
    ``NUMBA_CPU_FEATURES`` could change for every kernel); the fp16 MAC kernels are long
    runs of 32-bit integer work that gain a fifth from 512-bit vectors, so they ask for
    them with this function attribute.  It emits no code; a processor without wide
    vectors ignores it.
    """
    from numba.core import types

    def codegen(context, builder, sig, args):
        # llvmlite's attribute set knows only keyword attributes; this one is a string
        set.add(builder.function.attributes, '"prefer-vector-width"="512"')
        return context.get_dummy_value()

    return types.none(), codegen


def _dispatcher(numba, func, options: dict):
    """numba's dispatcher of ``func``; with ``cache``, one that opens its on-disk cache at
    its first compilation (:func:`_cache_opened_at_first_compile`)."""
    options = _numba_options(options)
    caching = options.pop("cache", False)
    dispatcher = numba.njit(**options)(func)
    if caching:
        _cache_opened_at_first_compile(dispatcher)
    else:
        _ready_to_compile()  # nothing to load: its first call compiles
    return dispatcher


def _cache_opened_at_first_compile(dispatcher) -> None:
    """Open the dispatcher's on-disk cache at its first compilation (a load from the cache
    included) instead of now, as ``cache=True`` would.

    Opening a cache (finding its folder, testing that it is writable, reading the source
    file's time stamp) was 60% of making a dispatcher: 25 ms of bringing numba in, for
    all of the project's 160 kernels, of which a run calls a dozen or two.  Until then
    the instance's own ``compile`` opens it, then leaves the class's.
    """
    from numba.core.compiler_lock import global_compiler_lock

    class_compile = dispatcher.compile

    def compile(sig):
        with global_compiler_lock:  # the lock compile takes: one thread opens the cache
            if dispatcher.__dict__.get("compile") is compile:
                dispatcher.enable_caching()
                _loads_without_compiler(dispatcher._cache)
                del dispatcher.compile
        return class_compile(sig)

    dispatcher.compile = compile


def _loads_without_compiler(cache) -> None:
    """Let the dispatcher's on-disk ``cache`` load a kernel without the CPU target's
    implementations, which numba's own load brings in first (about 0.2 s at a process's
    first load): a compiled kernel is machine code that calls only numba's runtime, which
    :func:`_load_target` made ready, and the few numba modules its pickled state names
    (imported by the load, scipy hidden).  A kernel not in the cache is compiled: the
    implementations are loaded first (:func:`_ready_to_compile`)."""

    def load_overload(sig, target_context):
        try:
            # numba's own guard (Windows' sharing errors)
            with cache._guard_against_spurious_io_errors(), _unused_packages_hidden():
                compiled = cache._load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - a kernel whose state needs more: numba's own load
            _ready_to_compile()
            return type(cache).load_overload(cache, sig, target_context)
        if compiled is None:
            _ready_to_compile()
        return compiled

    cache.load_overload = load_overload


def _numba_options(options: dict) -> dict:
    """numba.njit's options from ours (``distinct_arrays`` is ours)."""
    options = dict(options)
    if options.pop("distinct_arrays", False):
        options["pipeline_class"] = _distinct_arrays_compiler()
    return options


_DISTINCT_ARRAYS_COMPILER = None


def _distinct_arrays_compiler():
    """numba's compiler with every pointer argument of the kernel marked ``noalias``.

    A loop that stores to one array while it reads others is vectorised by LLVM
    behind run-time checks that the arrays do not overlap; in the fp16 tile kernel
    those checks (two comparisons per pair of arrays, a dozen arrays) cost as much
    as several vectors of products, paid for every lane and kernel.  Numba can
    declare a kernel's array data ``noalias`` (its ``noalias`` compile flag, which
    it sets itself for the gufuncs it makes) but has no decorator option for it.
    """
    global _DISTINCT_ARRAYS_COMPILER
    if _DISTINCT_ARRAYS_COMPILER is None:
        from numba.core.compiler import Compiler

        class DistinctArraysCompiler(Compiler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.state.flags.noalias = True

        _DISTINCT_ARRAYS_COMPILER = DistinctArraysCompiler
    return _DISTINCT_ARRAYS_COMPILER
