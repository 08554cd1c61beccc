"""A stand-in for NVIDIA's Verilated testbench, for tests on machines without it.

It reads the binary command stream as the real bench does (opcode byte, then
little-endian 32-bit fields), keeps a memory of the loads, and prints the
real bench's lines.  It has no NVDLA inside: a dump writes back the bytes the
command expects.  FAKE_BENCH_MODE scripts a misbehaving device:

* ``pass``: every read answers what it expects, every wait gets its interrupt;
* ``corrupt``: the first dumped region has one byte changed (offset FAKE_BENCH_BYTE);
* ``badread``: the first full-mask read answers a wrong value, ten times;
* ``hang``: the second wait never gets its interrupt (the bench then prints nothing).

Usage: fake_bench.py TRACE_BIN
"""

import os
import struct
import sys
import time


def fields(blob, pos, n):
    return struct.unpack_from(f"<{n}I", blob, pos), pos + 4 * n


def main() -> int:
    blob = open(sys.argv[1], "rb").read()
    mode = os.environ.get("FAKE_BENCH_MODE", "pass")
    corrupt_at = int(os.environ.get("FAKE_BENCH_BYTE", "0"))
    pos, tick, waits, corrupted, bad_read = 0, 0, 0, False, False
    output_failed = read_failed = False
    print("running trace...")
    while True:
        op = blob[pos]
        pos += 1
        tick += 2
        if op == 0xFF:
            break
        if op == 1:
            print(f"({tick}) waiting for interrupt...", flush=True)
            waits += 1
            if mode == "hang" and waits == 2:
                time.sleep(3600)
            print(f"({tick}) interrupt!")
        elif op == 2:
            (addr, value), pos = fields(blob, pos, 2)
            print(f"({tick}) write to nvdla: addr {addr:08x}, data {value:08x}")
        elif op == 3:
            (addr, mask, value), pos = fields(blob, pos, 3)
            wrong = mode == "badread" and mask == 0xFFFFFFFF and not bad_read
            for _ in range(10 if wrong else 1):
                print(f"({tick}) read from nvdla: addr {addr:08x}")
                print(f"({tick}) read response from nvdla: {(value ^ 1 if wrong else value):08x}")
                if wrong:
                    print(f"({tick}) invalid response -- trying again")
            if wrong:
                print(f"({tick}) ERROR: timed out reading response")
                bad_read = read_failed = True
        elif op == 4:
            (addr, length), pos = fields(blob, pos, 2)
            data = bytearray(blob[pos : pos + length])
            pos += length
            (name_len,), pos = fields(blob, pos, 1)
            name = blob[pos : pos + name_len].decode()
            pos += name_len
            if mode == "corrupt" and not corrupted:
                data[corrupt_at] ^= 0x40
                corrupted = output_failed = True
            print(f"AXI: dumping memory to {name}")
            with open(name, "wb") as f:
                f.write(data)
        elif op == 5:
            (_addr, length), pos = fields(blob, pos, 2)
            pos += length
        else:
            print(f"unknown command {op}")
            return 134
    print(f"done at {tick} ticks")
    if output_failed:
        print("*** FAIL: test failed due to output mismatch")
        return 1
    if read_failed:
        print("*** FAIL: test failed due to CSB read mismatch")
        return 2
    print("*** PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
