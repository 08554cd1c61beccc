"""A direct layer fetches its weights in another thread while this one fetches the data and
prepares the SDP (sim.conv.direct.compute_direct_layer): same results, and the errors of
the sequential order (the data's, then the weights', then the SDP's)."""

import threading

import numpy as np
import pytest

from sim.chains import CONV_UNITS
from sim.conv.cdma import Cbuf
from sim.conv.modes import compute_conv_layer
from sim.errors import SimError
from sim.machine import LayerContext, Machine
from sim.program.conv import program
from sim.program.registers import set_reg

CDMA = "NVDLA_CDMA"
FAR = 1  # the high address word: past nv_small's 32-bit address space


@pytest.fixture(params=[1, 2], ids=["one-core", "two-cores"])
def cores(request, monkeypatch):
    monkeypatch.setattr("sim.jit.cores", lambda: request.param)
    monkeypatch.setattr("sim.conv.direct.OVERLAP_BYTES", 0)  # these small layers overlap too
    return request.param


def _layer(seed: int = 3):
    rng = np.random.default_rng(seed)
    m = Machine("nv_small")
    x = rng.integers(-128, 128, (8, 6, 7)).astype(np.int8)
    w = rng.integers(-128, 128, (5, 8, 3, 3)).astype(np.int8)
    program(m, x, w, precision="int8", pad=(1, 1, 1, 1))
    return m, x, w


def _run(m, during=None):
    return compute_conv_layer(LayerContext(m, {u: 0 for u in CONV_UNITS}), Cbuf(), during)


def test_the_overlap_gives_the_sequential_sums(cores, monkeypatch):
    m, _, _ = _layer()
    calls = []
    out, counters, _ = _run(m, during=lambda: calls.append(1))
    monkeypatch.setattr("sim.conv.direct.OVERLAP_BYTES", 1 << 62)  # the reference: one thread
    m1 = Machine("nv_small")
    program(m1, *_layer()[1:], precision="int8", pad=(1, 1, 1, 1))
    plain, plain_counters, _ = _run(m1)
    assert calls == [1] and np.array_equal(out, plain) and counters == plain_counters


@pytest.mark.parametrize("overlap_bytes,weights_alone,apart",
                         [(0, 8, True), (1 << 16, 8, False), (0, 1, False)])
def test_only_a_large_fetch_takes_another_thread(overlap_bytes, weights_alone, apart,
                                                 monkeypatch):
    """The weights are handed to another thread when the layer fetches OVERLAP_BYTES or
    more (this one, 8x6x7 data and 5x8x3x3 weights, fetches 696) and its weights are
    under WEIGHTS_ALONE times its data (360 bytes against 336), else fetched on this one.

    The data's fetch here waits for the weights' to begin: handed over, a helper begins
    it (a call no helper has started by the time this thread asks for it would run here,
    sim.jit._Call); on this thread, the wait runs out and the weights come after."""
    import sim.conv.direct as direct

    monkeypatch.setattr("sim.jit.cores", lambda: 2)
    monkeypatch.setattr(direct, "OVERLAP_BYTES", overlap_bytes)
    monkeypatch.setattr(direct, "WEIGHTS_ALONE", weights_alone)
    fetched_on = []
    weights_begun = threading.Event()

    def fetch_weights(*args, **kw):
        fetched_on.append(threading.get_ident())
        weights_begun.set()
        return plain_fetch(*args, **kw)

    def fetch_feature(*args):
        weights_begun.wait(timeout=10 if apart else 0.2)
        return plain_feature(*args)

    plain_fetch, plain_feature = direct.fetch_weights, direct.fetch_feature
    monkeypatch.setattr(direct, "fetch_weights", fetch_weights)
    monkeypatch.setattr(direct, "fetch_feature", fetch_feature)
    _run(_layer()[0])
    assert fetched_on and (fetched_on[0] != threading.get_ident()) == apart


def _expect(m, part: str, during=None) -> None:
    with pytest.raises(SimError) as info:
        _run(m, during)
    assert part in str(info.value), str(info.value)


def test_a_data_fault_is_raised_before_a_weights_fault(cores):
    m, _, _ = _layer()
    set_reg(m, CDMA, "D_DAIN_ADDR_HIGH_0_0", datain_addr_high_0=FAR)
    set_reg(m, CDMA, "D_WEIGHT_ADDR_HIGH_0", weight_addr_high=FAR)
    _expect(m, "D_DAIN_ADDR")
    m, _, _ = _layer()
    set_reg(m, CDMA, "D_WEIGHT_ADDR_HIGH_0", weight_addr_high=FAR)
    _expect(m, "D_WEIGHT_ADDR")


def test_during_runs_even_when_a_fetch_fails_and_the_fault_still_wins(cores):
    """``during`` (the SDP's preparation) keeps its own errors for later: a fetch's
    fault is the layer's error."""
    m, _, _ = _layer()
    set_reg(m, CDMA, "D_WEIGHT_ADDR_HIGH_0", weight_addr_high=FAR)
    seen = []
    _expect(m, "D_WEIGHT_ADDR", during=lambda: seen.append("sdp"))
    assert seen == ["sdp"]


def test_an_sdp_prepared_early_keeps_its_errors_for_its_place():
    """prepare_sdp (run while the weights are fetched) raises nothing; process_sdp raises
    what the layer meets first, as without it: a CACC cube of the wrong shape before an
    operand stream past the address space."""
    from sim.program.sdp import put, run_sdp
    from sim.sdp.engine import prepare_sdp, process_sdp

    rng = np.random.default_rng(2)
    shape = (8, 3, 4)
    bias = rng.integers(-100, 100, shape[0]).astype(np.int8)
    x1 = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, relu_bypass=1)
    _, m = run_sdp("nv_small", np.zeros(shape, np.int8), in_prec="int8", out_prec="int8",
                   x1=x1, operands={"bs": dict(use="alu", array=bias)}, go=False)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", flying_mode=1)
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", flying_mode=1)
    m.write_reg("NVDLA_SDP_RDMA.D_BS_BASE_ADDR_HIGH_0", FAR)
    units = {"NVDLA_SDP": 0, "NVDLA_SDP_RDMA": 0}
    for early in (False, True):
        ctx = LayerContext(m, units)
        prepared = prepare_sdp(ctx) if early else None
        with pytest.raises(SimError, match="D_DATA_CUBE"):
            process_sdp(ctx, np.zeros((8, 3, 5), np.int32), prepared)
        ctx = LayerContext(m, units)
        prepared = prepare_sdp(ctx) if early else None
        with pytest.raises(SimError, match="BS_BASE_ADDR"):
            process_sdp(ctx, np.zeros(shape, np.int32), prepared)
