"""A recorded run copies a memory its DLA task changed only for a later DLA task to compare
with: the trace it records is byte for byte the one of a run that copies after every task."""

from pathlib import Path

import pytest

from sim.runtime import read_loadable, run_loadable_bytes, runner

NETWORKS = Path(__file__).resolve().parents[2].parent / "shared" / "networks"
# (config, name): one DLA task then the softmax's EMU task; two DLA tasks, each followed by
# an EMU task (the first DLA task's copies are read by the second's loads)
CASES = [("nv_small", "lenet"), ("nv_full", "mixnet_power")]
CHECKS, COPY = runner._record_checks, runner._copy  # the runner's own, unpatched


def _record(folder: Path, kmd: Path, trace: Path, monkeypatch, keep_always: bool) -> int:
    """Record ``folder``'s network into ``trace``; the number of copies its checks made."""
    copies = []

    def counted_copy(mem, base, size):
        copies.append(size)
        return COPY(mem, base, size)

    def reference_checks(*args, keep=True):  # a copy after every task, as before
        return CHECKS(*args, keep=True)

    (loadable,) = folder.glob("*.nvdla")
    inputs = {0: (folder / "input.bin").read_bytes()} if (folder / "input.bin").is_file() else {}
    with monkeypatch.context() as patch:
        patch.setattr(runner, "_copy", counted_copy)
        patch.setattr(runner, "_record_checks", reference_checks if keep_always else CHECKS)
        run_loadable_bytes(read_loadable(loadable), kmd, folder.parent.name, inputs, trace)
    return len(copies)


@pytest.mark.parametrize(("config", "name"), CASES, ids=lambda c: str(c))
def test_no_copy_after_the_last_dla_task_records_the_same_trace(nvidia_kmd, tmp_path,
                                                                 monkeypatch, config, name):
    folder = NETWORKS / config / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    reference, fast = tmp_path / "reference", tmp_path / "fast"
    made = {}
    for out, keep_always in ((reference, True), (fast, False)):
        made[keep_always] = _record(folder, nvidia_kmd, out / "trace.cfg", monkeypatch,
                                    keep_always)
    assert made[False] < made[True]  # the shortcut left copies out
    files = sorted(p.name for p in reference.iterdir())
    assert files == sorted(p.name for p in fast.iterdir())
    assert "trace.cfg" in files and any(f.endswith(".dat") for f in files)
    for name_ in files:
        assert (fast / name_).read_bytes() == (reference / name_).read_bytes(), name_
