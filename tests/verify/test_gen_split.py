"""nvdla-sim gen: PDP layers pooled in column splits (``split``).

Split specs run; the split registers gen writes, decoded back, are the splits
asked for; a split layer pools exactly what the same layer in one pass pools;
a layer wider than the line buffer needs ``split``; illegal splits are refused.
"""

from __future__ import annotations

import pytest

from sim import regs
from sim.cli import main
from sim.configs import get_config
from sim.errors import SimError
from sim.gen import generate
from sim.memfiles import read_hex_dat

from .gen_helpers import assert_refused, write_spec, written

REGS = regs.load()


def _spec(tmp_path, body: str, config: str = "nv_full", name: str = "spec"):
    return write_spec(tmp_path, body, config, seed=9, name=name, head='unit = "pdp"\n')


def _fields(folder, unit: str) -> dict[str, int]:
    return written(folder, unit)[0]


WIDE = 'precision = "int16"\ninput = [16, 6, 300]\nkernel = [3, 3]\nstride = [2, 2]\n'
RUNS = {
    "auto_wide_int16": (WIDE + 'pad = [1, 1, 1, 1]\nmethod = "average"\npad_value = -9\n'
                        'split = "auto"', "nv_full"),
    "four_fp16_padded": ('precision = "fp16"\ninput = [20, 7, 90]\nkernel = [2, 5]\n'
                         'stride = [1, 3]\npad = [2, 0, 0, 1]\nsplit = 4', "nv_full"),
    "explicit_int8_wide_kernel": ('input = [20, 7, 90]\nkernel = [3, 7]\nstride = [2, 2]\n'
                                  'pad = [3, 3, 1, 1]\nmethod = "min"\nsplit = [10, 7, 7]',
                                  "nv_full"),
    "two_gapped_stride": ('input = [9, 5, 40]\nkernel = [2, 2]\nstride = [3, 3]\nsplit = [5, 8]',
                          "nv_small"),
    "auto_nv_small": ('input = [8, 4, 200]\nkernel = [1, 2]\nstride = [1, 1]\nsplit = "auto"',
                      "nv_small"),
    # a stride wider than the kernel: PARTIAL_WIDTH's 1024 input columns want more splits
    # than the line buffer does
    "auto_wide_stride": ('input = [8, 1, 2304]\nkernel = [1, 8]\nstride = [1, 9]\n'
                         'split = "auto"', "nv_full"),
    "auto_long_nv_small": ('input = [8, 3, 2623]\nmethod = "average"\nkernel = [1, 2]\n'
                           'stride = [1, 2]\npad = [1, 0, 0, 0]\nsplit = "auto"', "nv_small"),
}


@pytest.mark.parametrize("name", RUNS)
def test_split_specs_pass_run(tmp_path, name):
    body, config = RUNS[name]
    folder = tmp_path / config / name
    assert main(["gen", str(_spec(tmp_path, body, config)), "-o", str(folder)]) == 0
    for trace in (folder / f"{name}.cfg", folder / "input.txn"):
        assert main(["run", str(trace)]) == 0


def _out_widths(f: dict) -> tuple:
    n = f["split_num"] + 1
    first, mid, last = (f[f"partial_width_out_{k}"] + 1 for k in ("first", "mid", "last"))
    return (first, *[mid] * (n - 2), last) if n > 1 else (f["cube_out_width"] + 1,)


def test_split_registers_are_the_spec(tmp_path):
    body, config = RUNS["explicit_int8_wide_kernel"]
    folder = tmp_path / "out"
    generate(_spec(tmp_path, body, config), folder, fmt="cfg")
    pdp, rdma = _fields(folder, "NVDLA_PDP"), _fields(folder, "NVDLA_PDP_RDMA")
    # 90 columns padded 3 + 3: (96 - 7) // 2 + 1 = 45 output columns, 10 + 4 x 7 + 7
    assert _out_widths(pdp) == (10, 7, 7, 7, 7, 7)
    assert pdp["split_num"] == rdma["split_num"] == 5
    ins = [pdp[f"partial_width_in_{k}"] for k in ("first", "mid", "last")]
    assert ins == [rdma[f"partial_width_in_{k}"] for k in ("first", "mid", "last")]
    # first: its 10 windows less the left padding; middle: 7 windows' new columns
    assert (ins[0] + 1, ins[1] + 1) == ((10 - 1) * 2 + 7 - 3, 7 * 2)


def test_auto_splits_fit_the_line_buffer(tmp_path):
    body, config = RUNS["auto_wide_int16"]
    folder = tmp_path / "out"
    generate(_spec(tmp_path, body, config), folder, fmt="cfg")
    widths = _out_widths(_fields(folder, "NVDLA_PDP"))
    assert len(widths) > 1 and sum(widths) == 150
    cap = get_config(config).pdp_line_buffer_columns  # an upper bound of the rule's limit
    assert max(widths) <= cap


@pytest.mark.parametrize("name", ["auto_wide_int16", "auto_nv_small", "auto_wide_stride",
                                  "auto_long_nv_small"])
def test_auto_takes_the_fewest_splits_that_pass(tmp_path, name):
    body, config = RUNS[name]
    generate(_spec(tmp_path, body, config), tmp_path / "o", fmt="cfg")
    count = _fields(tmp_path / "o", "NVDLA_PDP")["split_num"] + 1
    assert count > 1
    fewer = body.replace('split = "auto"', f"split = {count - 1}")
    with pytest.raises(SimError, match=r"\.(split|input): "):
        generate(_spec(tmp_path, fewer, config, name="fewer"), tmp_path / "o2", fmt="cfg")


def test_auto_splits_nothing_that_fits(tmp_path):
    generate(_spec(tmp_path, 'input = [8, 4, 40]\nsplit = "auto"'), tmp_path / "o", fmt="cfg")
    assert _fields(tmp_path / "o", "NVDLA_PDP")["split_num"] == 0


@pytest.mark.parametrize("split", ["2", "3", "[4, 3, 3]", "[1, 15]", "7", "16"])
def test_a_split_layer_pools_what_one_pass_pools(tmp_path, split):
    """The same layer in one pass and in splits: different registers, the same bytes."""
    body = ('input = [12, 5, 31]\nkernel = [3, 4]\nstride = [1, 2]\npad = [2, 1, 1, 0]\n'
            'method = "average"\npad_value = 5\n')
    outs, split_nums = [], []
    for i, extra in enumerate(("", f"split = {split}")):
        folder = tmp_path / f"o{i}"
        generate(_spec(tmp_path, body + extra, name=f"s{i}"), folder, fmt="both")
        outs.append(read_hex_dat(folder / "layer0_out.dat"))
        split_nums.append(_fields(folder, "NVDLA_PDP")["split_num"])
    assert split_nums[0] == 0 and split_nums[1] > 0
    assert outs[0] == outs[1]


def test_a_wide_layer_needs_split(tmp_path):
    with pytest.raises(SimError, match=r"\)\.input: .* output columns .* exceed the line "
                       r"buffer"):
        generate(_spec(tmp_path, WIDE), tmp_path / "o1")
    generate(_spec(tmp_path, WIDE + 'split = "auto"'), tmp_path / "o2", fmt="cfg")


ILLEGAL = [
    ('input = [8, 4, 40]\nkernel = [2, 2]\nsplit = 30', r"\.split: 30 splits of 20 output "
     r"columns: each split needs one"),
    ('input = [8, 4, 40]\nkernel = [2, 2]\nsplit = [5, 6]', r"\.split: 5 \+ 6 output columns "
     r"are not the layer's 20"),
    ('input = [8, 4, 40]\nkernel = [2, 2]\nsplit = [5, 4, 4]', r"\.split: 20 output columns "
     r"less 5 \+ 4 leave 11: not a whole number of middle splits of 4"),
    ('input = [8, 4, 40]\nkernel = [2, 2]\nsplit = [1, 2, 3, 4]', r"\.split: expected the "
     r"output columns \[first, last\] or \[first, mid, last\]"),
    ('input = [8, 4, 40]\nkernel = [2, 2]\nsplit = "many"', r"\.split: expected \"auto\""),
    ('input = [8, 8, 8192]\nkernel = [8, 2]\nstride = [1, 1]\nsplit = "auto"',
     r"\.split: 8191 output columns need 512 splits of the line buffer's 16: more than "
     r"SPLIT_NUM's 256"),
    ('input = [8, 4, 40]\nkernel = [2, 2]\nsplit = 300', r"\.split: 300 is outside 1\.\.256"),
    ('input = [8, 4, 40]\nkernel = [2, 5]\nstride = [1, 1]\npad = [4, 0, 0, 0]\n'
     'split = [1, 39]', r"\.split: the first split's 1 input column\(s\) do not hold the "
     r"4-column kernel-stride overlap"),
    ('precision = "int16"\ninput = [8, 4, 300]\nkernel = [8, 2]\nstride = [1, 1]\n'
     'split = [2, 297]', r"\.split: 297 output columns .* exceed the line buffer's"),
]


@pytest.mark.parametrize("body, message", ILLEGAL)
def test_illegal_splits_name_key_and_rule(tmp_path, capsys, body, message):
    assert_refused(tmp_path, capsys, _spec(tmp_path, body), message)
