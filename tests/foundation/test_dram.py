"""Sparse memory, .dat formats, fill patterns."""

import zlib

import numpy as np
import pytest

from sim.dram import (
    Memory,
    fill_pattern,
    format_hex_dat,
    format_record_dat,
    read_hex_dat,
    read_record_dat,
)
from sim.errors import SimError


def test_unwritten_bytes_read_zero_and_writes_cross_pages():
    mem = Memory()
    assert mem.read(0x1234_5678_0000, 16) == bytes(16)
    data = np.arange(10000, dtype=np.uint32).view(np.uint8)
    mem.write(0xFFF0, data)
    assert np.array_equal(mem.read_array(0xFFF0, data.size), data)
    assert mem.read(0xFFF0 - 4, 4) == bytes(4)


def test_gather_scatter():
    mem = Memory()
    mem.write(100, bytes(range(50)))
    offs = np.array([[0, 10], [49, 3]])
    assert mem.gather(100, offs).tolist() == [[0, 10], [49, 3]]
    mem.scatter(100, np.array([1, 2]), np.array([200, 201], dtype=np.uint8))
    assert mem.read(100, 4) == bytes([0, 200, 201, 3])


def test_crc_matches_zlib():
    mem = Memory()
    payload = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8)
    mem.write(0x8000_0000, payload)
    assert mem.crc32(0x8000_0000, 6000) == zlib.crc32(payload.tobytes() + bytes(1000))


def test_access_outside_memory_is_an_error():
    mem = Memory("pri_mem", address_bits=32)
    with pytest.raises(SimError, match="outside"):
        mem.write(0xFFFF_FFFE, bytes(4))


@pytest.mark.parametrize(
    "pattern, addr, expect",
    [
        ("ALL_ZERO", 0, [0, 0, 0, 0]),
        ("ONES", 0, [0xFF] * 4),
        ("AFIVE", 0, [0xA5] * 4),
        ("FIVEA", 0, [0x5A] * 4),
        ("ADDR", 0x1000, [0x00, 0x10, 0x00, 0x00]),
        ("ADDR", 0x1006, [0x00, 0x00, 0x08, 0x10]),
    ],
)
def test_fill_patterns(pattern, addr, expect):
    assert fill_pattern(pattern, addr, 4).tolist() == expect


def test_random_fill_is_seeded():
    a = fill_pattern("RANDOM", 0, 64, seed=3)
    assert np.array_equal(a, fill_pattern("RANDOM", 0, 64, seed=3))
    assert not np.array_equal(a, fill_pattern("RANDOM", 0, 64, seed=4))


def test_unknown_pattern():
    with pytest.raises(SimError, match="pattern"):
        fill_pattern("STRIPES", 0, 4)


def test_record_dat_round_trip(tmp_path):
    data = bytes(range(37))
    path = tmp_path / "x.dat"
    path.write_text(format_record_dat(data))
    records = read_record_dat(path)
    buf = bytearray(37)
    for off, payload in records:
        buf[off : off + len(payload)] = payload
    assert bytes(buf) == data


def test_hex_dat_round_trip(tmp_path):
    data = bytes(range(70))
    path = tmp_path / "x.dat"
    path.write_text(format_hex_dat(0x8000, data))
    assert read_hex_dat(path) == data


@pytest.mark.parametrize(
    "text, where",
    [
        ("{\n{offset:0x0, size:2, payload:0x01} ,\n}\n", ":2:"),
        ("{\n{offset:0x0, size:1, payload:0x01} ,\ngarbage\n}\n", ":3:"),
        ("{\n{offset:0x0, size:1, payload:0xzz} ,\n}\n", ":2:"),
    ],
)
def test_malformed_record_dat_names_the_line(tmp_path, text, where):
    path = tmp_path / "bad.dat"
    path.write_text(text)
    with pytest.raises(SimError, match=where):
        read_record_dat(path)


def test_malformed_hex_dat_names_the_line(tmp_path):
    path = tmp_path / "bad.dat"
    path.write_text("0x01 0x02\n0x03 0xgg\n")
    with pytest.raises(SimError, match=r"bad.dat:2:"):
        read_hex_dat(path)


@pytest.mark.parametrize("name, fmt", [("m.bin", "hex"), ("m.dat", "hex"), ("m.dat", "records")])
def test_dump_and_load_files(tmp_path, name, fmt):
    mem = Memory()
    data = np.random.default_rng(1).integers(0, 256, 300, dtype=np.uint8)
    mem.write(0x8000_0010, data)
    path = tmp_path / name
    mem.dump_file(0x8000_0010, 300, path, dat_format=fmt)
    other = Memory()
    assert other.load_file(0x100, path) == 300
    assert np.array_equal(other.read_array(0x100, 300), data)


def test_dump_file_rejects_unknown_format(tmp_path):
    with pytest.raises(SimError, match="hex or records"):
        Memory().dump_file(0, 4, tmp_path / "x.dat", dat_format="csv")
    assert not (tmp_path / "x.dat").exists()


@pytest.mark.parametrize("header, base", [("040", 40), ("0x40", 0x40), ("007", 7)])
def test_word_file_header_numbers_with_leading_zeros(tmp_path, header, base):
    """Found by tools/fuzz.py: a decimal with leading zeros was a Python ValueError."""
    from sim.dram import read_memory_file

    path = tmp_path / "w.hex"
    path.write_text(f"// start_address = {header}\n0102\n")
    addr, data = read_memory_file(path)
    assert addr == base and data == b"\x02\x01"
