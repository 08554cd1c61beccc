"""The compiled fp16 SDP pass (sim.sdp.fused_fp) gives fast_fp.run's words and suspect mask.

fused_fp.run and fast_fp.run take the same datapath and block and must return the
same mask of elements the rules redo and, on every other element, the same fp16 words
bit for bit (a suspect's word is replaced by the rules' in the datapath): on every
combination of X1/X2/Y settings that fast_fp applies to, fp16 input from memory and
fp32 input from CACC, operands per layer (registers), per channel and per element,
on inputs crowded with NaN, Inf, denormals, zeros of both signs and values at the fp32
and fp16 overflow and underflow boundaries.  The scalar steps of sim.num.fp32_fast are
also held to their array twins in sim.num.vector_fp directly.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np
import pytest
from sim.regs.enums import FP16, AluAlgo

from sim import jit
from sim.jit import njit
from sim.num import fp32_fast, fpcore, vector_fp
from sim.program.sdp import run_sdp
from sim.sdp import fast_fp, fused_fp, pipeline, stages

from .test_fast_fp import LAYERS, crowded_fp16, f16, f32, negated

SEED = 20261126
# the datapath's cubes in the combination test: rows shorter than fused_fp.SHORT_ROW run
# as one row (a fully connected layer's one pixel, a small map), longer ones row by row
CUBES = {"one pixel": (5, 1, 1), "short rows": (5, 3, 4), "long rows": (5, 6, 6)}

# fp32 patterns float32 meets apart from NVDLA, and the edges of what it meets alike
SPECIAL32 = [
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000,  # zeros, Inf
    0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FA00000, 0xFF801FFF,  # quiet and signalling NaNs
    0x00000001, 0x807FFFFF, 0x00400000,  # fp32 denormals
    0x00800000, 0x80FFFFFF, 0x01000000, 0x81000001,  # the underflow boundary band
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000,  # the largest normals
    0x477FE000, 0xC77FEFFF, 0x477FF000, 0x477FF001,  # fp16's largest value, to Inf
    0x38800000, 0xB87FFFFF, 0x38000000, 0x387FE000, 0x387FF000,  # fp16's smallest normal
    0x33800000, 0x33000000, 0xB3000001, 0x337FFFFF, 0x32FFFFFF,  # fp16's smallest denormal
    0x3F800000, 0xBF800000,  # +-1
]


def crowded_fp32(rng, shape) -> np.ndarray:
    """fp32 patterns (int64): half of them in fp16's range, a quarter over every exponent,
    a quarter from SPECIAL32."""
    n = int(np.prod(shape))
    expo = np.where(rng.random(n) < 0.5, rng.integers(100, 145, n), rng.integers(1, 255, n))
    bits = (rng.integers(0, 2, n) << 31) | (expo << 23) | rng.integers(0, 1 << 23, n)
    odd = rng.random(n) < 0.25
    bits[odd] = rng.choice(SPECIAL32, n)[odd]
    return bits.astype(np.int64).reshape(shape)


def assert_same_pass(path, v: np.ndarray, channels=slice(None), pixels=slice(None),
                     label="") -> np.ndarray:
    """fused_fp.run against fast_fp.run on the block [:, channels, pixels] of ``v``, with the
    operands shaped as Datapath.run shapes them; returns the suspect mask."""
    block = v[:, channels, pixels]

    def operand(op):
        return path._operand(op, channels, pixels)

    want_h, want_suspect = fast_fp.run(path, block, operand)
    got_h, got_suspect = fused_fp.run(path, block, operand)
    assert got_h.shape == block.shape and got_h.dtype == np.uint16, label
    np.testing.assert_array_equal(got_suspect, want_suspect, err_msg=f"suspect: {label}")
    # the words the datapath keeps; the suspects' it replaces by the rules' (there a NaN
    # meeting a NaN keeps one of them, by the compiler's choice of operand order, which
    # differs between numpy's loops and LLVM's: a sign that ReLU then reads)
    keep = ~want_suspect
    np.testing.assert_array_equal(got_h[keep], want_h[keep], err_msg=f"words: {label}")
    # the counts the datapath takes from the kernel: suspects, and of the kept words the
    # saturated and the NaNs
    tally = fused_fp.run_tallied(path, block, operand)[2]
    assert tally.tolist() == [np.count_nonzero(want_suspect),
                              *stages._fp16_counts(want_h[keep]).tolist()], f"tally: {label}"
    return want_suspect


# --- layers: decoded from registers once, then varied stage by stage ---------------
@functools.cache
def _template():
    """(layer, lut) of an fp16 layer programmed and decoded as run_sdp does."""
    seen = {}
    real = pipeline.run_pipeline

    def capture(layer, data, operands, lut, from_memory=True, **options):
        seen.update(layer=layer, lut=lut)
        return real(layer, data, operands, lut, from_memory, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "run_pipeline", capture)
        run_sdp("nv_full", np.zeros((2, 2, 2), np.uint16), in_prec="fp16", out_prec="fp16",
                x1=dict(bypass=0), x2=dict(bypass=0), y=dict(bypass=0))
    return seen["layer"], seen["lut"]


def _x_options() -> list[dict]:
    """Every X stage fast_fp applies to: off, or any ALU, multiplier and ReLU setting."""
    out = [dict(bypass=True)]
    for alu, mul, relu in itertools.product((None, AluAlgo.MAX, AluAlgo.MIN, AluAlgo.SUM),
                                            (None, "mul", "prelu"), (False, True)):
        out.append(dict(bypass=False, alu_bypass=alu is None, alu_algo=int(alu or 0),
                        mul_bypass=mul is None, mul_prelu=mul == "prelu", relu_bypass=not relu))
    return out


def _y_options() -> list[dict]:
    """Every Y stage fast_fp applies to: off, or any multiplier and ALU setting, LUT off."""
    out = [dict(bypass=True)]
    for mul, alu in itertools.product((None, "mul", "prelu"),
                                      (None, AluAlgo.MAX, AluAlgo.MIN, AluAlgo.SUM)):
        out.append(dict(bypass=False, lut_bypass=True, alu_bypass=alu is None,
                        alu_algo=int(alu or 0), mul_bypass=mul is None,
                        mul_prelu=mul == "prelu"))
    return out


X_OPTIONS, Y_OPTIONS = _x_options(), _y_options()
MODES = (stages.OP_REGISTER, stages.OP_CHANNEL, stages.OP_ELEMENT)


def _stream(rng, mode: int, fp16: bool, cube: tuple) -> tuple[np.ndarray, int]:
    """One operand stream for the ``cube`` (channels, height, width) as the SDP_RDMA reader
    hands it over: (values, mode)."""
    cp, h, w = cube
    n = {stages.OP_REGISTER: 1, stages.OP_CHANNEL: cp, stages.OP_ELEMENT: cp * h * w}[mode]
    if not fp16:
        return crowded_fp32(rng, n), mode
    words = crowded_fp16(rng, n).astype(np.int64)
    return np.where(rng.random(n) < 0.5, words, (words ^ 0x8000) - 0x8000), mode  # signed too


def _layer_and_streams(rng, x1: dict, x2: dict, y: dict, modes, cube: tuple) -> tuple:
    """A layer with these stages, and operand streams for the ``cube`` (channels, height,
    width) in these modes (x1, x2, y; alu, mul).
    A Y operand from memory goes through Y's convertor (fp16 widened); a Y register, or a
    Y memory operand with the source bit clear, is any fp32 pattern."""
    layer, lut = _template()
    from_mem = [mode != stages.OP_REGISTER and rng.random() < 0.5 for mode in modes[2]]
    y = dict(y, alu_src_mem=from_mem[0], mul_src_mem=from_mem[1], alu_cvt_bypass=True,
             mul_cvt_bypass=True)
    streams = {name: tuple(_stream(rng, mode, fp16, cube) for mode, fp16 in
                           zip(mode_pair, (True, True) if name != "y" else from_mem,
                               strict=True))
               for name, mode_pair in zip(("x1", "x2", "y"), modes, strict=True)}
    layer = dataclasses.replace(layer, x1=dataclasses.replace(layer.x1, **x1),
                                x2=dataclasses.replace(layer.x2, **x2),
                                y=dataclasses.replace(layer.y, **y))
    assert fast_fp.applies(layer, FP16.code, FP16.code)
    return layer, streams, lut


def _cube(rng, fp16_in: bool, shape) -> np.ndarray:
    return crowded_fp16(rng, shape) if fp16_in else crowded_fp32(rng, shape)


def test_the_cubes_take_both_row_paths():
    short = {name: cp > 1 and h * w < fused_fp.SHORT_ROW for name, (cp, h, w) in CUBES.items()}
    assert short == {"one pixel": True, "short rows": True, "long rows": False}


@pytest.mark.parametrize("cube", CUBES)
@pytest.mark.parametrize("fp16_in", [True, False], ids=["fp16 input", "fp32 input"])
def test_every_stage_combination(fp16_in, cube):
    """Every X1 option against every Y option, X2 taking each option in turn, operands
    in random modes."""
    rng = np.random.default_rng(SEED + fp16_in)
    cp, h, w = CUBES[cube]
    kept = []
    for i, (x1, y) in enumerate(itertools.product(X_OPTIONS, Y_OPTIONS)):
        x2 = X_OPTIONS[(7 * i) % len(X_OPTIONS)]
        modes = rng.choice(MODES, (3, 2))
        layer, streams, lut = _layer_and_streams(rng, x1, x2, y, modes, CUBES[cube])
        path = pipeline.datapath(layer, streams, lut, fp16_in, cp, h, w)
        v = _cube(rng, fp16_in, (2, cp, h * w))
        suspect = assert_same_pass(path, v, label=f"x1={x1} x2={x2} y={y} modes={modes}")
        kept.append(1 - suspect.mean())
    assert np.mean(kept) > 0.2  # the inputs are not so crowded that float32 never stands


def _captured(spec: dict, cube: np.ndarray) -> tuple:
    """(layer, operand streams, lut, data) as run_sdp hands them to run_pipeline."""
    seen = {}
    real = pipeline.run_pipeline

    def capture(layer, data, operands, lut, from_memory=True, **options):
        seen.update(layer=layer, operands=operands, lut=lut, data=data)
        return real(layer, data, operands, lut, from_memory, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "run_pipeline", capture)
        run_sdp("nv_full", cube, in_prec="fp16", out_prec="fp16", **spec)
    return seen["layer"], seen["operands"], seen["lut"], seen["data"]


# boundary layers beyond test_fast_fp's: operands in each mode at the edges
EDGE_LAYERS = {
    "x1 max with +0 and -0 per channel": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=0, alu_src=1), bs="zeros"),
    "x1 min with the negation per element, then relu": dict(
        x1=dict(bypass=0, alu_bypass=0, alu_algo=1, alu_src=1, relu_bypass=0), bs="negated"),
    "x2 prelu per element, y prelu": dict(
        x2=dict(bypass=0, mul_bypass=0, prelu=1, mul_src=1),
        y=dict(bypass=0, mul_bypass=0, prelu=1, mul_operand=f32(-3.0)), bn="crowded"),
    "x1 mul to fp16's smallest denormal": dict(
        x1=dict(bypass=0, mul_bypass=0, mul_operand=f16(2.0 ** -14)),
        y=dict(bypass=0, mul_bypass=0, mul_operand=f32(2.0 ** -10))),
    "y sum near fp16's largest value": dict(
        y=dict(bypass=0, alu_bypass=0, alu_algo=2, alu_operand=f32(65504.0 - 1.0))),
    "y max with the fp32 underflow boundary": dict(
        y=dict(bypass=0, alu_bypass=0, alu_algo=0, alu_operand=0x00FFFFFF)),
}
NAMED_LAYERS = {**LAYERS, **EDGE_LAYERS}


def _operand_array(kind: str, cube: np.ndarray, rng) -> np.ndarray:
    if kind == "negated":
        return negated(cube, rng)
    if kind == "zeros":
        return rng.choice(np.array([0x0000, 0x8000], np.uint16), cube.shape[0])
    return crowded_fp16(rng, cube.shape)


def _named_layer(name: str, rng) -> tuple:
    """LAYERS' run_sdp arguments (from test_fast_fp, or EDGE_LAYERS) decoded, with their
    operand streams read from memory."""
    spec, operands = dict(NAMED_LAYERS[name]), {}
    cube = crowded_fp16(rng, (32, 6, 7))
    for unit, stage in (("bs", "x1"), ("bn", "x2"), ("ew", "y")):
        cfg, kind = spec.get(stage, {}), spec.pop(unit, "crowded")
        if cfg.get("mul_src") or cfg.get("alu_src"):
            array = _operand_array(kind, cube, rng)
            operands[unit] = dict(array=array, use="mul" if cfg.get("mul_src") else "alu",
                                  size=2, per_element=array.ndim == 3)
    return _captured(dict(spec, operands=operands), cube)


@pytest.mark.parametrize("name", NAMED_LAYERS)
def test_boundary_layers(name):
    """test_fast_fp's layers and EDGE_LAYERS, on their fp16 cube and on an fp32 cube
    whose values are the fp16 cube's, exact, half of them nudged by one unit."""
    rng = np.random.default_rng(SEED + len(name))
    layer, streams, lut, data = _named_layer(name, rng)
    n, cp, h, w = data.shape
    fp16 = np.ascontiguousarray(data).reshape(n, cp, h * w)
    fp32 = vector_fp.fp16_to_fp32(fp16) + (rng.random(fp16.shape) < 0.5)
    for fp16_in, v in ((True, fp16), (False, fp32)):
        path = pipeline.datapath(layer, streams, lut, fp16_in, cp, h, w)
        assert_same_pass(path, v, label=name)


def _sum_and_max_layer(rng, elements: int, cp: int = 3):
    """(layer, lut, streams) of an fp16 layer whose X1 adds a per-element operand and
    multiplies by a per-channel one, X2 takes the max with a register operand and
    multiplies by a per-element one, Y off: every kind of operand, ``elements`` of a
    per-element one, ``cp`` channels."""
    layer, lut = _template()
    x = dict(bypass=False, alu_bypass=False, alu_algo=int(AluAlgo.SUM), mul_bypass=False,
             mul_prelu=False, relu_bypass=False)
    layer = dataclasses.replace(layer, x1=dataclasses.replace(layer.x1, **x),
                                x2=dataclasses.replace(layer.x2, **dict(x, alu_algo=0)),
                                y=dataclasses.replace(layer.y, bypass=True))
    streams = {"x1": ((crowded_fp16(rng, elements), stages.OP_ELEMENT),
                      (crowded_fp16(rng, cp), stages.OP_CHANNEL)),
               "x2": ((crowded_fp16(rng, 1), stages.OP_REGISTER),
                      (crowded_fp16(rng, elements), stages.OP_ELEMENT)),
               "y": ((np.zeros(1, np.int64), 0), (np.zeros(1, np.int64), 0))}
    return layer, lut, streams


def test_blocks_as_the_pipeline_cuts_them():
    """Blocks of channels, parts of a channel, images side by side (a strided block),
    rows longer than the kernel's piece, fp16 words in a wider dtype, read-only input."""
    rng = np.random.default_rng(SEED)
    cp, h, w = 3, 30, 50  # 1500 pixels: a row crosses PIECE
    layer, lut, streams = _sum_and_max_layer(rng, cp * h * w)
    read_only = crowded_fp16(rng, (2, cp, h * w))
    read_only.flags.writeable = False
    for fp16_in in (True, False):
        path = pipeline.datapath(layer, streams, lut, fp16_in, cp, h, w)
        v = _cube(rng, fp16_in, (2, cp, h * w))
        for channels, pixels in ((slice(None), slice(None)), (slice(1, 3), slice(None)),
                                 (slice(2, 3), slice(100, 1400)), (slice(0, 1), slice(7, 8)),
                                 (slice(1, 1), slice(None))):
            assert_same_pass(path, v, channels, pixels, label=(fp16_in, channels, pixels))
        if fp16_in:
            assert_same_pass(path, v.astype(np.int64), label="fp16 words as int64")
            assert_same_pass(path, read_only, label="read-only input")


def test_worth_it_only_with_numba_loaded_and_a_large_block(monkeypatch):
    size = fused_fp.MIN_ELEMENTS
    large, small = np.zeros((1, 4, size // 4), np.uint16), np.zeros((1, 1, size - 1), np.uint16)
    monkeypatch.setattr(jit, "_numba", None)
    assert not fused_fp.worth_it(large)
    monkeypatch.setattr(jit, "_numba", object())
    assert fused_fp.worth_it(large) and not fused_fp.worth_it(small)


# --- the scalar steps against their array twins ---------------------------------------
@njit
def _scalar_steps(a, b, out, agrees):
    """Every step of fp32_fast on the pairs (a[i], b[i]) of fp32 patterns: out/agrees
    columns add, add (operands unchecked), mul, mul (unchecked), max, min, relu,
    narrowing, widening (of a's low 16 bits), reads_as_ieee32, normal_result32."""
    for i in range(a.size):
        x, y = a[i], b[i]
        out[i, 0], agrees[i, 0] = fp32_fast.ieee_fp32_add(x, y, False)
        out[i, 1], agrees[i, 1] = fp32_fast.ieee_fp32_add(x, y, True)
        out[i, 2], agrees[i, 2] = fp32_fast.ieee_fp32_mul(x, y, False)
        out[i, 3], agrees[i, 3] = fp32_fast.ieee_fp32_mul(x, y, True)
        out[i, 4], agrees[i, 4] = fp32_fast.ieee_fp32_max(x, y, True)
        out[i, 5], agrees[i, 5] = fp32_fast.ieee_fp32_max(x, y, False)
        out[i, 6], agrees[i, 6] = fp32_fast.ieee_fp32_relu(x), True
        out[i, 7], agrees[i, 7] = fp32_fast.ieee_fp32_to_fp16(x)
        out[i, 8], agrees[i, 8] = fp32_fast.ieee_fp16_to_fp32(x & 0xFFFF)
        out[i, 9], agrees[i, 9] = 0, fp32_fast.reads_as_ieee32(x)
        out[i, 10], agrees[i, 10] = 0, fp32_fast.normal_result32(x)


def _array_steps(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same columns from sim.num.vector_fp."""
    ua, ub = a.astype(np.uint32), b.astype(np.uint32)
    true, zero = np.ones(a.size, bool), np.zeros(a.size, np.int64)
    columns = [vector_fp.ieee_fp32_add(ua, ub), vector_fp.ieee_fp32_add(ua, ub, alike=True),
               vector_fp.ieee_fp32_mul(ua, ub), vector_fp.ieee_fp32_mul(ua, ub, alike=True),
               vector_fp.ieee_fp32_max(ua, ub, True), vector_fp.ieee_fp32_max(ua, ub, False),
               (vector_fp.ieee_fp32_relu(ua), true), vector_fp.ieee_fp32_to_fp16(ua),
               vector_fp.ieee_fp16_to_fp32((a & 0xFFFF).astype(np.uint16)),
               (zero, vector_fp.reads_as_ieee32(ua)), (zero, vector_fp.normal_result32(ua))]
    return (np.stack([np.asarray(c[0], np.int64) for c in columns], axis=1),
            np.stack([np.broadcast_to(c[1], a.shape) for c in columns], axis=1))


def _rounding_edges() -> np.ndarray:
    """fp32 patterns around every fp16 rounding point of one exponent in three (normal,
    denormal and overflowing results): halfway, and one unit either side."""
    expo = np.arange(99, 146, 3)
    mant = np.arange(0, 1 << 23, 1 << 13)  # fp16 steps of a normal result
    points = ((expo[:, None] << 23) | (mant[None, :] + 0x1000)).ravel()
    return np.concatenate([points - 1, points, points + 1, points | (1 << 31)])


def test_scalar_steps_match_their_array_twins():
    """Each step's value and agreement flag, element for element, on every fp16 pattern,
    crowded fp32 pairs and fp32 values at fp16's rounding points."""
    rng = np.random.default_rng(SEED)
    every16 = np.arange(1 << 16, dtype=np.int64)
    edges = _rounding_edges()
    a = np.concatenate([every16, crowded_fp32(rng, 200_000), edges,
                        np.array(SPECIAL32, np.int64)])
    b = np.concatenate([crowded_fp32(rng, every16.size), crowded_fp32(rng, 200_000),
                        crowded_fp32(rng, edges.size), np.array(SPECIAL32[::-1], np.int64)])
    b[: a.size // 8] = a[: a.size // 8] ^ (1 << 31)  # exact cancellation, +-0 against -+0
    out, agrees = np.zeros((a.size, 11), np.int64), np.zeros((a.size, 11), bool)
    _scalar_steps(a, b, out, agrees)
    want_out, want_agrees = _array_steps(a, b)
    magnitude_a, magnitude_b = a & 0x7FFFFFFF, b & 0x7FFFFFFF
    two_nans = (magnitude_a > 0x7F800000) & (magnitude_b > 0x7F800000)
    for column in range(out.shape[1]):
        # which NaN of two a sum or product keeps is the compiler's choice (fp32_fast)
        same = ~two_nans if column < 4 else slice(None)
        np.testing.assert_array_equal(out[same, column], want_out[same, column],
                                      err_msg=str(column))
        np.testing.assert_array_equal(agrees[:, column], want_agrees[:, column],
                                      err_msg=str(column))


@njit
def _fast_and_rules(a, b, out, product):
    """fp32_fast.fp32_add (or fp32_mul: ``product``) in column 0 and fpcore.fp_add (fp_mul)
    in column 1 of the pairs (a[i], b[i])."""
    for i in range(a.size):
        if product:
            out[i, 0] = fp32_fast.fp32_mul(a[i], b[i])
            out[i, 1] = fpcore.fp_mul(a[i], b[i], 8, 23)
        else:
            out[i, 0] = fp32_fast.fp32_add(a[i], b[i])
            out[i, 1] = fpcore.fp_add(a[i], b[i], 8, 23)


@pytest.mark.parametrize("product", [False, True], ids=["fp32_add", "fp32_mul"])
def test_fp32_fast_gives_the_rules_bits(product):
    """fp32_add and fp32_mul (the processor's result where it is NVDLA's, else the rules')
    give fpcore's fp32 bits on every pair, two NaNs included (the rules take those):
    crowded pairs, exact cancellations, and the squares the LRN window sums add (and
    the LRN squares: each value times itself)."""
    rng = np.random.default_rng(SEED + 7)
    a = np.concatenate([crowded_fp32(rng, 300_000), np.array(SPECIAL32, np.int64)])
    b = np.concatenate([crowded_fp32(rng, 300_000), np.array(SPECIAL32[::-1], np.int64)])
    b[: a.size // 8] = a[: a.size // 8] ^ (1 << 31)  # exact cancellation, +-0 against -+0
    squares = a[a.size // 2:] & 0x7FFFFFFF  # non-negative, as squares are
    a[a.size // 2:], b[a.size // 2:] = squares, np.roll(squares, 1)
    if product:
        b[a.size // 4: a.size // 2] = a[a.size // 4: a.size // 2]  # squares
    out = np.zeros((a.size, 2), np.int64)
    _fast_and_rules(a, b, out, product)
    np.testing.assert_array_equal(out[:, 0], out[:, 1])
    assert np.mean(np.isin(a & 0x7F800000, [0, 0x7F800000])) < 0.3  # mostly ordinary


@pytest.mark.parametrize("cp, hw, block", [(8, 2048, 4096), (2, 10000, 5000)])
def test_suspects_redone_once_a_layer_as_block_by_block(cp, hw, block, monkeypatch):
    """run_pipeline leaves the compiled pass's suspects of every block to one pass of the
    rules (Datapath.redo_suspects): the output and counters of each block run on its own
    (run_into, the rules per block), on blocks of whole channels and of parts of one."""
    rng = np.random.default_rng(SEED + cp)
    layer, lut, streams = _sum_and_max_layer(rng, cp * hw, cp)
    fused_fp.run(pipeline.datapath(layer, streams, lut, True, cp, 1, hw),
                 np.zeros((1, 1, 1), np.uint16), lambda op: op)  # numba loaded: worth_it
    monkeypatch.setattr(pipeline, "BLOCK", block)
    monkeypatch.setattr(pipeline, "PARALLEL_MIN", 1 << 40)  # the blocks in this thread
    passes = []
    real = stages.Datapath.redo_suspects

    def redo_suspects(self, deferred):
        passes.append(len(deferred))
        return real(self, deferred)

    monkeypatch.setattr(stages.Datapath, "redo_suspects", redo_suspects)
    for fp16_in in (True, False):
        v = _cube(rng, fp16_in, (1, cp, hw))
        path = pipeline.datapath(layer, streams, lut, fp16_in, cp, 1, hw)
        want, want_counts = np.empty(v.shape, np.uint16), np.zeros(len(stages.COUNTERS))
        for channels, pixels in pipeline._blocks(1, cp, hw, block):
            want_counts += path.run_into(v[:, channels, pixels], channels, pixels,
                                         want[:, channels, pixels])
        passes.clear()
        got, stats = pipeline.run_pipeline(layer, v.reshape(1, cp, 1, hw), streams, lut,
                                           from_memory=fp16_in)
        assert passes == [len(pipeline._blocks(1, cp, hw, block))], fp16_in
        np.testing.assert_array_equal(got.reshape(v.shape), want, err_msg=str(fp16_in))
        assert [stats[name] for name in stages.COUNTERS[:4]] == want_counts[:4].tolist()


@pytest.mark.parametrize("cube", CUBES)
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("fp16_in", [True, False], ids=["fp16 input", "fp32 input"])
def test_blocks_written_in_place_as_the_plain_pass_gives_them(fp16_in, batch, cube,
                                                              monkeypatch):
    """Datapath.run_into lets the compiled pass write a block straight into its place in
    the output when that place is a C-ordered uint16 array (else into its own): the words
    and counters of Datapath.run by numpy's float32 pass and the rules, for a whole cube
    and for some of its channels (a place that is not C-ordered when there are two
    images), one image or two (an operand already one value an element, or repeated over
    the images, in the one-row form of short rows)."""
    rng = np.random.default_rng(SEED + 11 + 2 * fp16_in + batch)
    cp, h, w = CUBES[cube]
    in_place = []
    real = fused_fp.run_tallied

    def run_tallied(path, v, operand, h=None):
        in_place.append(h is not None)
        return real(path, v, operand, h)

    monkeypatch.setattr(fused_fp, "run_tallied", run_tallied)
    for i, (x1, y) in enumerate(itertools.product(X_OPTIONS, Y_OPTIONS)):
        x2 = X_OPTIONS[(5 * i) % len(X_OPTIONS)]
        layer, streams, lut = _layer_and_streams(rng, x1, x2, y, rng.choice(MODES, (3, 2)),
                                                 CUBES[cube])
        path = pipeline.datapath(layer, streams, lut, fp16_in, cp, h, w)
        v = _cube(rng, fp16_in, (batch, cp, h * w))
        fused_fp.run(path, np.zeros((1, 1, 1), np.uint16), lambda op: op)  # numba loaded
        for channels in (slice(None), slice(1, 3)):
            label = f"x1={x1} x2={x2} y={y} channels={channels}"
            block = v[:, channels]
            monkeypatch.setattr(fused_fp, "MIN_ELEMENTS", 1 << 40)  # numpy's fast_fp, the rules
            want, want_counts = path.run(block, channels, slice(None))
            monkeypatch.setattr(fused_fp, "MIN_ELEMENTS", 1)
            out = np.full((batch, cp, h * w), 0x5A5A, np.uint16)
            in_place.clear()
            counts = path.run_into(block, channels, slice(None), out[:, channels])
            assert in_place == [batch == 1 or channels == slice(None)], label
            np.testing.assert_array_equal(out[:, channels], want, err_msg=label)
            np.testing.assert_array_equal(counts, want_counts, err_msg=label)
            assert (out[:, 3:] == 0x5A5A).all() or channels == slice(None), label
