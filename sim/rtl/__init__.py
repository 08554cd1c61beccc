"""Run a trace on an RTL engineer's NVDLA: NVIDIA's Verilator testbench (``VNV_nvdla``).

:mod:`.commands` writes the testbench's binary command stream, :mod:`.plan`
turns a trace (``.cfg`` or ``input.txn``) and the simulator's replay of it
into those commands, :mod:`.bench` runs the testbench and reads each check's
verdict from what it prints.  ``nvdla-sim rtl`` is the command line.
"""
