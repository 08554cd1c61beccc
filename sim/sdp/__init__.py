"""SDP and SDP_RDMA: the single-point data processor.

Modules:

* :mod:`~sim.sdp.config` -- the SDP/SDP_RDMA register groups decoded into a
  validated :class:`~sim.sdp.config.SdpLayer` (precision pairs of format.rst
  Table 30, features the hardware configuration lacks, EQL constraints);
* :mod:`~sim.sdp.rdma` -- BRDMA/NRDMA/ERDMA operand streams (the layouts are
  read by :mod:`sim.dma.sdp_rdma`);
* :mod:`~sim.sdp.stages` -- one layer's datapath (X1, X2, Y with its operand
  convertors, core and LUT, the output convertor) in numpy through the stages
  of :mod:`sim.num.sdp`;
* :mod:`~sim.sdp.pipeline` -- that datapath over a whole cube in cache-sized
  channel blocks (threads for large cubes), with its counters;
* :class:`sim.num.lut.LutRam` -- the LE/LO LUT RAM behind S_LUT_ACCESS_CFG/DATA;
* :mod:`~sim.sdp.engine` -- the engine (standalone layers) and
  :func:`~sim.sdp.engine.process_sdp`, the on-the-fly entry point CACC calls.
"""
