"""Block quantization: :class:`MXArray`, :func:`quantize`, :func:`dequantize`, pack/unpack."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from . import _kernels as K
from .codec import as_float_bits, check_random, decode_table, rounding_mode
from .formats import FORMATS, ElementFormat, ScaleMode, element_format, float_format
from .interop import from_numpy, to_numpy
from .jitcache import njit
from .scale_format import E8M0, scale_format
from .seed_compat import int8_codes, needs_seed_path

__all__ = ["MXArray", "quantize", "dequantize", "check_block_size", "default_block_size",
           "DEFAULT_BLOCK_SIZE"]

#: The element formats quantized from fp32 by a kernel of their own, with their parameters as
#: compile-time constants (:func:`golden._kernels.block_quantizer`): the six OCP formats.
_OCP_FORMATS = tuple(FORMATS.values())

_OUT_DTYPES = {
    np.dtype(np.float32): None,
    np.dtype(np.float16): np.float16,
    np.dtype(ml_dtypes.bfloat16): ml_dtypes.bfloat16,
}


def check_block_size(block_size) -> int:
    if not isinstance(block_size, (int, np.integer)) or isinstance(block_size, bool):
        raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
    k = int(block_size)
    if k < 2 or k & (k - 1):
        raise ValueError(f"block_size must be a power of two >= 2 (2, 4, 8, 16, 32, 64, ...; "
                         f"the RTL supports 2..64), got {k}")
    return k


def default_block_size(fmt) -> int:
    """The block size :func:`quantize` takes for ``fmt`` when given none: 16 for ``"nvfp4"``,
    :data:`DEFAULT_BLOCK_SIZE` (32) for every MX element format."""
    from .nvfp4 import is_nvfp4  # builds on this module

    return 16 if is_nvfp4(fmt) else DEFAULT_BLOCK_SIZE


def _blocked_shapes(shape, axis, k):
    """(codes shape, scales shape) of an MXArray of ``shape`` blocked by ``k`` along ``axis``."""
    nb = -(-shape[axis] // k)
    return (shape[:axis] + (nb * k,) + shape[axis + 1:],
            shape[:axis] + (nb,) + shape[axis + 1:])


def _scale_mode_id(scale_mode) -> int:
    try:
        return ScaleMode(scale_mode).id
    except ValueError:
        raise ValueError(f"unknown scale_mode {scale_mode!r}; expected 'floor' or 'rceil'") \
            from None


@dataclass(frozen=True, eq=False, repr=False)
class MXArray:
    """A tensor in an MX format.

    Members
    -------
    scales : ndarray of uint8
        Scale codes of :attr:`scale_format` (E8M0 unless given); the input's shape with the
        block axis of length ``n_blocks``.
    codes : ndarray of uint8
        Element codes, one per element; the input's shape with the block axis padded to
        ``n_blocks * block_size`` (padding codes are +0).
    fmt : ElementFormat
    block_size : int
    axis : int
        The block axis (non-negative).
    shape : tuple
        The original (unpadded) shape.
    scale_format : ScaleFormat
        What a scale byte means (:mod:`golden.scale_format`): E8M0, or UE4M3 for NVFP4
        (fp4_e2m1 codes only).
    tensor_scale : float or None
        NVFP4's fp32 tensor scale P (a decode scale), or None (single level); UE4M3 only.
    """

    scales: np.ndarray
    codes: np.ndarray
    fmt: ElementFormat
    block_size: int
    axis: int
    shape: tuple
    scale_format: object = E8M0
    tensor_scale: object = None

    def __post_init__(self):
        """Validate the members against each other (one-line ValueError/TypeError)."""
        k = check_block_size(self.block_size)
        fmt = element_format(self.fmt)
        shape = tuple(operator.index(n) for n in self.shape)
        if not shape or min(shape) < 0:
            raise ValueError(f"shape must have at least one axis and no negative length, "
                             f"got {self.shape}")
        axis = operator.index(self.axis)
        if not -len(shape) <= axis < len(shape):
            raise ValueError(f"axis {self.axis} is out of range for shape {shape}")
        axis %= len(shape)
        want_codes, want_scales = _blocked_shapes(shape, axis, k)
        for name, want in (("codes", want_codes), ("scales", want_scales)):
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.dtype != np.uint8:
                raise TypeError(f"MXArray {name} must be a uint8 ndarray, got "
                                f"{getattr(a, 'dtype', type(a).__name__)}")
            if a.shape != want:
                raise ValueError(f"MXArray {name} have shape {a.shape}, but shape={shape} "
                                 f"with block_size={k} along axis {axis} needs {want}")
        sf, ts = _check_scaling(self.scale_format, self.tensor_scale, fmt, self.scales)
        for name, value in (("fmt", fmt), ("block_size", k), ("axis", axis), ("shape", shape),
                            ("scale_format", sf), ("tensor_scale", ts)):
            object.__setattr__(self, name, value)

    @property
    def n_blocks(self) -> int:
        return self.scales.shape[self.axis]

    def __repr__(self) -> str:
        """One line, like numpy's summaries: format, shape, blocks and the scale range (the
        arrays themselves are ``.scales`` and ``.codes``)."""
        if self.scale_format != E8M0:
            from .nvfp4 import describe

            return describe(self)
        s = self.scales.astype(np.int64)
        finite = s[s != 255] - 127
        scale_range = (f"scales 2^{finite.min()}..2^{finite.max()}" if finite.size
                       else "no finite scale")
        nan = int(np.count_nonzero(s == 255))
        return (f"MXArray({self.fmt.name}, shape={self.shape}, block_size={self.block_size}, "
                f"axis={self.axis}, {s.size} block{'s' if s.size != 1 else ''}, {scale_range}"
                + (f", {nan} NaN block{'s' if nan != 1 else ''}" if nan else "") + ")")

    def blocks(self):
        """(codes, scales) with the block axis last: shapes (..., n, k) and (..., n)."""
        c = np.moveaxis(self.codes, self.axis, -1)
        s = np.moveaxis(self.scales, self.axis, -1)
        return c.reshape(*s.shape, self.block_size), s

    def dequantize(self, dtype=np.float32, *, like=None):
        return dequantize(self, dtype, like=like)

    def stats(self, x, *, scale_mode="floor"):
        """Error statistics against ``x``, the data this was quantized from:
        :func:`golden.quantization_error`."""
        from .stats import quantization_error  # stats builds on this module

        return quantization_error(x, self, scale_mode=scale_mode)

    # -- storage layout (docs/numerics.md section 6) -----------------------------------------------
    def pack(self) -> np.ndarray:
        """Element codes in the contract's byte layout, blocks in order (block axis last,
        C order): one contiguous LSB-first bit stream of ``fmt.bits``-bit codes (fp4 two per
        byte, even element low; fp6 four per three bytes; 8-bit codes one per byte)."""
        codes, _ = self.blocks()
        return pack_codes(codes.reshape(-1), self.fmt)

    @classmethod
    def unpack(cls, packed, scales, fmt, shape, *, block_size=None, axis=-1,
               scale_format=E8M0, tensor_scale=None) -> MXArray:
        """Rebuild an MXArray from :meth:`pack` bytes and the scale array (NVFP4: ``fmt``
        ``"nvfp4"`` or fp4_e2m1 with ``scale_format="ue4m3"``, and its ``tensor_scale``);
        ``block_size`` None is ``fmt``'s default, as in :func:`quantize`."""
        if block_size is None:
            block_size = default_block_size(fmt)
        if isinstance(fmt, str) and fmt.strip().lower() == "nvfp4":
            fmt, scale_format = "fp4_e2m1", "ue4m3"
        fmt = element_format(fmt)
        k = check_block_size(block_size)
        shape = tuple(int(n) for n in shape)
        ax = operator.index(axis) % len(shape) if shape else 0
        want_codes, want = _blocked_shapes(shape, ax, k)
        last = shape[:ax] + shape[ax + 1:] + (want_codes[ax],)
        n = int(np.prod(last))
        codes = unpack_codes(np.asarray(packed, np.uint8), fmt, n).reshape(last)
        scales = np.asarray(scales, np.uint8)
        if scales.shape != want:
            raise ValueError(f"scales have shape {scales.shape}, expected {want}")
        return cls(scales, np.moveaxis(codes, -1, ax), fmt, k, ax, shape, scale_format,
                   tensor_scale)


def _check_scaling(sf, tensor_scale, fmt, scales):
    """Validate an MXArray's scale format and tensor scale against its element format and
    scale codes; returns (ScaleFormat, float32 or None)."""
    sf = scale_format(sf)
    if sf != E8M0 and fmt != element_format("fp4_e2m1"):
        raise ValueError(f"a {sf.name} scale goes with fp4_e2m1 codes (NVFP4), not {fmt.name}")
    if isinstance(scales, np.ndarray) and scales.size and int(scales.max()) > sf.max_code:
        raise ValueError(f"MXArray scales hold bytes above {sf.max_code:#x}, which are not "
                         f"{sf.name} codes")
    if tensor_scale is None:
        return sf, None
    if sf == E8M0:
        raise ValueError("tensor_scale goes with a UE4M3 scale format (NVFP4) only")
    if isinstance(tensor_scale, bool) or not isinstance(tensor_scale, (int, float, np.floating)):
        raise TypeError(f"tensor_scale must be a float or None, got "
                        f"{type(tensor_scale).__name__}")
    p = np.float32(tensor_scale)
    if not (np.isfinite(p) and p > 0) or float(p) != float(tensor_scale):
        raise ValueError(f"tensor_scale must be a positive finite fp32 value, got "
                         f"{tensor_scale!r}")
    return sf, p


def pack_group(bits: int) -> tuple[int, int]:
    """(codes, bytes) of the smallest whole-byte group of ``bits``-bit codes: the packing unit
    (fp4: 2 codes in 1 byte, fp6: 4 in 3, any odd width: 8 codes in ``bits`` bytes)."""
    per = 8 // math.gcd(bits, 8)
    return per, bits * per // 8


def pack_codes(codes: np.ndarray, fmt: ElementFormat) -> np.ndarray:
    """Codes as one contiguous LSB-first bit stream: code i at bits ``[w*i, w*(i+1))`` of the
    little-endian byte string (``w = fmt.bits``), zero-padded to a whole :func:`pack_group`."""
    codes = np.asarray(codes, np.uint8).reshape(-1)
    if fmt.bits == 8:
        return codes.copy()
    per, nbytes = pack_group(fmt.bits)
    pad = (-codes.size) % per
    c = np.concatenate([codes, np.zeros(pad, np.uint8)]).reshape(-1, per).astype(np.uint64)
    word = np.zeros(c.shape[0], np.uint64)
    for j in range(per):
        word |= c[:, j] << np.uint64(fmt.bits * j)
    return word.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :nbytes].reshape(-1).copy()


def unpack_codes(packed: np.ndarray, fmt: ElementFormat, n: int) -> np.ndarray:
    """Inverse of :func:`pack_codes`: the first ``n`` codes of a packed stream."""
    if fmt.bits == 8:
        if packed.size != n:
            raise ValueError(f"expected {n} packed bytes, got {packed.size}")
        return packed.copy()
    per, nbytes = pack_group(fmt.bits)
    groups = -(-n // per)
    if packed.size != groups * nbytes:
        raise ValueError(f"expected {groups * nbytes} packed bytes for {n} {fmt.name} codes, "
                         f"got {packed.size}")
    b = np.zeros((groups, 8), np.uint8)
    b[:, :nbytes] = packed.reshape(groups, nbytes)
    word = b.reshape(-1).view("<u8").astype(np.uint64)
    mask = np.uint64((1 << fmt.bits) - 1)
    c = np.stack([(word >> np.uint64(fmt.bits * j)) & mask for j in range(per)], axis=1)
    return c.reshape(-1)[:n].astype(np.uint8)


def _as_input(x) -> np.ndarray:
    if isinstance(x, MXArray):
        raise TypeError("input is already an MXArray; dequantize it first")
    a = to_numpy(x)  # numpy, torch (bf16 included) and JAX arrays, DLPack producers
    # (ml_dtypes' bfloat16 has dtype.kind "V", so "V" must not be rejected here; other void
    # dtypes are refused by as_float_bits.)
    if a.dtype.kind in "biuc" or a.dtype == object or a.dtype.kind in "US":
        raise TypeError(f"quantize takes float32, float16, bfloat16 or float64 data, "
                        f"not dtype {a.dtype}")
    return a


#: The block size of an MX format when none is given (nvfp4's is 16: golden.nvfp4).
DEFAULT_BLOCK_SIZE = 32


def quantize(x, fmt, *, block_size=None, axis=-1, scale_mode="floor", rounding="rne",
             random=None, random_bits=8, int8_range="symmetric", tensor_scale=None,
             recipe=None) -> MXArray:
    """Quantize an array to an MX format, per docs/numerics.md section 3.

    Parameters
    ----------
    x : array_like, torch.Tensor or jax.Array
        float32, float16, bfloat16 or float64 (float64 quantized exactly as real numbers).
    fmt : str, dict or ElementFormat
        Any member of the element-format family: ``fp8_e4m3``, ``fp8_e5m2``, ``fp6_e3m2``,
        ``fp6_e2m3``, ``fp4_e2m1``, ``int8``, an alias, ``int4``, ``e3m3``, ... (see
        :func:`golden.element_format`), or ``"nvfp4"`` (:mod:`golden.nvfp4`: e2m1 codes, UE4M3
        scales; takes only ``block_size``, ``axis``, ``tensor_scale`` and ``recipe``).
    block_size : int or None
        Power of two >= 2 (the RTL supports 2..64); None (the default) means the format's
        default block size: 32 for the MX formats, 16 for nvfp4.  A trailing partial block is
        padded with +0.
    axis : int
        The axis the blocks run along.
    scale_mode : {"floor", "rceil"}
    rounding : {"rne", "rna", "rtz", "stochastic", "rnu"}
        ``"rnu"`` (nearest, ties toward +Inf; Quark's int8 ``rounding_mode=1``) is an int8
        option of golden only, not an RTL mode (:mod:`golden.seed_compat`).
    random : array of int, optional
        Stochastic rounding only: one integer in ``[0, 2^random_bits)`` per element of ``x``.
    random_bits : int
        Random bits per element (R) for stochastic rounding.
    int8_range : {"symmetric", "asymmetric"}
        int8 codes in [-127, 127] (the OCP range, the RTL's) or [-128, 127] (pychop and Quark;
        golden only).
    tensor_scale : None, float or "dynamic"
        nvfp4 only: the fp32 tensor scale P (docs/numerics.md, NVFP4).
    recipe : {"torchao", "te"}
        nvfp4 only: torchao 0.18's ``nvfp4_quantize`` (the default) or TransformerEngine's
        reference quantizer.
    """
    from .nvfp4 import is_nvfp4, quantize_nvfp4  # builds on this module

    if block_size is None:
        block_size = default_block_size(fmt)
    if is_nvfp4(fmt):
        if (scale_mode, rounding, int8_range) != ("floor", "rne", "symmetric") or \
                random is not None:
            raise ValueError("nvfp4 takes block_size, axis, tensor_scale and recipe only (no "
                             "scale_mode, rounding, random or int8_range)")
        return quantize_nvfp4(x, block_size=block_size,
                              axis=axis, tensor_scale=tensor_scale,
                              recipe="torchao" if recipe is None else recipe)
    if tensor_scale is not None or recipe is not None:
        raise ValueError(f"tensor_scale and recipe are nvfp4 options, not {fmt!r}'s")
    if needs_seed_path(fmt, rounding, int8_range, random):
        mx = quantize(x, fmt, block_size=block_size, axis=axis, scale_mode=scale_mode,
                      rounding="rtz")  # the OCP scales (rounding does not change them)
        codes = int8_codes(_as_input(x), mx.scales, block_size=mx.block_size, axis=mx.axis,
                           rounding=rounding, int8_range=int8_range)
        return MXArray(mx.scales, codes, mx.fmt, mx.block_size, mx.axis, mx.shape)
    fmt = element_format(fmt)
    k = check_block_size(block_size)
    smode = _scale_mode_id(scale_mode)
    rid = rounding_mode(rounding)
    a = _as_input(x)
    if a.ndim == 0:
        raise ValueError("quantize needs at least a 1-d array")
    ax = operator.index(axis)
    if not -a.ndim <= ax < a.ndim:
        raise ValueError(f"axis {axis} is out of range for a {a.ndim}-d array")
    ax %= a.ndim
    r = check_random(rid, random, a.shape, random_bits)

    raw, ff = as_float_bits(a)
    raw = np.moveaxis(raw, ax, -1)
    n = raw.shape[-1]
    nb = -(-n // k)
    if nb * k != n:  # pad with +0 (bit pattern 0)
        pad = [(0, 0)] * (raw.ndim - 1) + [(0, nb * k - n)]
        raw = np.pad(raw, pad)
        if rid == K.STOCHASTIC:
            r = np.pad(np.moveaxis(r, ax, -1), pad)
            r = np.moveaxis(r, -1, ax)
    lead = raw.shape[:-1]
    blocks = np.ascontiguousarray(raw).reshape(-1, k)
    if rid == K.STOCHASTIC:
        rand = np.ascontiguousarray(np.moveaxis(r, ax, -1)).reshape(-1, k)
    else:
        rand = np.zeros((1, 1), np.int64)
    scales = np.empty(blocks.shape[0], np.uint8)
    codes = np.empty(blocks.shape, np.uint8)
    kernel = K.block_quantizer(ff.ebits, ff.mbits, fmt.ebits, fmt.mbits, fmt.bias, fmt.emax,
                               fmt.max_code, fmt.bits, fmt.twos_complement,
                               constants=fmt in _OCP_FORMATS)
    kernel(blocks, smode, rid, random_bits, rand, scales, codes)
    codes = np.moveaxis(codes.reshape(*lead, nb * k), -1, ax)
    scales = np.moveaxis(scales.reshape(*lead, nb), -1, ax)
    return MXArray(scales, codes, fmt, k, ax, a.shape)


@njit(cache=True, nogil=True)
def _dequantize_blocks(codes, scales, table, scale_table, out):
    nb, k = codes.shape
    nan = np.float32(np.nan)  # the canonical quiet NaN 0x7FC00000
    for b in range(nb):
        s = scale_table[scales[b]]
        for i in range(k):
            v = table[codes[b, i]] * s  # exact in fp32 except overflow to Inf
            out[b, i] = v if v == v else nan  # one NaN encoding, as the hardware writes


_SCALE_F32 = np.where(np.arange(256) == 255, np.nan,
                      np.ldexp(1.0, np.arange(256) - 127)).astype(np.float32)


def _out_dtype(dtype) -> np.dtype:
    """The numpy dtype of a dequantizer output named by a dtype or a project name (``"bf16"``)."""
    try:
        dt = float_format(dtype).dtype
    except (ValueError, TypeError):
        dt = None
    if dt not in _OUT_DTYPES:
        raise ValueError(f"dequantize writes fp32, bf16 or fp16 (float32, bfloat16, float16), "
                         f"not {dtype!r}")
    return dt


def dequantize(mx: MXArray, dtype=np.float32, *, like=None):
    """MX to float32, bfloat16 or float16 (docs/numerics.md section 4); keeps the original shape.

    ``dtype`` is a numpy dtype or one of the project's names (``"fp32"``, ``"bf16"``, ``"fp16"``,
    see :func:`golden.float_format`).  ``like`` (``"numpy"``, ``"torch"``, ``"jax"`` or an array
    of that kind) returns the result as that kind of array (:mod:`golden.interop`).

    fp32 is exact (only values beyond fp32's range become Inf; a wide-exponent format's values
    below fp32's subnormals round RNE); bf16/fp16 are the RNE cast of that exact value.  Every
    NaN is the canonical quiet NaN (fp32 0x7FC00000, bf16 0x7FC0,
    fp16 0x7E00), whatever the sign of the NaN code.
    """
    if not isinstance(mx, MXArray):
        raise TypeError(f"dequantize takes an MXArray, got {type(mx).__name__}")
    dt = _out_dtype(dtype)
    if mx.scale_format != E8M0:
        from .nvfp4 import dequantize_nvfp4

        out = dequantize_nvfp4(mx, dt)
        return out if like is None else from_numpy(out, like)
    codes, scales = mx.blocks()
    lead = scales.shape
    c = np.ascontiguousarray(codes).reshape(-1, mx.block_size)
    out = np.empty(c.shape, np.float32)
    _dequantize_blocks(c, np.ascontiguousarray(scales).reshape(-1),
                       decode_table(mx.fmt).astype(np.float32), _SCALE_F32, out)
    out = out.reshape(*lead[:-1], lead[-1] * mx.block_size)[..., : mx.shape[mx.axis]]
    out = np.moveaxis(out, -1, mx.axis)
    if _OUT_DTYPES[dt] is not None:
        with np.errstate(over="ignore"):  # overflow to +-Inf is the specified result
            out = out.astype(dt)
    out = np.ascontiguousarray(out)
    return out if like is None else from_numpy(out, like)
