"""regress --scheduler: a Dask cluster gives the results of a local -j 2 run."""

import json

import pytest

from sim.cli import main
from sim.errors import SimError

SUBSET = ("cdp_1x1x1_lrn3_int8_0", "cdp_8x8x32_lrn3_int8_0", "pdp_8x8x32_1x1_int8_0",
          "sdp_1x1x8_pass_through_int8_0", "pdp_5x7x8_4x1_split_max_int8_0")


def _trace_root(shared_dir, tmp_path):
    root = tmp_path / "root" / "nv_small"
    root.mkdir(parents=True)
    source = shared_dir / "nvdla-traces" / "nv_small"
    names = [n for n in SUBSET if (source / n).is_dir()]
    if len(names) < 3:  # the subset's names moved: take the first few traces instead
        names = sorted(p.name for p in source.iterdir() if p.is_dir())[:4]
    for name in names:
        (root / name).symlink_to(source / name)
    return root.parent


def _without_timings(path):
    doc = json.loads(path.read_text())
    for trace in doc["traces"]:
        trace.pop("seconds")
    return doc


def test_cluster_matches_local(shared_dir, tmp_path):
    distributed = pytest.importorskip("distributed")
    root = _trace_root(shared_dir, tmp_path)
    local, remote = tmp_path / "local.json", tmp_path / "remote.json"
    junit = tmp_path / "remote.xml"
    rc_local = main(["regress", str(root), "-j", "2", "--json", str(local)])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        rc_remote = main(["regress", str(root), "--scheduler", cluster.scheduler_address,
                          "--json", str(remote), "--junit", str(junit)])
    assert rc_local == rc_remote
    assert _without_timings(local) == _without_timings(remote)
    assert junit.read_text().count("<testcase") == len(_without_timings(remote)["traces"])


def test_unreachable_scheduler(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import sim.cluster

    monkeypatch.setattr(sim.cluster, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SimError, match="cannot reach the Dask scheduler"):
        list(sim.cluster.cluster_map("tcp://127.0.0.1:9", str, [1]))
