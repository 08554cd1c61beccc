"""Image input: pixel decoding against a per-pixel decoder written from the format
names of format.rst Table 33, and image convolution against a numpy reference."""

import re

import numpy as np
import pytest
from sim.regs.enums import Precision

from sim.conv.image import image_values
from sim.dma.pixel import max_x_offset, pixel_format
from sim.dram import Memory
from sim.errors import ConfigurationError
from sim.program.conv_modes import program_image, run_mode

# Table 33, in register-code order
FORMATS = [
    "T_R8", "T_R10", "T_R12", "T_R16", "T_R16_I", "T_R16_F", "T_A16B16G16R16",
    "T_X16B16G16R16", "T_A16B16G16R16_F", "T_A16Y16U16V16", "T_V16U16Y16A16",
    "T_A16Y16U16V16_F", "T_A8B8G8R8", "T_A8R8G8B8", "T_B8G8R8A8", "T_R8G8B8A8", "T_X8B8G8R8",
    "T_X8R8G8B8", "T_B8G8R8X8", "T_R8G8B8X8", "T_A2B10G10R10", "T_A2R10G10B10",
    "T_B10G10R10A2", "T_R10G10B10A2", "T_A2Y10U10V10", "T_V10U10Y10A2", "T_A8Y8U8V8",
    "T_V8U8Y8A8", "T_Y8___U8V8_N444", "T_Y8___V8U8_N444", "T_Y10___U10V10_N444",
    "T_Y10___V10U10_N444", "T_Y12___U12V12_N444", "T_Y12___V12U12_N444",
    "T_Y16___U16V16_N444", "T_Y16___V16U16_N444",
]
CHANNEL = {"R": 0, "Y": 0, "G": 1, "U": 1, "B": 2, "V": 2, "A": 3, "X": 3}


def plane_fields(plane_name):
    """[(channel, shift, width, container_bits)] of one plane, and its bytes per pixel.

    Names list components from the most significant end of a little-endian
    pixel word; 2-bit alpha marks the 10:10:10:2 packed words; otherwise every
    component sits in an 8- or 16-bit container of its own.
    """
    comps = [(c, int(b)) for c, b in re.findall(r"([RGBAXYUV])(\d+)", plane_name)]
    packed = any(b == 2 for _, b in comps)
    fields, shift = [], 0
    for c, b in reversed(comps):
        width = b if packed else (8 if b == 8 else 16)
        fields.append((CHANNEL[c], shift, width, b))
        shift += width
    return fields, shift // 8, packed


def reference_decode(mem, name, addrs, strides, w, h, x_off, uv_off):
    """(C, H, W) values the CDMA converts, pixel by pixel."""
    body = name[2:].replace("_N444", "").replace("_F", "").replace("_I", "")
    planes = [plane_fields(p) for p in body.split("___")]
    channels = sum(len(f) for f, _, _ in planes)
    out = np.zeros((channels, h, w), dtype=np.int64)
    for p, (fields, bpp, packed) in enumerate(planes):
        off = x_off if p == 0 else uv_off
        for y in range(h):
            for x in range(w):
                raw = mem.read(addrs[p] + y * strides[p] + (off + x) * bpp, bpp)
                word = int.from_bytes(raw, "little")
                for ch, shift, width, bits in fields:
                    v = (word >> shift) & ((1 << width) - 1)
                    out[ch, y, x] = v << (16 - bits) if packed else v
    return out


DECODE_CASES = [(name, 32) for name in FORMATS] + [  # nv_small (8-byte atoms): 8-bit formats
    (name, 8) for name in FORMATS if pixel_format(name).precision == "int8"]


@pytest.mark.parametrize("name,atom", DECODE_CASES)
def test_every_pixel_format_decodes_like_the_table(name, atom):
    fmt = pixel_format(name)
    rng = np.random.default_rng(FORMATS.index(name))
    w, h = 5, 3
    x_off = min(max_x_offset(fmt, atom), 21 if atom == 32 else 5)  # within one atom
    in_prec = "int8" if fmt.fields[0].size == 1 and not fmt.packed else "int16"
    e = Precision(in_prec).bytes
    uv_off = x_off % (atom // (2 * e))
    strides = [((x_off + w) * b + atom - 1) // atom * atom + atom for b in fmt.plane_bytes]
    addrs = [0x1000, 0x8000][: fmt.planes]
    mem = Memory("pri_mem", 32)
    for a, s in zip(addrs, strides, strict=False):
        mem.write(a, rng.integers(0, 256, s * h, dtype=np.uint8))
    values, _ = image_values(mem, fmt, addrs, strides, w, h, x_off, in_prec, atom)
    expect = reference_decode(mem, name, addrs, strides + [0], w, h, x_off, uv_off)
    np.testing.assert_array_equal(values, expect)


# -- image convolution --------------------------------------------------------

def ref_convert(values, bits, signed, fp16_in, cvt, means, proc, channels):
    if cvt is None:
        return values
    offset, scale, trunc = cvt
    v = values.astype(np.int64)
    if fp16_in:
        return v  # fp16 input passes the convertor unchanged
    if signed:
        v = np.where(v >> (bits - 1), v - (1 << bits), v)
    m = np.array([(means[c] if means else offset) for c in range(channels)], np.int64)
    m = np.where(m >= 0x8000, m - 0x10000, m)
    s = scale - 0x10000 if scale >= 0x8000 else scale
    x = (v - m[:, None, None]) * s
    if trunc:
        x = np.sign(x) * ((np.abs(x) + (1 << (trunc - 1))) >> trunc)
    x = np.clip(x, -(1 << 16), (1 << 16) - 1)
    if proc == "int8":
        return np.clip(x, -128, 127)
    if proc == "int16":
        return np.clip(x, -32768, 32767)
    return x  # fp16 output: small integers here, exact


def signed16(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def ref_image_conv(x, w, stride, pad, cdma_pad, csc_pad, truncate):
    c, h, wd = x.shape
    k, _, r, s = w.shape
    left, right, top, bottom = pad
    xp = np.empty((c, top + h + bottom, left + wd + right), dtype=np.float64)
    xp[...] = csc_pad
    xp[:, top: top + h, :] = cdma_pad
    xp[:, top: top + h, left: left + wd] = x
    oh = (top + h + bottom - r) // stride[1] + 1
    ow = (left + wd + right - s) // stride[0] + 1
    out = np.zeros((k, oh, ow), dtype=np.int64)
    for oy in range(oh):
        for ox in range(ow):
            patch = xp[:, oy * stride[1]: oy * stride[1] + r, ox * stride[0]: ox * stride[0] + s]
            out[:, oy, ox] = np.einsum("crs,kcrs->k", patch, w.astype(np.float64)).astype(np.int64)
    if truncate:
        out = np.sign(out) * ((np.abs(out) + (1 << (truncate - 1))) >> truncate)
    return np.clip(out, -(1 << 31), (1 << 31) - 1)


CASES = [
    # config, format, proc, in, x_off, sign, cvt, mean, stride, pad, pads(cdma, csc), post, kernel
    ("nv_full", "T_A8B8G8R8", "int8", "int8", 3, False, (17, 3, 2), None, (2, 1),
     (1, 2, 1, 0), (5, 0xFFF9), 1, (3, 2)),
    ("nv_small", "T_R8", "int8", "int8", 3, True, (0, 2, 1), (7, 0, 0, 0), (1, 2),
     (0, 0, 2, 1), (0, 3), 1, (2, 3)),
    ("nv_full", "T_Y8___U8V8_N444", "int16", "int8", 20, False, (100, 5, 0), None, (1, 1),
     (0, 1, 0, 1), (2, 1), 2, (3, 3)),
    ("nv_full", "T_A2B10G10R10", "int16", "int16", 1, False, (0, 3, 4), (100, 200, 300, 1),
     (1, 1), (0, 0, 0, 0), (0, 0), 1, (2, 2)),
    ("nv_full", "T_R16", "int8", "int16", 0, True, (0x10, 1, 7), None, (3, 1),
     (2, 0, 0, 0), (0x7F, 0), 4, (5, 4)),
    ("nv_full", "T_A8R8G8B8", "fp16", "int8", 2, True, (0, 1, 4), None, (1, 1),
     (1, 1, 1, 1), (0x3C00, 0x4000), 2, (2, 4)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[1] + "_" + c[2] for c in CASES])
def test_image_convolution_matches_reference(case):
    (config, name, proc, in_prec, x_off, sign, cvt, mean, stride, pad, pads, post,
     (s, r)) = case
    fmt = pixel_format(name)
    rng = np.random.default_rng(len(name) + x_off)
    c, h, wd, k = fmt.channels, 7, 9, 5
    if fmt.packed:
        image = rng.integers(0, [1024, 1024, 1024, 4], (h, wd, 4)).transpose(2, 0, 1)
    else:
        info = np.iinfo(fmt.dtype)
        image = rng.integers(info.min, int(info.max) + 1, (c, h, wd), dtype=np.int64)
    image = image.astype(fmt.dtype)
    if proc == "fp16":
        w = rng.integers(-3, 4, (k, c, r, s)).astype(np.float16).view(np.uint16)
        wf = w.view(np.float16).astype(np.float64)
    else:
        w = rng.integers(-50, 50, (k, c, r, s)).astype(np.int8 if proc == "int8" else np.int16)
        wf = w
    truncate = 0 if proc == "fp16" else 3
    out, counters = run_mode(config, program_image, image, w, fmt=name, precision=proc,
                             in_precision=in_prec, x_offset=x_off, sign_override=sign, cvt=cvt,
                             mean=mean, stride=stride, pad=pad, pad_value=pads[0],
                             csc_pad_value=pads[1], post_extension=post, truncate=truncate)
    values = image.astype(np.int64) & 0xFFFF
    bits = 8 * fmt.fields[0].size
    if fmt.packed:
        values = values << np.array([6, 6, 6, 14])[:, None, None]
        bits = 16
    conv_in = ref_convert(values, bits, sign, False, cvt, mean, proc, c)
    if proc == "fp16":
        cdma_pad = float(np.uint16(pads[0]).view(np.float16))
        csc_pad = float(np.uint16(pads[1]).view(np.float16))
    else:
        nb = 8 if proc == "int8" else 16
        cdma_pad, csc_pad = signed16(pads[0], nb), signed16(pads[1], nb)
    expect = ref_image_conv(conv_in, wf, stride, pad, cdma_pad, csc_pad, truncate)
    if proc == "fp16":
        np.testing.assert_array_equal(out.view(np.float32), expect.astype(np.float32))
    else:
        np.testing.assert_array_equal(out, expect)


def test_channel_count_must_match_format():
    image = np.zeros((4, 2, 3), np.uint8)
    w = np.zeros((1, 4, 1, 1), np.int8)

    def bad(m, *a, **kw):
        program_image(m, *a, **kw)
        m.write_reg("NVDLA_CDMA.D_DATAIN_SIZE_1_0", 2)

    with pytest.raises(ConfigurationError, match="D_DATAIN_SIZE_1_0"):
        run_mode("nv_full", bad, image, w, fmt="T_A8B8G8R8", precision="int8", cvt=(0, 1, 0))


def test_conversion_needs_the_convertor():
    image = np.zeros((1, 2, 3), np.uint8)
    w = np.zeros((1, 1, 1, 1), np.int16)
    with pytest.raises(ConfigurationError, match="CVT_EN"):
        run_mode("nv_full", program_image, image, w, fmt="T_R8", precision="int16",
                 in_precision="int8")


def test_r16_f_pixels_enter_fp16_processing_unconverted():
    """T_R16_F (fp16 pixels; Table 33 gives int16 as its input precision) into fp16
    processing with the convertor off: the pixels are the fp16 elements (what NVIDIA's
    C-model computes).  Quarters times small integers keep every sum exact."""
    rng = np.random.default_rng(16)
    image = (rng.integers(-40, 41, (1, 4, 5)) / 4).astype(np.float16)
    w = rng.integers(-3, 4, (3, 1, 1, 1)).astype(np.float16)
    out, _ = run_mode("nv_full", program_image, image, w.view(np.uint16), fmt="T_R16_F",
                      precision="fp16", in_precision="int16", cvt=None)
    expect = w[:, 0, 0, 0].astype(np.float32)[:, None, None] * image[0].astype(np.float32)
    np.testing.assert_array_equal(out.view(np.float32), expect)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_r16_f_pixels_through_the_convertor_into_another_precision_are_refused(precision):
    """NVIDIA's C-model writes zeros for both (into int8: found by gen's C-model replay)."""
    image = np.zeros((1, 2, 3), np.float16)
    w = np.zeros((1, 1, 1, 1), np.float16).view(np.uint16)
    if precision == "int8":
        w = np.zeros((1, 1, 1, 1), np.int8)
    with pytest.raises(ConfigurationError, match=r"T_R16_F \(fp16 pixels, int16 input "
                       rf"precision\) through the convertor into {precision}"):
        run_mode("nv_full", program_image, image, w, fmt="T_R16_F", precision=precision,
                 in_precision="int16", cvt=(0, 1, 0))


@pytest.mark.parametrize("fmt", ["T_R16_F", "T_A16B16G16R16_F"])
def test_fp16_pixels_of_int8_input_precision_need_the_convertor(fmt):
    """Only int16, the input precision NVIDIA's C-model was seen to take fp16 pixels with,
    lets fp16 pixels into fp16 processing unconverted: with int8 the layer stays refused."""
    channels = 1 if fmt == "T_R16_F" else 4
    image = np.zeros((channels, 2, 3), np.float16)
    w = np.zeros((1, channels, 1, 1), np.float16).view(np.uint16)
    with pytest.raises(ConfigurationError, match="CVT_EN"):
        run_mode("nv_full", program_image, image, w, fmt=fmt, precision="fp16",
                 in_precision="int8", cvt=None)
