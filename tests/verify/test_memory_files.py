"""Memory files for RTL benches: every dump format reads back to the same bytes."""

import numpy as np
import pytest

from sim.cli import main
from sim.errors import SimError
from sim.memfiles import (
    MEMORY_FILE_FORMATS,
    format_words,
    memory_file_name,
    read_hex_dat,
    read_memory_file,
    write_memory_file,
)

from .conftest import EXAMPLES

CASES = [(fmt, word, addr, size)
         for fmt in MEMORY_FILE_FORMATS
         for word in (1, 4, 32)
         for addr, size in ((0x80000000, 64), (0x1003, 45))]


@pytest.mark.parametrize("fmt, word, addr, size", CASES)
def test_round_trip(tmp_path, fmt, word, addr, size):
    data = np.random.default_rng(size + word).integers(0, 256, size, dtype=np.uint8).tobytes()
    path = tmp_path / memory_file_name("out.dat", fmt)
    write_memory_file(path, addr, data, fmt, word)
    got_addr, got = read_memory_file(path)
    assert got == data
    assert got_addr == (None if fmt == "bin" else addr)


@pytest.mark.parametrize("word", [1, 2, 4, 16])
def test_words_are_little_endian(word):
    data = bytes(range(1, 2 * word + 1))
    words = format_words(data, word)
    assert len(words) == 2
    assert int(words[0], 16) == int.from_bytes(data[:word], "little")
    assert int(words[1], 16) == int.from_bytes(data[word:], "little")


def test_foreign_readmemh(tmp_path):
    """A bench's own $readmemh file: @ word addresses, comments, no header of ours."""
    path = tmp_path / "dut.mem"
    path.write_text("// dumped by a testbench\n@20\n04030201 08070605\n@22 // next run\n0c0b0a09\n")
    addr, data = read_memory_file(path)
    assert addr == 0x20 * 4
    assert data == bytes(range(1, 13))


@pytest.mark.parametrize("text, reason", [("@zz\n00\n", "word address"),
                                          ("00\n0g\n", "hex word"),
                                          ("00\n0102\n", "wider")])
def test_bad_word_files(tmp_path, text, reason):
    path = tmp_path / "bad.hex"
    path.write_text(text)
    with pytest.raises(SimError, match=reason):
        read_memory_file(path)


@pytest.mark.parametrize("fmt, word", [("dat", 1), ("bin", 1), ("hex", 8), ("readmemh", 32)])
def test_run_dump_formats(tmp_path, fmt, word):
    trace = EXAMPLES / "nv_full" / "sdp_3x5x12_mul_relu_fp16"
    out = tmp_path / "dump"
    assert main(["run", str(trace), "--dump-dir", str(out), "--dump-format", fmt,
                 "--word-bytes", str(word)]) == 0
    (path,) = list(out.iterdir())
    assert path.name == memory_file_name("expected.dat", fmt)
    _, data = read_memory_file(path)
    golden = read_hex_dat(trace / "expected.dat")
    assert data == golden[: len(data)] and len(data) > 0


def test_run_rejects_bad_word_width(tmp_path, capsys):
    trace = EXAMPLES / "nv_full" / "sdp_3x5x12_mul_relu_fp16"
    assert main(["run", str(trace), "--word-bytes", "0"]) == 2
    assert "word width" in capsys.readouterr().err
