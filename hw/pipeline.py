"""The valid/ready pipeline every MX unit is built on, and where its registers go.

A unit writes its datapath as combinational *sections*, each followed by a named *boundary*
(:meth:`Pipeline.boundary`); ``stages`` chooses how many boundaries hold a register, and
:func:`place_registers` chooses which, from per-section delay estimates the unit declares.
All registers advance together on one stall enable, itself a register (with one copy of it per
stage, or per part of a wide stage register, so no net from ``o.ready`` reaches every stage);
see :class:`Pipeline`.  A value that fans out over the die may cross a boundary in several
registers, each driving a part of its loads (:meth:`Pipeline.replicate`; at the last
boundary, with the output's valid bit and skid register, :meth:`Pipeline.output_copies`).

Several datapaths (steps) share one pipeline through scopes (:meth:`Pipeline.scope`): a
step places its sections through a :class:`PipelineScope`, which prefixes its section names
and signal names with the scope's name, so two steps with sections of the same names (a dot
step's ``decode`` and a quantizer's) follow one another on one pipeline with one flow
control.  The unit declares every step's sections, prefixed (:func:`scoped_sections`), in
datapath order (:mod:`hw.scope`).  Register placement: :mod:`hw.placement`.
"""

from __future__ import annotations

from collections.abc import Mapping

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data

from .placement import (
    critical_stage,
    default_stages,
    enable_parts,
    place_registers,
    registered_boundaries,
    stage_delays,
    stage_sections,
)
from .scope import SAME, PipelineScope, scoped_sections

__all__ = ["Pipeline", "PipelineScope", "scoped_sections", "place_registers", "stage_sections",
           "stage_delays", "critical_stage", "registered_boundaries", "default_stages",
           "enable_parts"]


class Pipeline:
    """A valid/ready pipeline with registers at ``stages`` of its section boundaries.

    The datapath is written as sections separated by calls to :meth:`boundary`, one per
    entry of ``sections`` and in that order; each call either registers the value passed
    through it (if that boundary was chosen by :func:`place_registers`) or returns it
    unchanged.  :meth:`connect` then builds the handshake.

    Flow control: every register loads on one common enable.  Blocks are never lost or
    duplicated; throughput is one block per clock while the output is ready; under
    backpressure bubbles inside the pipeline wait with the blocks (they are not squeezed out).
    Synchronous reset clears the valid, hold and enable bits only; data registers are
    reset-less.  The enable is itself a register, ``advance <= o_ready | ~o_valid`` (reset 1),
    one copy per stage (as one net from ``o.ready`` to every flip-flop of a k = 32 unit it is
    the critical path in context), so enables start at flip-flops and ``i_ready`` is a
    register.  The pipeline learns of a stall one cycle late and moves once more: a one-entry
    skid register after the last stage catches that block.  While ``advance`` is high the skid
    register copies the last stage; while it is low the output shows the skid register until
    it is taken (``o_valid``/payload are a 2:1 mux of the two; :meth:`last_stage` reads past
    it).  A copy's update uses the copy itself in place of ``advance``: equal in every
    reachable state, but a different function, so synthesis cannot merge the copies back into
    one net (yosys ``opt_merge`` merges flip-flops with identical inputs).  With
    :meth:`hold_when`, a register ``<name>_hold0`` beside the last stage's valid bit says
    whether its block is one that waits, and only such a block stops ``advance``; ``o_ready``
    may come in copies (:meth:`connect`).

    ``enable_load``: a stage register wider than ``enable_load`` bits is loaded in parts
    (:func:`enable_parts`), each on its own copy of the enable register (``<name>_<boundary>_en``,
    then ``_en1``, ...; each with its ``_advance`` register): one enable net to the 200-1,232
    flip-flops of a k = 32 quantizer stage is a critical path in context (4.0-4.1 ns routing).

    ``extract_reset=False``: every register carries ``extract_reset = "no"`` (Vivado's name;
    the project's yosys flow honors it too, ``bench.synth.flow``): a register's clear stays in
    the logic before it, not on the ECP5 LSR pin that a slice's two flip-flops share (the
    quantizer's worst paths end on such LUTs with extraction: docs/quantizer.md, 'No logic on
    the flip-flops' reset pins').  Extraction saves LUTs where the clears are many (the
    dequantizer: 30 % of its LUT4), so it stays the default.

    Latency is the number of registered boundaries: a block accepted in cycle ``c`` is
    presented on the output in cycle ``c + latency`` (without backpressure).

    Parameters
    ----------
    m : Module
    sections : mapping of str to float
        Section name -> estimated delay (ns), in datapath order; the boundary after a section
        has the section's name.
    stages : int
        Registered boundaries, ``1..len(sections)``; the last boundary is always one.
    name : str
        Prefix of the generated signal names.
    enable_load : int or None
        The most bits of a stage register one enable copy loads (None: one copy per stage,
        the default).
    extract_reset : bool
        False: the registers carry ``extract_reset = "no"`` (above).  Default True.

    Members
    -------
    latency : int
        ``stages``.
    registered : tuple of bool
        Per boundary, whether it holds a register.
    names : tuple of str
        The boundaries, in datapath order.
    extract_reset : bool
        Whether synthesis may make a register's clear its synchronous reset.
    """

    def __init__(self, m: Module, sections: Mapping[str, float], stages: int, *,
                 name: str = "p", enable_load: int | None = None,
                 extract_reset: bool = True):
        if not isinstance(extract_reset, bool):
            raise TypeError(f"extract_reset must be a bool, not {extract_reset!r}")
        if enable_load is not None:
            if not isinstance(enable_load, int) or isinstance(enable_load, bool):
                raise TypeError(f"enable_load must be an int or None, not {enable_load!r}")
            if enable_load < 1:
                raise ValueError(f"enable_load must be at least 1, not {enable_load}")
        self._m = m
        self._enable_load = enable_load
        self._extract_reset = extract_reset
        self._attrs = {} if extract_reset else {"extract_reset": "no"}  # on every register
        self._names = tuple(sections)
        self._registered = place_registers(list(sections.values()), stages)
        self._name = name
        self._index = 0
        self._valids = []  # valid bit of each registered stage
        # per registered stage: its enable copies, the first its load enable (driven in connect)
        self._enable_copies = []
        self._made = []  # every enable copy, in the order made (a step's before the next's)
        # boundary name -> its stage's enable copies, the load enable first
        self._copies_by_name = {}
        self._hold_flag = None  # hold_when's flag; None: every valid block waits
        self._waits = None  # whether the last stage's block waits
        self._out_hold = None
        self._in_valid = Signal(name=f"{name}_in_valid")
        self._out_valid = None
        self._last_input = None  # the value crossed at the last boundary, before its register
        self._last_prev_valid = None  # the valid bit before the last boundary
        self._behind = {}  # id of a value the output shows -> (the value, its stage register)

    @property
    def latency(self) -> int:
        return sum(self._registered)

    @property
    def name(self) -> str:
        """The prefix of the pipeline's signal names."""
        return self._name

    @property
    def module(self) -> Module:
        """The module the pipeline's registers (and its steps' logic) are built in."""
        return self._m

    def scope(self, prefix: str | None = None, *, sections=SAME) -> PipelineScope:
        """A view of this pipeline for one step (:class:`hw.scope.PipelineScope`): its
        signals are named ``<prefix>_...`` and its boundary ``b`` is the pipeline's
        ``<sections>_b`` (``sections`` defaults to ``prefix``; with neither, the pipeline's
        own names).  Steps in scopes of the same ``sections`` run beside each other on those
        sections: the first to cross a boundary crosses it (:meth:`boundary`), the others
        cross it beside it (:meth:`beside`)."""
        return PipelineScope(self, prefix, sections)

    def crossed(self, name: str) -> bool:
        """Whether the boundary ``name`` has been crossed."""
        if name not in self._names:
            raise ValueError(f"no boundary {name!r}; declared: {', '.join(self._names)}")
        return name in self._names[:self._index]

    @property
    def registered(self) -> tuple[bool, ...]:
        return self._registered

    @property
    def extract_reset(self) -> bool:
        return self._extract_reset

    @property
    def names(self) -> tuple[str, ...]:
        """The boundaries' names, in datapath order (the keys of ``sections``)."""
        return self._names

    def registers(self, name: str) -> bool:
        """Whether the boundary ``name`` holds a register (a datapath may build a section
        differently when it does)."""
        if name not in self._names:
            raise ValueError(f"no boundary {name!r}; declared: {', '.join(self._names)}")
        return self._registered[self._names.index(name)]

    def enable(self, name: str) -> Signal:
        """The load enable of the registered boundary ``name``, once crossed: for a register
        built outside the pipeline that must load with the boundary's (a DSP block's own input
        or output register, :func:`hw.dsp.mult18x18d`)."""
        if not self.registers(name):
            raise ValueError(f"boundary {name!r} holds no register")
        if name not in self._copies_by_name:
            raise ValueError(f"boundary {name!r} is not crossed yet")
        return self._copies_by_name[name][0]

    @property
    def hold(self) -> Value:
        """A valid block (with the :meth:`hold_when` flag) waits at the output: the last
        stage's valid bit (with :meth:`hold_when`, the register ``<name>_hold0``) or, while
        the skid register is full, 1 (its block waits)."""
        if self._out_hold is None:
            raise ValueError("hold is known once the last boundary is crossed")
        return self._out_hold

    def hold_when(self, flag):
        """Only valid blocks with ``flag`` (a 1-bit Value before the last boundary) wait for
        ``o_ready`` at the output; by default every valid block does.  MXDotGeneral passes
        "last": blocks that produce no output never wait."""
        if self._index == len(self._names):
            raise ValueError("hold_when after the last boundary: its flag is read before it")
        self._hold_flag = flag

    def boundary(self, value, name: str):
        """Carry ``value`` (a Value or a :class:`~amaranth.lib.data.View`) over the boundary
        ``name`` (the next one of ``sections``); returns it registered or unchanged."""
        if self._index >= len(self._names):
            raise ValueError(f"more boundaries than the {len(self._names)} declared")
        if name != self._names[self._index]:
            raise ValueError(f"boundary {name!r} crossed where {self._names[self._index]!r} "
                             f"is declared")
        registered = self._registered[self._index]
        self._index += 1
        if not registered:
            return value
        m, tag = self._m, f"{self._name}_{name}"
        last = self._index == len(self._names)
        prev_valid = self._valids[-1] if self._valids else self._in_valid
        enable = Signal(name=f"{tag}_en")
        valid = Signal(name=f"{tag}_valid", attrs=self._attrs)
        with m.If(enable):
            m.d.sync += valid.eq(prev_valid)
        self._valids.append(valid)
        parts = enable_parts(len(Value.cast(value)), self._enable_load)
        copies = [enable] + [Signal(name=f"{tag}_en{c}") for c in range(1, len(parts))]
        self._made.extend(copies)
        self._enable_copies.append(copies)
        self._copies_by_name[name] = copies
        reg = self._register(value, copies, tag)
        if not last:
            return reg
        self._last_input, self._last_prev_valid = value, prev_valid
        # The skid register beside the last stage.  It is full exactly when the enable is
        # low: the cycle after the output held a block that waited and was not taken.
        skid = self._register(reg, copies, f"{tag}_skid")
        self._out_valid = Signal(name=f"{tag}_out_valid")
        m.d.comb += self._out_valid.eq(valid | ~enable)
        if self._hold_flag is None:  # every valid block waits
            self._waits, self._out_hold = valid, self._out_valid
        else:
            self._waits = Signal(name=f"{self._name}_hold0", attrs=self._attrs)
            with m.If(enable):
                m.d.sync += self._waits.eq(prev_valid & self._hold_flag)
            self._out_hold = Signal(name=f"{tag}_out_hold")
            m.d.comb += self._out_hold.eq(self._waits | ~enable)
        return self._shown(enable, reg, skid)

    def _shown(self, enable, reg, skid):
        """``reg`` (a last-stage register) while ``enable`` is high, else ``skid``."""
        shown = (reg.shape()(Mux(enable, reg.as_value(), skid.as_value()))
                 if isinstance(reg, data.View) else Mux(enable, reg, skid))
        self._behind[id(shown)] = (shown, reg)
        return shown

    def last_stage(self, shown):
        """The last stage's register behind ``shown`` (returned at the last boundary, or a copy
        or valid bit of :meth:`output_copies`): shown while the stage's enable is high, when
        alone a block can enter, so what an entering block reads from the leaving one (the
        accumulators' forwarding) may read it without the enable's select (MXDotGeneral
        nvfp4's worst path, ``eround_en`` -> ``decode``)."""
        if id(shown) not in self._behind:
            raise ValueError("not a value the pipeline's output shows")
        return self._behind[id(shown)][1]

    @property
    def last_input(self):
        """The value crossed at the last boundary by the datapath that crossed it first, before
        its register (the block entering the last stage), for :meth:`output_copies`."""
        if self._last_input is None:
            raise ValueError("last_input is known once the last boundary is crossed")
        return self._last_input

    def output_copies(self, value, copies: int) -> list:
        """``value`` (computed from the block entering the last stage, :attr:`last_input`)
        at the output in ``copies`` copies, each with the output's valid bit: the pipeline's
        last stage and skid register rebuilt, per copy, for a few bits that fan out over the
        die from the output (the leaving block's context in every lane of a tile).

        Copy ``c``: a valid bit ``<name>_<last>_o<c>_valid`` and a register ``..._o<c>``
        beside the last stage's, a skid register ``..._o<c>_skid`` beside its skid register,
        all on one enable copy of their own (the stage's next ``..._en<n>``).  Its valid is
        ``valid | ~enable`` and its value ``Mux(enable, register, skid)``, as the output's
        own: equal to the output's in every reachable state (reset included), a net per copy.

        Returns
        -------
        list of (Value, Value)
            Per copy, the output's valid bit and ``value``.
        """
        if not isinstance(copies, int) or isinstance(copies, bool) or copies < 1:
            raise ValueError(f"copies must be a positive int, not {copies!r}")
        if self._last_input is None:
            raise ValueError("output copies are built once the last boundary is crossed")
        name = self._names[-1]
        tag, m = f"{self._name}_{name}", self._m
        out = []
        for c in range(copies):
            enable, = self._more_enables(name, 1)
            valid = Signal(name=f"{tag}_o{c}_valid", attrs=self._attrs)
            with m.If(enable):
                m.d.sync += valid.eq(self._last_prev_valid)
            reg = self._register(value, [enable], f"{tag}_o{c}")
            skid = self._register(reg, [enable], f"{tag}_o{c}_skid")
            valid_shown = valid | ~enable
            self._behind[id(valid_shown)] = (valid_shown, valid)
            out.append((valid_shown, self._shown(enable, reg, skid)))
        return out

    def enable_copy(self, name: str) -> Signal:
        """A new copy of the registered boundary ``name``'s stage enable (``<prefix>_<name>_en<n>``,
        its own ``_advance`` register), for state built outside the pipeline that must move
        with the stage: a delay line's memory and pointer (:mod:`hw.delay_line`)."""
        if not self.registers(name):
            raise ValueError(f"boundary {name!r} holds no register")
        if name not in self._copies_by_name:
            raise ValueError(f"boundary {name!r} is not crossed yet")
        return self._more_enables(name, 1)[0]

    def _more_enables(self, name: str, count: int) -> list:
        """``count`` new copies of the crossed boundary ``name``'s stage enable
        (``<prefix>_<name>_en<n>``, after its others; each its own ``_advance`` register)."""
        copies = self._copies_by_name[name]
        enables = [Signal(name=f"{self._name}_{name}_en{len(copies) + p}")
                   for p in range(count)]
        copies.extend(enables)
        self._made.extend(enables)
        return enables

    def ready_copies(self, count: int) -> list:
        """``count`` copies of the ``i_ready`` that :meth:`connect` drives (the first stage's
        enable, each its own ``_advance`` register), once that stage is crossed: the ``o_ready``
        copies of the pipeline before this one."""
        first = self._names[self._registered.index(True)]
        return [self.enable_copy(first) for _ in range(count)]

    def _more_waits(self, count: int) -> list:
        """``count`` copies of the flag that the last stage's block waits (``<name>_hold<n>``,
        from 1), each on an enable copy of its own."""
        flag = self._last_prev_valid & (1 if self._hold_flag is None else self._hold_flag)
        waits = []
        for c in range(1, count + 1):
            enable, = self._more_enables(self._names[-1], 1)
            waits.append(Signal(name=f"{self._name}_hold{c}", attrs=self._attrs))
            with self._m.If(enable):
                self._m.d.sync += waits[-1].eq(flag)
        return waits

    def beside(self, value, name: str, tag: str):
        """Carry ``value`` over the boundary ``name``, which another datapath has crossed, in
        registers of its own named ``<pipeline name>_<tag>``: a second step on the same
        sections (:meth:`scope`), in the same stages.  They load on enable copies of their
        own of the boundary's stage (numbered after its others, as :meth:`replicate`'s); at
        the last boundary with a skid register of their own, as the first datapath's.
        Returns ``value`` itself where ``name`` holds no register."""
        if not self.crossed(name):
            raise ValueError(f"boundary {name!r} is not crossed yet: a step beside another "
                             f"crosses a boundary after it")
        if not self.registers(name):
            return value
        parts = len(enable_parts(len(Value.cast(value)), self._enable_load))
        enables = self._more_enables(name, parts)
        tag = f"{self._name}_{tag}"
        reg = self._register(value, enables, tag)
        if name != self._names[-1]:
            return reg
        skid = self._register(reg, enables, f"{tag}_skid")  # as boundary's, on these copies
        return self._shown(enables[0], reg, skid)

    def replicate(self, value, name: str, copies: int) -> list:
        """``value`` carried over the boundary ``name`` in ``copies`` registers, each loaded
        on enable copies of its own (the stage's next ``<prefix>_<name>_en<n>``), or
        ``copies`` times ``value`` itself where ``name`` holds no register.

        For a value that fans out over the die: each copy (``value``'s shape) drives a part of
        its loads from a flip-flop placed near them.  Registers with the same input and the
        same enable are merged by synthesis (yosys ``opt_merge``; a ``keep`` attribute does
        not stop it), so each copy loads on enables of its own, equal in every reachable state
        but distinct nets.  ``copies`` >= 1; ``name`` is the boundary just crossed
        (:meth:`boundary`), not the last one, whose block the skid register alone catches.
        """
        if not isinstance(copies, int) or isinstance(copies, bool) or copies < 1:
            raise ValueError(f"copies must be a positive int, not {copies!r}")
        if not self.registers(name):
            if name not in self._names[:self._index]:
                raise ValueError(f"boundary {name!r} is not crossed yet")
            return [value] * copies
        if name not in self._copies_by_name:
            raise ValueError(f"boundary {name!r} is not crossed yet")
        if name == self._names[-1]:
            raise ValueError(f"boundary {name!r} is the last one: its value cannot be "
                             f"replicated (the skid register holds one copy)")
        if self._names.index(name) != self._index - 1:
            raise ValueError(f"boundary {name!r} is behind: replicate after crossing it, "
                             f"before the next")
        parts = len(enable_parts(len(Value.cast(value)), self._enable_load))
        return [self._register(value, self._more_enables(name, parts),
                               f"{self._name}_{name}_r{c}") for c in range(copies)]

    def _register(self, value, enables, name):
        """A register loading ``value``: part ``c`` of :func:`enable_parts` on ``enables[c]``."""
        shape = value.shape() if isinstance(value, data.View) else Value.cast(value).shape()
        reg = Signal(shape, name=name, reset_less=True, attrs=self._attrs)
        if len(enables) == 1:
            with self._m.If(enables[0]):
                self._m.d.sync += reg.eq(value)
            return reg
        flat, source = Value.cast(reg), Value.cast(value)
        parts = enable_parts(len(flat), self._enable_load)
        for enable, (lo, hi) in zip(enables, parts, strict=True):
            with self._m.If(enable):
                self._m.d.sync += flat[lo:hi].eq(source[lo:hi])
        return reg

    def connect(self, *, i_valid, i_ready, o_valid, o_ready):
        """Build the handshake: drive ``i_ready``, ``o_valid`` and the stage enables.

        ``o_ready``: a Value, or a list of copies of it (equal in every reachable state,
        distinct nets: the next pipeline's :meth:`ready_copies`).  With copies, the enable
        copies, in the order made, are cut into as many runs, each updated from one copy and
        a copy of its own of the waiting flag: no net reaches every stage's enable."""
        if self._index != len(self._names):
            raise ValueError(f"{len(self._names)} boundaries declared, {self._index} crossed")
        m = self._m
        readys = list(o_ready) if isinstance(o_ready, (list, tuple)) else [o_ready]
        waits = [self._waits, *self._more_waits(len(readys) - 1)]
        made = {id(enable): k for k, enable in enumerate(self._made)}
        for enable in (copy for copies in self._enable_copies for copy in copies):
            run = made[id(enable)] * len(readys) // len(made)
            advance = Signal(name=f"{enable.name}_advance", init=1, attrs=self._attrs)
            m.d.sync += advance.eq(readys[run] | (~waits[run] & advance))
            m.d.comb += enable.eq(advance)
        m.d.comb += [self._in_valid.eq(i_valid), i_ready.eq(self._enable_copies[0][0]),
                     o_valid.eq(self._out_valid)]
