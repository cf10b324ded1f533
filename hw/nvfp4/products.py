"""The NVFP4 quantizer's lane products ``sig_x * sig_r`` in ECP5 MULT18X18D blocks
(``multipliers="mult18x18d"``): sections ``operands``, ``multiply``, ``drain`` and ``psum``.

Each factor is cut into chunks of :data:`CHUNK_BITS` (17) bits from its least significant bit,
each chunk an 18-bit signed factor with a zero on top; every pair of chunks is one block
(:func:`hw.dsp.mult18x18d`): an fp32 lane (24 x 24 bits) takes four, a bf16 or fp16 lane
(24 x 8 or 24 x 11 bits) two.  The exact product is the sum of the chunk products, each
shifted by 17 bits per chunk index: for two chunks of each factor,
``ll + ((lh + hl) << 17) + (hh << 34)``, where ``ll + (hh << 34)`` is a concatenation (``ll``
has 34 bits), so the sum is two carry chains in series (``lh + hl``, then the add of that
into the concatenation), both in ``psum``.

Sections: ``operands`` is the route into the DSP column, ending in the blocks' own input
registers; ``multiply`` their output registers; ``drain`` the route back into the fabric;
``psum`` the sum of the chunk products.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Value

from ..dsp import MULT18X18D_WIDTH, mult18x18d
from ..nets import wire

__all__ = ["dsp_products", "chunk_sum", "CHUNK_BITS", "chunks"]

#: Bits of an unsigned factor chunk: a MULT18X18D factor is 18 bits signed.
CHUNK_BITS = MULT18X18D_WIDTH - 1


def chunks(bits: int) -> list[tuple[int, int]]:
    """The ``(lo, hi)`` bit ranges of the chunks of an unsigned factor of ``bits`` bits."""
    return [(lo, min(lo + CHUNK_BITS, bits)) for lo in range(0, bits, CHUNK_BITS)]


def _factor(v):
    """An unsigned chunk as a signed factor of the block."""
    return Cat(v, Const(0, 1)).as_signed()


def dsp_products(scope, sig_r, lanes: list[dict], blk: dict):
    """Sections ``operands`` to ``psum``: each lane's exact product ``sig_x * sig_r``.

    Parameters
    ----------
    scope : hw.scope.PipelineScope
    sig_r : Value
        r's significand (unsigned), shared by the lanes.
    lanes : list of dict
        Per lane ``neg``, ``lsb`` (carried over the sections) and ``sig`` (x's significand,
        unsigned).
    blk : dict
        The block's fields carried over the sections.

    Returns
    -------
    tuple
        ``(lanes, blk)`` after ``psum``: each lane's ``neg``, ``lsb`` and ``prod`` (the
        ``len(sig_r) + len(sig)``-bit unsigned product), and the block's fields.
    """
    m = scope.module
    r_bits, x_bits = len(Value.cast(sig_r)), len(Value.cast(lanes[0]["sig"]))
    if max(r_bits, x_bits) > 2 * CHUNK_BITS:
        raise ValueError(f"factors of at most {2 * CHUNK_BITS} bits (two chunks), got "
                         f"{r_bits} and {x_bits}")
    width = r_bits + x_bits
    pairs = [(a, b) for a in range(len(chunks(r_bits))) for b in range(len(chunks(x_bits)))]
    factors = [ln["sig"] for ln in lanes]
    carried = [{"neg": ln["neg"], "lsb": ln["lsb"]} for ln in lanes]
    y = scope.cross({**blk, "lanes": carried}, "operands")
    y = scope.cross({**_fields(y, blk), "lanes": _lanes(y)}, "multiply")
    enables = {key: scope.enable(key) if scope.registers(key) else None
               for key in ("operands", "multiply")}
    parts = []
    for i, sig_x in enumerate(factors):
        lane = {}
        for a, b in pairs:
            (ra, rb), (xa, xb) = chunks(r_bits)[a], chunks(x_bits)[b]
            p = mult18x18d(m, _factor(sig_r[ra:rb]), _factor(sig_x[xa:xb]),
                           scope.name(f"lane{i}_mult{a}{b}"),
                           input_enable=enables["operands"], output_enable=enables["multiply"])
            lane[f"p{a}{b}"] = p[:(rb - ra) + (xb - xa)]
        parts.append(lane)
    y = scope.cross({**_fields(y, blk), "lanes": [
        {**ln, "parts": part} for ln, part in zip(_lanes(y), parts, strict=True)]}, "drain")
    out = []
    for i, ln in enumerate(y.lanes):
        out.append({"neg": ln.neg, "lsb": ln.lsb,
                    "prod": chunk_sum(m, ln.parts, pairs, width, scope.name(f"lane{i}_psum"))})
    y = scope.cross({**_fields(y, blk), "lanes": out}, "psum")
    return [{"neg": ln.neg, "lsb": ln.lsb, "prod": ln.prod} for ln in y.lanes], _fields(y, blk)


def _fields(y, blk: dict) -> dict:
    """The block's fields of the view ``y``."""
    return {name: getattr(y, name) for name in blk}


def _lanes(y) -> list[dict]:
    return [{"neg": ln.neg, "lsb": ln.lsb} for ln in y.lanes]


def chunk_sum(m, parts, pairs, width: int, name: str):
    """The exact product from the chunk products, ``width`` bits (a signal ``name``).

    Parameters
    ----------
    m : Module
    parts : object
        Attributes ``p<a><b>``: chunk a of r times chunk b of x (unsigned), for each
        ``(a, b)`` of ``pairs``; each factor has at most two chunks.
    pairs : list of tuple of int
    width : int
    name : str

    The products of one weight ``17 * (a + b)`` are summed; the even weights' sums, which do
    not overlap, are concatenated and the odd weight's sum added into them.
    """
    by_weight: dict[int, list] = {}
    for a, b in pairs:
        by_weight.setdefault(a + b, []).append(getattr(parts, f"p{a}{b}"))
    sums = {}
    for w, terms in sorted(by_weight.items()):
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        sums[w] = wire(m, total, f"{name}_w{w}") if len(terms) > 1 else Value.cast(total)
    # the even weights do not overlap (a product of weight w has at most 34 bits, 2 * 17):
    # one value, their concatenation; the odd weights' sums are added into it above their
    # low bits
    parts_at, at = [], 0
    for w in sorted(k for k in sums if k % 2 == 0):
        if CHUNK_BITS * w > at:
            parts_at.append(Const(0, CHUNK_BITS * w - at))
        parts_at.append(sums[w])
        at = CHUNK_BITS * w + len(sums[w])
    total = Cat(*parts_at)
    for w in sorted(k for k in sums if k % 2):
        low = CHUNK_BITS * w
        total = Cat(total[:low], total[low:] + sums[w])
    return wire(m, Value.cast(total)[:width], name)
