"""hw.pipeline.Pipeline's structure: its boundaries checked, which hold registers, the enable
copies and parts, the default depth and critical stage of a placement, the reset attribute,
the tests' depth lookup (tests/depths.py), and the register placement's minimax against
brute force for every unit."""

from __future__ import annotations

import itertools
import re

import pytest
from amaranth.hdl import Module, Signal
from pipeline_toys import SECTIONS, Chain

import golden
from hw.pipeline import Pipeline, critical_stage, default_stages, enable_parts


def test_pipeline_checks_its_boundaries():
    m = Module()
    pipe = Pipeline(m, SECTIONS, 2, name="t")
    with pytest.raises(ValueError, match="'b' crossed where 'a' is declared"):
        pipe.boundary(Signal(4), "b")
    with pytest.raises(ValueError, match="stages must be in 1..4"):
        Pipeline(Module(), SECTIONS, 5)
    done = Pipeline(Module(), SECTIONS, 1, name="t")
    for name in SECTIONS:
        done.boundary(Signal(4), name)
    with pytest.raises(ValueError, match="hold_when after the last boundary"):
        done.hold_when(Signal())
    with pytest.raises(ValueError, match="hold is known once the last boundary is crossed"):
        _ = Pipeline(Module(), SECTIONS, 2).hold
    with pytest.raises(ValueError, match="enable_load must be at least 1, not 0"):
        Pipeline(Module(), SECTIONS, 2, enable_load=0)
    with pytest.raises(TypeError, match="enable_load must be an int or None, not 2.5"):
        Pipeline(Module(), SECTIONS, 2, enable_load=2.5)


@pytest.mark.parametrize("width,load,parts", [
    (16, None, [(0, 16)]), (16, 16, [(0, 16)]), (16, 5, [(0, 4), (4, 8), (8, 12), (12, 16)]),
    (17, 8, [(0, 5), (5, 11), (11, 17)]), (3, 1, [(0, 1), (1, 2), (2, 3)]),
])
def test_enable_parts_are_the_fewest_equal_parts_within_the_load(width, load, parts):
    assert list(enable_parts(width, load)) == parts


def test_a_stage_in_parts_has_one_enable_copy_per_part():
    """A 16-bit stage register in four parts: four enable registers per stage, no fifth, as
    the formal proofs count them (:func:`formal.units.enable_copies`).  That each part loads
    on its own copy is checked on the netlist by the register-bypass proof
    (formal/datapath.py) and in function by the simulations above."""
    from amaranth.back import rtlil

    from formal.units import enable_copies

    text = rtlil.convert(Chain(4, 5), ports=[])
    assert enable_copies(text, "t", SECTIONS) == dict.fromkeys(SECTIONS, 4)


def test_pipeline_names_which_boundaries_hold_registers():
    pipe = Pipeline(Module(), SECTIONS, 2, name="t")
    assert pipe.names == ("a", "b", "c", "d")
    assert [pipe.registers(name) for name in pipe.names] == list(pipe.registered)
    assert sum(pipe.registered) == 2 and pipe.registers("d")  # the last one always
    with pytest.raises(ValueError, match="no boundary 'e'; declared: a, b, c, d"):
        pipe.registers("e")


def test_pipeline_gives_a_registered_boundarys_enable_once_crossed():
    """A register built outside the pipeline (a DSP block's) loads with its boundary's
    enable: the one that loads the pipeline's own register there."""
    m = Module()
    pipe = Pipeline(m, SECTIONS, 2, name="t")
    first = next(name for name in pipe.names if pipe.registers(name))
    unregistered = next(name for name in pipe.names if not pipe.registers(name))
    with pytest.raises(ValueError, match=f"boundary '{first}' is not crossed yet"):
        pipe.enable(first)
    with pytest.raises(ValueError, match=f"boundary '{unregistered}' holds no register"):
        pipe.enable(unregistered)
    value = Signal(4)
    for name in pipe.names:
        value = pipe.boundary(value, name)
        if name == first:
            assert len(pipe.enable(name)) == 1
    # one enable per registered stage, the same one each time it is asked for (that a block
    # register on it loads with the stage is the register-bypass proof's check)
    enables = [pipe.enable(n) for n in pipe.names if pipe.registers(n)]
    assert all(len(e) == 1 for e in enables) and len({id(e) for e in enables}) == 2
    assert all(pipe.enable(n) is e for n, e in zip(
        [n for n in pipe.names if pipe.registers(n)], enables, strict=True))


@pytest.mark.parametrize("delays,expected", [
    ([3.0], 1),
    ([1.0, 1.0, 1.0, 1.0], 4),  # no two sections fit in one stage
    ([3.0, 1.0, 2.0, 3.0], 3),  # 1 + 2 <= 3: one merge; 3 + 1 > 3, so not two
    ([0.2, 1.5, 3.5, 2.0, 1.5], 3),  # input + decode, norm, exp + scale (the quantizer's)
    ([2.0, 4.0, 3.0, 3.5, 3.5, 2.5], 6),  # the dequantizer's: no pair within 4.0
    ([0.1, 0.2, 0.3], 2),  # 0.1 + 0.2 is 0.30000000000000004 in floating point: fits
])
def test_default_stages_is_the_fewest_with_the_longest_section_as_critical(delays, expected):
    assert default_stages(delays) == expected


@pytest.mark.parametrize("delays,stages,expected", [
    ([3.0, 1.0, 2.0, 3.0], 4, 3.0),  # every boundary: the longest section
    ([3.0, 1.0, 2.0, 3.0], 3, 3.0),  # 1 + 2 share a stage
    ([3.0, 1.0, 2.0, 3.0], 2, 5.0),  # 3 + 1 | 2 + 3 (or 3 | 1 + 2 + 3 = 6: worse)
    ([3.0, 1.0, 2.0, 3.0], 1, 9.0),  # all in one stage
])
def test_critical_stage_is_the_longest_stage_of_the_placement(delays, stages, expected):
    assert critical_stage(delays, stages) == expected


def test_extract_reset_marks_every_register():
    """``extract_reset=False`` puts ``extract_reset = "no"`` on every register: the stages'
    data, the skid register, the valid bits and the enable registers.  The default marks
    nothing.  A non-bool is refused."""
    from amaranth.back import rtlil

    def marked(extract_reset):
        unit = Chain(3, extract_reset=extract_reset)
        text = rtlil.convert(unit, name="top", ports=[
            unit.i_valid, unit.i_ready, unit.i_data, unit.o_valid, unit.o_ready, unit.o_data])
        return set(re.findall(r'attribute \\extract_reset "no"\n\s*wire width \d+ \\(\S+)',
                              text))

    assert marked(True) == set()
    names = marked(False)
    for kind in ("_skid", "_valid", "_advance"):
        assert any(n.endswith(kind) for n in names), (kind, names)
    with pytest.raises(TypeError, match="extract_reset must be a bool, not 0"):
        Pipeline(Module(), SECTIONS, 2, extract_reset=0)


def test_test_depths_are_found_from_the_sections_or_fail_by_name():
    """tests/depths.py (the depths of the lint and simulation configurations): a depth is
    found from the unit's sections, and one no depth has fails naming the configuration."""
    import depths

    argv = ["--format", "int8", "--block-size", "2"]
    top = depths.max_stages("quantizer", argv)
    last = list(depths.build("quantizer", argv).sections)[-1]
    assert depths.registering("quantizer", argv, {last: True}) == 1
    assert depths.registering("quantizer", argv, {last: True}, deepest=True) == top
    with pytest.raises(LookupError, match=rf"quantizer --format int8 --block-size 2: no "
                                          rf"depth in 1..{top} registers exactly"):
        depths.registering("quantizer", argv, {last: False})


# -- register placement: the minimax, by brute force, for every unit -----------------------
def _units_sections():
    from hw.dequantizer import DEQUANTIZER_SECTIONS
    from hw.dot import DotGeometry
    from hw.dot.fused_step import dot_sections
    from hw.quantizer import quantizer_sections

    fp8 = golden.element_format("fp8_e4m3")
    yield "dot", dot_sections(DotGeometry(fp8, fp8, 32))
    yield "dequantizer", DEQUANTIZER_SECTIONS
    for k in (2, 4, 32, 64):
        yield f"quantizer k={k}", quantizer_sections("fp8_e4m3", k)
    yield "quantizer int8 k=32", quantizer_sections("int8", 32)
    yield "quantizer k=32 radix 4", quantizer_sections("fp8_e4m3", 32, 5)


@pytest.mark.parametrize("unit,sections", list(_units_sections()),
                         ids=[u for u, _ in _units_sections()])
def test_placement_minimizes_the_worst_stage(unit, sections):
    from hw.pipeline import place_registers, registered_boundaries, stage_delays

    delays = list(sections.values())
    n = len(delays)

    def worst(cuts):  # cuts: boundary indices after which a register sits (the last: n)
        bounds = [0, *cuts]
        return max(sum(delays[a:b]) for a, b in itertools.pairwise(bounds))

    for stages in range(1, n + 1):
        flags = place_registers(delays, stages)
        assert len(flags) == n and sum(flags) == stages and flags[-1], stages
        got = [i + 1 for i in range(n) if flags[i]]
        best = min(worst([*c, n]) for c in itertools.combinations(range(1, n), stages - 1))
        assert worst(got) == best, (unit, stages)
        sums = stage_delays(delays, stages)  # the same stages, summed
        assert len(sums) == stages and max(sums) == pytest.approx(best)
        assert sum(sums) == pytest.approx(sum(delays))
        # the sidecar's names of the registered boundaries: `stages` of them, in datapath
        # order, the last section's among them, and as good a placement as the best
        names = registered_boundaries(sections, stages)
        cuts = [list(sections).index(name) + 1 for name in names]
        assert len(cuts) == stages and cuts == sorted(set(cuts)) and cuts[-1] == n, names
        assert worst(cuts) == best, (unit, stages, names)
    assert all(place_registers(delays, n))
    for bad in (0, n + 1):
        with pytest.raises(ValueError, match=f"stages must be in 1..{n}"):
            place_registers(delays, bad)
