"""SDP and SDP_RDMA: the single-point data processor.

Modules:

* :mod:`~sim.sdp.config` -- the SDP/SDP_RDMA register groups decoded into a
  validated :class:`~sim.sdp.config.SdpLayer` (precision pairs of format.rst
  Table 30, features the hardware configuration lacks, EQL constraints);
* :mod:`~sim.sdp.rdma` -- BRDMA/NRDMA/ERDMA operand streams (the layouts are
  read by :mod:`sim.dma.sdp_rdma`);
* :mod:`~sim.sdp.stages` -- one fused numba loop running X1, X2, Y (operand
  convertors, core, LUT) and the output convertor through :mod:`sim.num.sdp`;
* :mod:`~sim.sdp.pipeline` -- that loop on a whole cube, with its counters;
* :class:`sim.num.lut.LutRam` -- the LE/LO LUT RAM behind S_LUT_ACCESS_CFG/DATA;
* :mod:`~sim.sdp.engine` -- the engine (standalone layers) and
  :func:`~sim.sdp.engine.process_sdp`, the on-the-fly entry point CACC calls.
"""
