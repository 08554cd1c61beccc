"""Record a run driven by software (NVIDIA's firmware) as a replayable ``.cfg`` trace.

The recorder sees every CSB write and read the firmware makes, every
interrupt the firmware's handler serves (recorded as ``intr_notify`` waits,
so a replay waits where the firmware waited), the memories the runtime filled
before each task (``mem_load`` of a record ``.dat`` file written beside the
trace) and the checks it asks for (``check_crc`` of a region, computed from the
machine's memory at that moment).  ``nvdla-sim run`` replays the result, as
would NVIDIA's own trace player on RTL.
"""

from __future__ import annotations

from pathlib import Path

from ..dram import format_record_dat, write_atomically

RAM_NAMES = {0: "sec_mem", 1: "pri_mem", "sec_mem": "sec_mem", "pri_mem": "pri_mem"}
RECORD_BYTES = 32  # bytes per .dat record line


class TraceRecorder:
    def __init__(self, machine):
        self.machine = machine
        self.lines: list[str] = [f"// recorded by nvdla-sim (config {machine.config.name})"]
        self.files: dict[str, str] = {}
        self.syncs = 0

    def comment(self, text: str) -> None:
        self.lines.append(f"// {text}")

    def _name(self, addr: int) -> str:
        return self.machine.regfile.register_at(addr).full_name

    def reg_write(self, addr: int, value: int) -> None:
        self.lines.append(f"reg_write({self._name(addr)}, {value & 0xFFFFFFFF:#x});")

    def reg_read(self, addr: int, value: int) -> None:
        self.lines.append(f"reg_read({self._name(addr)}, {value & 0xFFFFFFFF:#x});")

    def interrupt(self, machine) -> None:
        """The firmware's handler is about to serve the pending interrupts: wait for each."""
        status = machine.interrupt_status()
        reg = machine.regfile.register("NVDLA_GLB.S_INTR_STATUS_0")
        for f in reg.fields:
            if status >> f.lsb & 1 and "_DONE_STATUS" in f.name:
                source, _, group = f.name.rpartition("_DONE_STATUS")
                self.syncs += 1
                self.lines.append(f"intr_notify({source}_{group}, sync_id_{self.syncs});")

    def load_memory(self, ram, addr: int, data: bytes) -> None:
        name = f"mem_{len(self.files):03d}_{addr:x}.dat"
        self.files[name] = format_record_dat(bytes(data), RECORD_BYTES)
        self.lines.append(f'mem_load({RAM_NAMES[ram]}, {addr:#x}, "{name}");')

    def check_crc(self, ram, addr: int, size: int) -> None:
        crc = self.machine.memory(RAM_NAMES[ram]).crc32(addr, size)
        self.syncs += 1
        mem = 1 if RAM_NAMES[ram] == "pri_mem" else RAM_NAMES[ram]  # 1: NVIDIA's pri_mem
        self.lines.append(f"check_crc(sync_id_{self.syncs}, {mem}, {addr:#x}, {size:#x}, "
                          f"{crc:#010x});")

    def save(self, path: str | Path) -> Path:
        """Write the trace and its memory files (each file whole or not at all)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            write_atomically(path.parent / name, text)
        write_atomically(path, "\n".join(self.lines) + "\n")
        return path
