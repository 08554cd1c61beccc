"""Register programming helpers: write a layer's registers and memory the way firmware would.

Used by tests, benchmarks, the example-trace tools and ``nvdla-sim gen``.  This
package sits above the machine and the units (it drives a
:class:`~sim.machine.Machine` through its register file); no unit imports it.

* :mod:`sim.program.registers` -- write a register from named fields;
* :mod:`sim.program.conv` -- a direct-convolution layer (CDMA .. CACC);
* :mod:`sim.program.conv_modes` -- image-input and Winograd layers;
* :mod:`sim.program.sdp` -- a standalone SDP layer, and the SDP on the fly
  behind the convolution pipeline.
"""
