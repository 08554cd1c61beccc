"""An on-the-fly SDP layer prepared while the convolution fetches its weights
(sim.sdp.engine.prepare_sdp) resolves its datapath then, once: the output is that of a
layer resolved when CACC's cube arrives."""

import numpy as np

from sim.machine import LayerContext
from sim.program.sdp import put, run_sdp
from sim.sdp import engine, pipeline


def test_prepared_datapath_gives_the_same_output(monkeypatch):
    rng = np.random.default_rng(3)
    shape = (8, 3, 4)
    bias = rng.integers(-100, 100, shape[0]).astype(np.int8)
    x1 = dict(bypass=0, alu_bypass=0, alu_algo=2, alu_src=1, relu_bypass=0)
    _, m = run_sdp("nv_small", np.zeros(shape, np.int8), in_prec="int8", out_prec="int8",
                   x1=x1, operands={"bs": dict(use="alu", array=bias)}, cvt=(0, 3, 2),
                   go=False)
    put(m, "NVDLA_SDP.D_FEATURE_MODE_CFG_0", flying_mode=1)
    put(m, "NVDLA_SDP_RDMA.D_FEATURE_MODE_CFG_0", flying_mode=1)
    units = {"NVDLA_SDP": 0, "NVDLA_SDP_RDMA": 0}
    cube = rng.integers(-3000, 3000, shape).astype(np.int32)
    made, written = [], []
    real_datapath, real_write = pipeline.datapath, engine.write_feature
    monkeypatch.setattr(pipeline, "datapath",
                        lambda *args: made.append(args) or real_datapath(*args))
    monkeypatch.setattr(engine, "write_feature", lambda mem, addr, array, *args, **kw:
                        written.append(np.array(array)) or real_write(mem, addr, array,
                                                                      *args, **kw))
    for early in (False, True):
        ctx = LayerContext(m, units)
        prepared = engine.prepare_sdp(ctx) if early else None
        if early:
            assert prepared.path is not None and len(made) == 2
        engine.process_sdp(ctx, cube, prepared)
    assert len(made) == 2  # once per layer: not again for the prepared one
    np.testing.assert_array_equal(written[0], written[1])
