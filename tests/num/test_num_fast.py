"""The fast (double-arithmetic, vectorised) add/sub/mul of sim.num against
their step-by-step window twins in ``sim.num.fpcore``, which define the bits.

Inputs: every pattern of the format against a few random ones, every
sign x exponent with edge mantissas against each other, pairs a few ulp apart
(cancellation, rounding ties) and uniform random pairs.  Both the array
primitives (blocked vectorised loops) and the scalar kernels are checked.
"""

import numpy as np
import pytest

import sim.num
from sim.jit import njit
from sim.num.fpcore import fp_add, fp_add_window, fp_mul, fp_mul_window, fp_sub

FORMATS = {"fp16": (5, 10, np.uint16), "fp17": (6, 10, np.uint32), "fp32": (8, 23, np.uint32)}
OPS = {"add": 0, "sub": 1, "mul": 2}


@njit
def _window_loop(op, a, b, E, M, out):
    """The window algorithms, and the scalar fast kernels, element by element."""
    flip = 1 << (E + M)
    bad = 0
    for i in range(out.size):
        x, y = np.int64(a[i]), np.int64(b[i])
        if op == 0:
            out[i] = fp_add_window(x, y, E, M)
            bad += fp_add(x, y, E, M) != out[i]
        elif op == 1:
            out[i] = fp_add_window(x, y ^ flip, E, M)
            bad += fp_sub(x, y, E, M) != out[i]
        else:
            out[i] = fp_mul_window(x, y, E, M)
            bad += fp_mul(x, y, E, M) != out[i]
    return bad


def _pairs(E: int, M: int, dtype) -> tuple:
    rng = np.random.default_rng(E * 100 + M)
    width = 1 + E + M
    if width > 17:
        every = rng.integers(0, 1 << width, 1 << 17)
    else:
        every = np.arange(1 << width, dtype=np.int64)
    a = [np.repeat(every, 8)]
    b = [rng.integers(0, 1 << width, a[0].size)]
    # every sign x exponent with edge mantissas, crossed
    mants = np.array([0, 1, 2, 3, (1 << (M - 1)), (1 << (M - 1)) + 1, (1 << M) - 2, (1 << M) - 1])
    edges = (np.arange(2 << E)[:, None] << M | mants[None, :]).ravel()
    if width > 17:  # fp32: 4M of the 16M crossed pairs
        a.append(rng.choice(edges, 1 << 22))
        b.append(rng.choice(edges, 1 << 22))
    else:
        a.append(np.repeat(edges, edges.size))
        b.append(np.tile(edges, edges.size))
    # near cancellation and rounding: b = -(a + k) and b = a + k ulp, k small
    for k in (-3, -2, -1, 0, 1, 2, 3):
        a.append(every)
        b.append((every + k) ^ (1 << (E + M)))
        a.append(every)
        b.append(every + k)
    a.append(rng.integers(0, 1 << width, 1 << 18))
    b.append(rng.integers(0, 1 << width, 1 << 18))
    mask = (1 << width) - 1
    return (np.concatenate(a) & mask).astype(dtype), (np.concatenate(b) & mask).astype(dtype)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("op", list(OPS))
def test_fast_kernels_match_the_window_algorithm(fmt, op):
    E, M, dtype = FORMATS[fmt]
    a, b = _pairs(E, M, dtype)
    expected = np.empty_like(a)
    scalar_bad = _window_loop(OPS[op], a, b, E, M, expected)
    got = getattr(sim.num, f"{fmt}_{op}")(a, b)
    bad = np.flatnonzero(got != expected)
    assert not bad.size, (
        f"{fmt}_{op}: {bad.size} of {a.size} differ from the window algorithm; first "
        f"{a[bad[0]]:#x}, {b[bad[0]]:#x}: {got[bad[0]]:#x} != {expected[bad[0]]:#x}"
    )
    assert scalar_bad == 0, f"scalar {fmt} {op}: {scalar_bad} differ from the window algorithm"


def test_inf_operands_take_the_window_in_arrays():
    """An Inf operand is the one case the double path gets wrong; arrays must
    recompute it (here in the middle of a block of ordinary operands)."""
    a = np.full(5000, 0x3C00, np.uint16)
    b = np.full(5000, 0x0001, np.uint16)
    a[3000], b[3000] = 0x7C00, 0x5800
    out = sim.num.fp16_add(a, b)
    assert out[3000] == 0x7C02 and out[0] == int(sim.num.fp16_add(0x3C00, 0x0001))
