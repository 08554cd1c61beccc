"""sim.regress.discover, held to the plain search it stands for: a pathlib listing of every
folder the walk meets (is there a file input.txn, anything named *.cfg?) and the config
from the path's parents, over odd trees (links, loops, a folder or a broken link where a
trace file would be, hidden folders, configs nested or at the root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sim.configs import CONFIGS
from sim.regress import _discover, discover


def _plain_discover(root: Path) -> list[tuple[str | None, Path]]:
    """discover as it was written first: a Path and a glob for every folder walked."""
    root = Path(root)
    items, seen = [], set()
    for folder, dirs, _ in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        path = Path(folder)
        if path != root and ((path / "input.txn").is_file() or any(path.glob("*.cfg"))):
            names = [p.name for p in [path, *path.parents][1:]]
            within = names[: len(path.relative_to(root).parts)]
            items.append((next((n for n in within if n in CONFIGS), None), path))
    return sorted(items, key=lambda item: str(item[1]))


def _build(root: Path, layout: dict[str, str]) -> None:
    """``layout``: path -> "file", "dir", "fifo", or "-> target" (a link)."""
    for name, kind in layout.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            path.write_text("x")
        elif kind == "dir":
            path.mkdir(exist_ok=True)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            os.symlink(kind.removeprefix("-> "), path)


LAYOUTS = {
    "plain": {"nv_full/a/input.txn": "file", "nv_small/b/t.cfg": "file", "nv_full/c/x": "file"},
    "nested configs": {"nv_small/g/nv_full/a/t.cfg": "file", "other/q/w/input.txn": "file",
                       "nv_large/a/b.cfg/inner.txt": "file", "other/nv_full/t.cfg": "file"},
    "not files": {"nv_full/a/input.txn": "dir", "nv_full/b/input.txn": "-> nowhere",
                  "nv_full/c/input.txn": "fifo", "nv_full/d/x.cfg": "dir",
                  "nv_full/e/.hidden.cfg": "file", "nv_full/f/x.CFG": "file",
                  "nv_full/g/input.txn": "-> ../a/input.txn"},
    "hidden and links": {".hidden/nv_full/a/t.cfg": "file", "nv_full/a/t.cfg": "file",
                         "nv_small/link": "-> ../nv_full", "nv_full/loop": "-> ..",
                         "nv_full/b/input.txn": "-> ../a/t.cfg", "nv_full/a/.x/t.cfg": "file"},
    "the root holds one": {"t.cfg": "file", "a/t.cfg": "file"},
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
@pytest.mark.parametrize("root_name", ["tree", "nv_small"])
def test_discover_finds_what_the_plain_search_finds(tmp_path, layout, root_name):
    root = tmp_path / root_name
    root.mkdir()
    _build(root, layout)
    found = discover(root)
    assert found == _plain_discover(root)
    assert found  # every layout holds traces


def test_discover_from_a_relative_root(tmp_path, monkeypatch):
    _build(tmp_path, LAYOUTS["plain"])
    monkeypatch.chdir(tmp_path / "nv_full")
    for root in (Path("."), Path(".."), Path("../nv_small")):
        assert discover(root) == _plain_discover(root)


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_each_trace_comes_with_its_folders_listing(tmp_path, layout):
    """The names regress hands the trace player (so it need not list the folder again) are
    the folder's listing, whatever its entries are (files, folders, links, hidden)."""
    _build(tmp_path, layout)
    found = _discover(tmp_path)
    assert [(config, path) for config, path, _ in found] == _plain_discover(tmp_path)
    for _, path, names in found:
        assert sorted(names) == sorted(os.listdir(path))
