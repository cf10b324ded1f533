"""Fast checks of the GEMM tile (hw.gemm.MXGemm) without a simulator: parameters, ports,
names, the command line and the sidecar.  Its function: tests/test_sim_gemm.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import golden
from hw.dot import MXDotGeneral
from hw.gemm import MXGemm
from hw.gemm.output import RECEIVE_BOUNDARY, output_quantizer
from hw.gemm.tile import default_contexts
from hw.pipeline import place_registers, registered_boundaries
from hw.quantizer import MXQuantizer
from hw.sidecar import flat_fields, port_by_role, sidecar, validate
from tb.runner import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


@pytest.mark.parametrize("kwargs,error,match", [
    ({"rows": 0}, ValueError, r"rows must be in 1\.\.16, got 0"),
    ({"cols": 17}, ValueError, r"cols must be in 1\.\.16, got 17"),
    ({"rows": 2.0}, TypeError, "rows must be an int"),
    ({"contexts": 3}, ValueError, r"contexts must be a power of two in 1\.\.64, got 3"),
    ({"block_size": 24}, ValueError, "block_size must be a power of two"),
    ({"stages": 0}, ValueError, r"stages must be in 1\.\."),
    ({"multipliers": "wallace"}, ValueError, "unknown multipliers 'wallace'"),
    ({"cols": 3, "out_format": "fp8_e4m3"}, ValueError,
     r"an MX output .* cols must be a power of two in 2\.\.16, got 3"),
    ({"out_format": "fp7"}, ValueError, "fp7"),
    ({"accumulators": "ebr"}, ValueError,
     "accumulators must be one of registers, memory, not 'ebr'"),
])
def test_bad_parameters_raise_one_line_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        MXGemm("fp8_e4m3", **{"block_size": 4, **kwargs})
    with pytest.raises(ValueError, match="fp7"):
        MXGemm("fp7")


def test_parameters_latency_and_default_contexts():
    """The fused step's sections and depth are MXDotGeneral's (every lane at the same
    boundaries); the default contexts, the smallest power of two >= the latency, keep every
    lane busy every clock."""
    g = MXGemm("fp8_e4m3", "fp4_e2m1", rows=2, cols=3, block_size=8)
    d = MXDotGeneral("fp8_e4m3", "fp4_e2m1", block_size=8)
    assert g.sections == d.sections and g.latency == d.latency == g.stages
    assert g.contexts == default_contexts(g.latency) >= g.latency > g.contexts // 2
    assert [default_contexts(n) for n in (1, 2, 3, 16, 17)] == [1, 2, 4, 16, 32]
    assert g.lanes == 6 and g.parameters["rows"] == 2 and g.parameters["cols"] == 3
    assert g.module_name == (f"mx_gemm_fp8_e4m3_fp4_e2m1_r2x3_k8_c{g.contexts}_s{g.stages}")
    assert MXGemm("int8", block_size=4, stages=3, contexts=1,
                  multipliers="dsp").module_name == "mx_gemm_int8_int8_r2x2_k4_c1_s3_dsp"


def test_ports_are_typed_and_the_sidecar_describes_every_field():
    g = MXGemm("fp6_e2m3", "int8", rows=2, cols=3, block_size=4, contexts=4, stages=2)
    meta = validate(sidecar(g, "gemm"))
    assert meta["unit"] == "gemm" and meta["latency"] == 2
    assert meta["flow_control"] == {"i_ready": "combinational"}
    i = [(f["name"], f["width"]) for f in flat_fields(port_by_role(meta, "i.payload")["fields"])]
    o = [(f["name"], f["width"]) for f in flat_fields(port_by_role(meta, "o.payload")["fields"])]
    assert i == [("a.row0.scale", 8), ("a.row0.codes", 24), ("a.row1.scale", 8),
                 ("a.row1.codes", 24), *[(f"b.col{c}.{f}", w) for c in range(3)
                                         for f, w in (("scale", 8), ("codes", 32))],
                 ("c0.row0", 96), ("c0.row1", 96), ("first", 1), ("last", 1), ("ctx", 2)]
    assert o == [("result.row0", 96), ("result.row1", 96), ("ctx", 2)]
    mx = MXGemm("fp6_e2m3", "int8", rows=2, cols=4, block_size=4, contexts=4, stages=2,
                out_format="fp4_e2m1")
    meta = validate(sidecar(mx, "gemm"))
    assert meta["latency"] == 2 + mx.quantizer_stages and mx.quantizer_stages > 0
    assert meta["parameters"]["out_format"] == "fp4_e2m1"
    assert mx.module_name.endswith("_s2_ofp4_e2m1")
    o = [(f["name"], f["width"]) for f in flat_fields(port_by_role(meta, "o.payload")["fields"])]
    assert o == [("result.row0.scale", 8), ("result.row0.codes", 16), ("result.row1.scale", 8),
                 ("result.row1.codes", 16), ("ctx", 2)]


def test_nvfp4_tile_parameters_ports_and_one_line_errors():
    """nvfp4 x nvfp4: blocks of 16 by default, UE4M3 scales recorded in the sidecar, and with
    ``levels`` 2 (the default) the input field ``alpha`` and ten epilogue sections after the
    step's, MXDotGeneral's; the combinations the tile does not take are one-line errors."""
    g = MXGemm("nvfp4", rows=2, cols=2, contexts=4, stages=3)
    d = MXDotGeneral("nvfp4")
    assert g.block_size == 16 and g.levels == 2 and g.sections == d.sections
    assert g.module_name == "nvfp4_gemm_l2_r2x2_k16_c4_s3"
    meta = validate(sidecar(g, "gemm"))
    assert meta["parameters"]["scale_format"] == "ue4m3" and meta["parameters"]["levels"] == 2
    i = [f["name"] for f in flat_fields(port_by_role(meta, "i.payload")["fields"])]
    assert i[-3:] == ["last", "ctx", "alpha"]
    one = MXGemm("nvfp4", rows=1, cols=2, levels=1, stages=3, contexts=4)
    assert one.module_name == "nvfp4_gemm_l1_r1x2_k16_c4_s3" and "alpha" not in \
        [f["name"] for f in flat_fields(port_by_role(sidecar(one, "gemm"), "i.payload")["fields"])]
    for kwargs, match in (
            ({"fmt_b": "fp8_e4m3"}, r"nvfp4 goes with nvfp4 only \(nvfp4 x nvfp4\)"),
            ({"accumulation": "tcgen05.mxf4"}, "tcgen05.mxf4"),
            ({"out_format": "nvfp4"}, r"out_format='nvfp4' \(UE4M3 scales\) is golden.matmul's"),
            ({"levels": 3}, "levels must be 1 or 2, got 3")):
        with pytest.raises(ValueError, match=match):
            MXGemm("nvfp4", **kwargs)
    with pytest.raises(ValueError, match="levels=2 .* is nvfp4's"):
        MXGemm("fp8_e4m3", levels=2)


def test_lanes_sit_side_by_side_under_their_own_names():
    """Lane (0, 0) crosses the pipeline's boundaries (``gemm_<section>``), every other lane
    beside it in registers of its own (``gemm_r<r>c<c>_<section>``); each lane has its
    accumulators and its forwarded c."""
    from amaranth.back import rtlil

    g = MXGemm("fp4_e2m1", rows=2, cols=2, block_size=2, contexts=2, stages=3)
    wires = set(re.findall(r"^\s*wire .*\\(\S+)$", rtlil.convert(g), flags=re.M))
    placed = place_registers(list(g.sections.values()), g.stages)
    registered = [s for s, reg in zip(g.sections, placed, strict=True) if reg]
    assert len(registered) == 3
    for section in registered:
        assert f"gemm_{section}" in wires
        for lane in ("r0c1", "r1c0", "r1c1"):
            assert f"gemm_{lane}_{section}" in wires
    for lane in ("r0c0", "r0c1", "r1c0", "r1c1"):
        assert {f"{lane}_acc0", f"{lane}_acc1", f"{lane}_step_c", f"{lane}_decode"} <= wires


@pytest.mark.parametrize("out_format", sorted(golden.FORMATS))
def test_output_quantizers_are_one_register_deeper_at_their_input(out_format):
    """The MX output's quantizers (every OCP format, C = 2..16) are MXQuantizer's sections at
    its default depth plus one register, at the ``input`` boundary (no logic before it):
    the default's registers stay where they are."""
    for cols in (2, 4, 8, 16):
        default = MXQuantizer(out_format, cols, "fp32")
        q = output_quantizer(out_format, cols)
        assert q.stages == default.stages + 1 and q.sections == default.sections
        assert registered_boundaries(q.sections, q.stages) == (
            RECEIVE_BOUNDARY, *registered_boundaries(default.sections, default.stages))
        g = MXGemm("fp4_e2m1", rows=1, cols=cols, block_size=2, contexts=2, stages=2,
                   out_format=out_format)
        assert g.quantizer_stages == q.stages and g.latency == 2 + default.stages + 1
    assert RECEIVE_BOUNDARY not in registered_boundaries(default.sections, default.stages)


def test_output_quantizer_without_its_receive_register_is_a_one_line_error(monkeypatch):
    """Where the placement would not put the extra register at ``input``, the output
    quantizer is refused with one line naming the registers it would have."""
    import hw.gemm.output as output

    monkeypatch.setattr(output, "registered_boundaries", lambda sections, stages: ("decode",))
    with pytest.raises(ValueError, match=r"^the output quantizer to fp4_e2m1 of 4 values has "
                                         r"no register stage of its own at 'input': its "
                                         r"registers at \d+ stages are decode$"):
        output.output_quantizer("fp4_e2m1", 4)


#: An RTLIL register load ``with m.If(enable): reg.eq(source)``: the process that selects
#: the register's next value, then the flip-flop.
_LOAD = re.compile(r"process \S+\n    assign (\$\d+) \[[^\]]+\] \\(\S+) \[[^\]]+\]\n"
                   r"    switch \\(\S+) \[0\]\n      case 1'1\n        assign \1 \[[^\]]+\] "
                   r"(.+)\n")


def test_each_row_receives_the_tiles_results_in_a_register_of_its_own():
    """With an MX output each row's fp32 results, and the run's ctx, cross one register
    (``gq_input`` for row 0, ``gq_q<r>_input``, ``gq_ctx_input``) that loads the tile's
    output payload bits themselves (no logic before it), each on an enable copy of its own;
    the rows' decode reads those registers."""
    from amaranth.back import rtlil

    rows, cols = 3, 2
    g = MXGemm("fp4_e2m1", rows=rows, cols=cols, block_size=2, contexts=2, stages=2,
               out_format="fp4_e2m1")
    text = rtlil.convert(g)
    loads = {reg: (enable, source) for _, reg, enable, source in _LOAD.findall(text)}
    names = ["gq_input", *(f"gq_q{r}_input" for r in range(1, rows)), "gq_ctx_input"]
    width = 32 * cols
    sources = [*(f"\\tile__payload [{(r + 1) * width - 1}:{r * width}]" for r in range(rows)),
               f"\\tile__payload [{rows * width}]"]
    assert [loads[name][1] for name in names] == sources
    enables = [loads[name][0] for name in names]
    # row 0's on the stage's load enable (the tile's o.ready), the others on copies of it
    assert enables == ["gq_input_en", *(f"gq_input_en{n}" for n in range(1, len(names)))]
    for r, name in enumerate(names[:-1]):
        assert re.search(rf"connect \\A \\{name} \[\d+\]", text), f"row {r}'s decode"


def test_each_lane_reads_a_ready_copy_of_its_own():
    """With an MX output each lane's accumulator writes and a run of the tile's stage enables
    read a copy of the quantizers' input enable of their own (``tile_ready_r<r>c<c>``, a
    register: :meth:`hw.pipeline.Pipeline.ready_copies`), the run with a copy of its own of
    the waiting flag (``gemm_hold<n>``): no net from that enable reaches every enable of the
    tile (the fp4 4 x 4 tile's critical path, 7.27 ns of routing, with one)."""
    from amaranth.back import rtlil

    rows, cols = 3, 2
    text = rtlil.convert(MXGemm("fp4_e2m1", rows=rows, cols=cols, block_size=2, contexts=2,
                                stages=2, out_format="fp4_e2m1"))
    # the netlist names a net by one of its names: the copy's, or another it is assigned to
    alias = dict(re.findall(r"^connect \\(\S+) \\(\S+) \[0\]$", text, flags=re.MULTILINE))
    for r in range(rows):
        for c in range(cols):
            name = f"tile_ready_r{r}c{c}"
            net = alias.get(name, name)
            assert re.search(rf"connect \\Q \\{net}$", text, flags=re.MULTILINE), name
            assert len(re.findall(rf"connect \\[AB] \\{net} \[0\]", text)) >= 2, name
    holds = set(re.findall(r"\\(gemm_hold\d+)\b", text))
    assert holds == {f"gemm_hold{n}" for n in range(rows * cols)}


def test_mx_output_presents_a_run_latency_cycles_after_it_enters():
    """A run of one block entering alone, the output always ready, leaves exactly
    ``latency`` cycles later: the tile's stages, the quantizers' default depth and the
    receive register."""
    from amaranth.sim import Simulator

    g = MXGemm("fp4_e2m1", rows=2, cols=2, block_size=2, contexts=2, stages=2,
               out_format="fp8_e4m3")
    assert g.latency == 2 + MXQuantizer("fp8_e4m3", 2, "fp32").stages + 1
    seen = []

    async def bench(ctx):
        ctx.set(g.o.ready, 1)
        ctx.set(g.i.payload.first, 1)
        ctx.set(g.i.payload.last, 1)
        ctx.set(g.i.valid, 1)
        entered = None
        for cycle in range(40):
            await ctx.delay(1e-8)
            if entered is None and ctx.get(g.i.ready):
                entered = cycle
            if ctx.get(g.o.valid):
                seen.append(cycle - entered)
            await ctx.tick()
            if entered is not None:
                ctx.set(g.i.valid, 0)

    sim = Simulator(g)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [g.latency], seen


def test_memory_accumulators_are_one_memory_per_lane():
    """``accumulators="memory"``: each lane's contexts are the words of one memory
    (``<lane>_acc``, ``contexts`` x 32 bits) in place of a register per context; the module
    name says so (``_ram``) and the sidecar's parameters."""
    from amaranth.back import rtlil

    g = MXGemm("fp4_e2m1", rows=1, cols=2, block_size=2, contexts=4, stages=3,
               accumulators="memory")
    assert g.module_name == "mx_gemm_fp4_e2m1_fp4_e2m1_r1x2_k2_c4_s3_ram"
    assert validate(sidecar(g, "gemm"))["parameters"]["accumulators"] == "memory"
    text = rtlil.convert(g)
    memories = re.findall(r"^\s*memory width (\d+) size (\d+) \\(\S+)$", text, flags=re.M)
    assert sorted(memories) == [("32", "4", "r0c0_acc"), ("32", "4", "r0c1_acc")], memories
    wires = set(re.findall(r"^\s*wire .*\\(\S+)$", text, flags=re.M))
    assert not any(re.fullmatch(r"r0c[01]_acc\d+", w) for w in wires)
    assert {"r0c0_step_c", "r0c1_step_c"} <= wires


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hw", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_cli_generates_the_tile(tmp_path):
    out = tmp_path / "g.v"
    r = _cli("generate", "gemm", "--format", "fp4_e2m1", "--rows", "1", "--cols", "2",
             "--block-size", "2", "--stages", "2", "--contexts", "2", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "module mx_gemm_fp4_e2m1_fp4_e2m1_r1x2_k2_c2_s2" in out.read_text()
    side = validate(json.loads(out.with_suffix(".json").read_text()))
    assert side["parameters"]["contexts"] == 2 and side["parameters"]["cols"] == 2


@pytest.mark.parametrize("args", [
    ["--format", "fp8_e4m3", "--rows", "0"],
    ["--format", "fp8_e4m3", "--contexts", "5"],
    ["--format", "fp8_e4m3", "--block-size", "3"],
    ["--format-a", "fp8_e4m3"],
    ["--format", "fp8_e4m3", "--accumulators", "ebr"],
    ["--format", "nvfp4", "--out-format", "nvfp4"],
    ["--format", "fp8_e4m3", "--levels", "2"],
])
def test_cli_bad_parameters_one_line_exit_2(args, tmp_path):
    r = _cli("generate", "gemm", *args, "-o", str(tmp_path / "x.v"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0], r.stderr
    assert not (tmp_path / "x.v").exists()


def test_fusesoc_core_of_the_tile_lints(tmp_path):
    """``python -m hw generate gemm --fusesoc DIR`` writes a core whose lint target
    (``verilator --lint-only -Wall`` with the waivers) passes under FuseSoC."""
    import os

    pytest.importorskip("fusesoc", reason="fusesoc (the dev extra) is not installed")
    from hw.fusesoc import unit_vlnv
    from tb.verilator import verilator_environ

    cores = tmp_path / "cores"
    argv = ["--format", "fp4_e2m1", "--rows", "1", "--cols", "2", "--block-size", "2",
            "--stages", "2", "--contexts", "2"]
    r = _cli("generate", "gemm", *argv, "--fusesoc", str(cores))
    assert r.returncode == 0, r.stderr
    module = MXGemm("fp4_e2m1", rows=1, cols=2, block_size=2, stages=2,
                    contexts=2).module_name
    env = verilator_environ()
    env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT)
    for var in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(tmp_path / "xdg" / var.lower())
    env.pop("FUSESOC_CONFIG", None)
    r = subprocess.run([sys.executable, "-m", "fusesoc.main", "--cores-root", str(cores), "run",
                        "--build-root", str(tmp_path / "build"), "--target", "lint",
                        unit_vlnv(module)], capture_output=True, text=True, cwd=tmp_path,
                       env=env)
    assert r.returncode == 0 and "%Warning" not in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("fmt,out_format,accumulators,levels,accumulation", [
    ("fp4_e2m1", None, "registers", None, "exact"),
    ("fp4_e2m1", "fp8_e4m3", "registers", None, "exact"),
    ("fp4_e2m1", None, "memory", None, "exact"),
    ("fp4_e2m1", "fp8_e4m3", "memory", None, "exact"),
    ("nvfp4", None, "registers", 2, "exact"), ("nvfp4", "fp8_e4m3", "memory", 2, "exact"),
    ("nvfp4", None, "registers", 1, "exact"),
    ("nvfp4", None, "memory", 2, "tcgen05.mxf4nvf4"),
    ("nvfp4", None, "registers", 1, "tcgen05.mxf4nvf4")])
def test_tile_in_amaranth_simulation_gives_goldens_results(fmt, out_format, accumulators,
                                                           levels, accumulation, seed):
    """A 1 x 2 tile (fp4_e2m1, k = 2, or nvfp4, k = 16, with and without the tensor scales'
    epilogue, exact or in tcgen05.mxf4nvf4; 2 stages, 2 contexts; fp32 results, or an
    fp8_e4m3 block per row; accumulators in registers or in a memory per lane) in Amaranth's
    simulator, fed tb.gemm's interleaved runs under random valid/ready: every run's beat comes
    out once, in order of the runs' ends, bit for bit golden's (the Verilator bench:
    test_sim_gemm.py)."""
    import numpy as np
    from amaranth.sim import Simulator

    from tb.gemm import GemmBatch, GemmModel
    from tb.standard_tests import UnitConfig

    g = MXGemm(fmt, rows=1, cols=2, block_size=16 if fmt == "nvfp4" else 2, stages=2,
               contexts=2, accumulators=accumulators, out_format=out_format, levels=levels,
               accumulation=accumulation)
    model = GemmModel(UnitConfig(sidecar=sidecar(g, "gemm"), seed=seed, label="sim",
                                 blocks=40, full=False, sweeps=False))
    rng = np.random.default_rng(seed)
    runs = model.directed_runs(rng) + model.random_runs(rng, 6, 5)
    batch = GemmBatch(model, runs)
    stim = model.in_layout.to_ints(batch.stim)
    expected = model.out_layout.to_ints(batch.exp)
    got = []

    async def bench(ctx):
        sent = 0
        for _ in range(40 * len(stim)):
            valid = sent < len(stim) and rng.random() < 0.7
            ready = rng.random() < 0.5
            ctx.set(g.i.payload.as_value(), stim[min(sent, len(stim) - 1)])
            ctx.set(g.i.valid, valid)
            ctx.set(g.o.ready, ready)
            await ctx.delay(1e-8)
            if ctx.get(g.o.valid) and ready:
                got.append(ctx.get(g.o.payload.as_value()))
            if valid and ctx.get(g.i.ready):
                sent += 1
            await ctx.tick()
            if len(got) == len(expected):
                break

    sim = Simulator(g)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert len(expected) == len(runs) >= 12 and got == expected


@pytest.mark.parametrize("out_format", ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3",
                                        "fp4_e2m1", "int8"])
def test_quantizer_runs_hit_the_output_quantizers_rare_bins(out_format, seed):
    """tb.gemm's directed runs for an MX output reach the quantizer bins random runs rarely
    do (ties to even both ways, saturation, the scale's clamp at 0, -0 kept beside a finite
    value), by golden's own results; and their blocks are what the runs' ``c0`` set them to
    (zero products leave the start)."""
    import numpy as np

    from tb.gemm import GemmBatch, GemmModel
    from tb.standard_tests import UnitConfig

    g = MXGemm("fp8_e4m3", rows=2, cols=2, block_size=4, stages=3, contexts=4,
               out_format=out_format)
    model = GemmModel(UnitConfig(sidecar=sidecar(g, "gemm"), seed=seed, label="q",
                                 blocks=40, full=False, sweeps=False))
    runs = model.quantizer_runs(np.random.default_rng(seed))
    for run in runs[:-1]:
        assert (run.results == run.c0).all()
    hits = GemmBatch(model, runs).coverage_counts()
    element, scale = hits["mx.rne.floor.element"], hits["mx.rne.floor.scale"]
    wanted = ["tie_even_down", "tie_even_up", "saturated"]
    if not out_format.startswith("int"):
        wanted.append("neg_zero_kept")
    assert all(element.get(b, 0) > 0 for b in wanted), element
    assert scale.get("clamped_0", 0) > 0, scale
