"""The import graph of sim/: no cycle, and no unit package importing a layer above it.

Imports are read with ``ast`` (every ``import`` statement in a file, also those
inside functions), so the rules hold for lazy imports too.  Data flows one way:
trace/firmware/CLI/program/gen/diff/regress -> machine -> units -> sim/dma, sim/num; a unit
package may stand on the shared floor (configs, engine interface, chains,
errors, jit, listeners) and on other units, never on the machine or the layers that
drive it.

Calls can go up without an import: a unit reaching the machine through its
context (``ctx.machine``) or a memory's observer slot (``getattr(mem, "observer")``)
calls whatever sits there.  A unit's ``run(ctx)`` sees its registers, memories and
state through the context's methods, and tells listeners through
:mod:`sim.listeners`; :func:`hidden_upward_calls` finds the other ways, by ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parents[2] / "sim"
UNITS = ("bdma", "conv", "sdp", "pdp", "cdp", "rubik", "dma", "num")
ABOVE_UNITS = ("machine", "engines", "regress", "pool", "cluster", "progress", "trace", "cli",
               "program", "gen", "diff", "firmware", "runtime", "loadable")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: modules it imports}`` for every module of the package at ``root``."""
    files = {module_name(root, p): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in files else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state = {}  # module -> 1 on the current path, 2 done
    path = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def upward_imports(graph: dict[str, set[str]], top: str) -> list[tuple[str, str]]:
    """(unit module, module above the units) pairs that break the layering."""
    units = tuple(f"{top}.{u}" for u in UNITS)
    above = tuple(f"{top}.{a}" for a in ABOVE_UNITS)

    def inside(name, prefixes):
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    return sorted((src, dst) for src, targets in graph.items() if inside(src, units)
                  for dst in targets if inside(dst, above))


# attributes a unit may not reach: the machine behind a context, and the single-slot
# observers of the machine and memories (listeners are told through sim.listeners)
HIDDEN = ("machine", "_machine", "observer", "listeners", "engines")


def hidden_upward_calls(root: Path) -> list[tuple[str, int, str]]:
    """(unit module, line, what) for every reach past the context in the unit packages.

    Flags an attribute ``x.<name>`` for a name of :data:`HIDDEN` (``ctx.machine``,
    ``mem.observer``, ``machine.engines``) and ``getattr``/``setattr``/``hasattr``
    with such a name as a literal.  A parameter called ``machine`` (the CSB hooks
    ``ready``/``on_write`` receive one) is not an attribute and passes.
    """
    units = [root / u for u in UNITS]
    found = []
    for package in units:
        for path in sorted(package.rglob("*.py")) if package.is_dir() else ():
            name = module_name(root, path)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and node.attr in HIDDEN:
                    found.append((name, node.lineno, f".{node.attr}"))
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
                        and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                        and node.args[1].value in HIDDEN:
                    call = f"{node.func.id}(..., {node.args[1].value!r})"
                    found.append((name, node.lineno, call))
    return sorted(found)


def test_sim_has_no_import_cycle():
    assert find_cycle(import_graph(SIM)) is None


def test_units_import_nothing_above_them():
    assert upward_imports(import_graph(SIM), "sim") == []


def test_units_reach_nothing_past_their_context():
    assert hidden_upward_calls(SIM) == []


def _tree(tmp_path, files: dict) -> Path:
    root = tmp_path / "sim"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("files, cycle", [
    ({"a.py": "from . import b\n", "b.py": "import sim.a\n"}, ["sim.a", "sim.b", "sim.a"]),
    ({"conv/__init__.py": "", "conv/x.py": "def f():\n    from .y import g\n",
      "conv/y.py": "from sim.conv.x import f\n"}, ["sim.conv.x", "sim.conv.y", "sim.conv.x"]),
    ({"a.py": "from sim import b\n", "b.py": "import numpy\n"}, None),
])
def test_checker_finds_cycles(tmp_path, files, cycle):
    assert find_cycle(import_graph(_tree(tmp_path, files))) == cycle


@pytest.mark.parametrize("files, found", [
    ({"machine.py": "", "conv/__init__.py": "", "conv/p.py": "from ..machine import M\n"},
     [("sim.conv.p", "sim.machine")]),
    ({"program/__init__.py": "", "program/conv.py": "", "num/__init__.py": "",
      "num/x.py": "def f():\n    import sim.program.conv\n"},
     [("sim.num.x", "sim.program.conv")]),
    ({"machine.py": "from .conv import p\n", "conv/__init__.py": "", "conv/p.py": ""}, []),
])
def test_checker_finds_upward_imports(tmp_path, files, found):
    assert upward_imports(import_graph(_tree(tmp_path, files)), "sim") == found


@pytest.mark.parametrize("files, found", [
    # the calls this check was written for (sim/sdp, sim/bdma, sim/dma before issue #27)
    ({"sdp/__init__.py": "",
      "sdp/engine.py": "def process(ctx):\n    return _engine_of(ctx.machine)\n\n"
                       "def _engine_of(machine):\n    return machine.engines\n"},
     [("sim.sdp.engine", 2, ".machine"), ("sim.sdp.engine", 5, ".engines")]),
    ({"bdma/__init__.py": "",
      "bdma/engine.py": "def run(self, ctx):\n    op.execute(ctx.machine)\n"},
     [("sim.bdma.engine", 2, ".machine")]),
    ({"dma/__init__.py": "",
      "dma/feature.py": "def write(mem):\n    observer = getattr(mem, 'observer', None)\n"
                        "    mem.observer.wrote(mem)\n"},
     [("sim.dma.feature", 2, "getattr(..., 'observer')"), ("sim.dma.feature", 3, ".observer")]),
    ({"conv/__init__.py": "", "conv/x.py": "def f(ctx):\n    return ctx._machine.regfile\n"},
     [("sim.conv.x", 2, "._machine")]),
    # what a unit may do: a machine parameter in a CSB hook, the context's methods
    ({"sdp/__init__.py": "",
      "sdp/engine.py": "def ready(self, machine):\n    return machine.regfile.armed\n\n"
                       "def run(self, ctx):\n    ctx.state('SDP').fetch.layer_ran(ctx, 0)\n"},
     []),
    ({"machine.py": "class M:\n    def f(self):\n        return self.observer\n"}, []),
])
def test_checker_finds_hidden_upward_calls(tmp_path, files, found):
    assert hidden_upward_calls(_tree(tmp_path, files)) == found
