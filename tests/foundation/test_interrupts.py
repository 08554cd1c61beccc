"""``intr_notify``: every S_INTR_STATUS_0 source, in any letter case (as NVIDIA's traces)."""

import re

import pytest

from sim.machine import Machine
from sim.trace.player import run_trace

NOTIFY = re.compile(r"^\s*intr_notify\s*\(\s*([^,)]+?)\s*(?:,[^)]*)?\)", re.MULTILINE)


def sources():
    return Machine("nv_full").interrupt_sources()


def notify_trace(folder, source_bit: int, name: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "t.cfg").write_text(
        f"reg_write(NVDLA_GLB.S_INTR_SET_0, {1 << source_bit:#x});\n"
        f"intr_notify({name}, sync_id_0);\n"
        "poll_reg_equal(NVDLA_GLB.S_INTR_STATUS_0, 0x0);\n"  # the notify cleared it
    )
    return folder


def test_every_status_field_is_a_source():
    assert {"SDP", "CDP", "PDP", "BDMA", "RUBIK", "CDMA_DAT", "CDMA_WT", "CACC"} <= set(sources())


@pytest.mark.parametrize("source", sources())
@pytest.mark.parametrize("group", [0, 1])
@pytest.mark.parametrize("case", [str.upper, str.lower, str.title])
def test_source_in_any_case(tmp_path, source, group, case):
    m = Machine("nv_full")
    field = m.regfile.register("NVDLA_GLB.S_INTR_STATUS_0").field(f"{source}_DONE_STATUS{group}")
    folder = notify_trace(tmp_path / "nv_full" / "t", field.lsb, case(f"{source}_{group}"))
    result = run_trace(folder)
    assert result.status == "pass", result.message


def test_single_shot_waits_for_any_interrupt(tmp_path):
    folder = notify_trace(tmp_path / "nv_full" / "t", 0, "sync_id_0")
    (folder / "t.cfg").write_text((folder / "t.cfg").read_text().replace(
        "intr_notify(sync_id_0, sync_id_0)", "intr_notify(sync_id_0)"))
    assert run_trace(folder).status == "pass"


def test_interrupt_never_raised_fails(tmp_path):
    folder = tmp_path / "nv_full" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text("intr_notify(cdma_wt_1, x);\n")
    result = run_trace(folder)
    assert result.status == "fail" and "t.cfg:1" in result.message


@pytest.mark.parametrize("name", ["XYZ_0", "SDP_2", "SDP", "_0"])
def test_bad_source_names_the_line(tmp_path, name):
    folder = tmp_path / "nv_full" / "t"
    folder.mkdir(parents=True)
    (folder / "t.cfg").write_text(f"// x\nintr_notify({name}, x);\n")
    result = run_trace(folder)
    assert result.status == "error" and "t.cfg:2" in result.message
    assert "interrupt" in result.message


def test_every_name_in_the_shared_traces_resolves(shared_dir):
    names = set()
    for cfg in shared_dir.rglob("*.cfg"):
        names.update(NOTIFY.findall(cfg.read_text(errors="replace")))
    assert names, "no intr_notify in the shared traces"
    known = set(sources())
    for name in names:
        if name.lower().startswith("sync_id"):  # the one-argument (single shot) form
            continue
        source, _, group = name.upper().rpartition("_")
        assert source in known and group in ("0", "1"), name


@pytest.mark.parametrize("config", ["nv_full", "nv_small"])
def test_done_bits_are_the_status_fields(config):
    """The machine's remembered done bits (shared by every machine of a register map) are
    the S_INTR_STATUS_0 fields': raising, testing and clearing touch that bit alone."""
    for _ in range(2):  # the second machine answers from what the first remembered
        m = Machine(config)
        reg = m.regfile.register("NVDLA_GLB.S_INTR_STATUS_0")
        assert m.interrupt_sources() == tuple(dict.fromkeys(
            f.name.rpartition("_DONE_STATUS")[0] for f in reg.fields if "_DONE_STATUS" in f.name))
        for source in m.interrupt_sources():
            for group in (0, 1):
                bit = 1 << reg.field(f"{source}_DONE_STATUS{group}").lsb
                m.raise_interrupt(source, group)
                assert m.interrupt_status() == bit and m.interrupt_set(source, group)
                m.clear_interrupt(source, group)
                assert m.interrupt_status() == 0 and not m.interrupt_set(source, group)
        with pytest.raises(KeyError):
            m.raise_interrupt("NOSUCH", 0)

