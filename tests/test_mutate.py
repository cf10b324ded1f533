"""The mutation-campaign tool (``mutate/``): operators, sampling and no-effect detection.
No simulation: the Verilog fingerprints of one small dequantizer configuration stand for the
regression."""

from __future__ import annotations

import ast
import functools
import os
import random
import shutil
import uuid
from pathlib import Path

import pytest

from mutate.operators import OPERATORS, find_mutations
from mutate.regression import SIM_TESTS, SimConfig, default_configs, unit_sources
from mutate.sample import MAX_INEFFECTIVE_STREAK, StratifiedSampler
from mutate.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''\
"""Docstring with 1 + 2 in it."""
__all__ = ["f"]


def f(m, a, b, sel):
    if a < 0:
        raise ValueError(f"a must be >= 0, got {a + 1}")
    x = wire(m, (a + b) & sel, name="lane3")
    with m.If(x == 7):
        m.d.comb += Mux(sel, a, ~b)
    return x >> 2
'''


def mutants(source=SOURCE):
    return {(mu.operator, mu.description, mu.apply(source).splitlines()[mu.line - 1].strip())
            for mu in find_mutations("x.py", source)}


def test_operators_produce_the_expected_changes():
    found = mutants()
    expected = {
        ("compare", "'<' -> '<='", "if a <= 0:"),
        ("constant", "0 -> 1", "if a < 1:"),
        ("arith", "'+' -> '-'", 'x = wire(m, (a - b) & sel, name="lane3")'),
        ("bitwise", "'&' -> '|'", 'x = wire(m, (a + b) | sel, name="lane3")'),
        ("compare", "'==' -> '!='", "with m.If(x != 7):"),
        ("constant", "7 -> 8", "with m.If(x == 8):"),
        ("constant", "7 -> 6", "with m.If(x == 6):"),
        ("if", "If condition negated", "with m.If((x == 7) == 0):"),
        ("mux", "Mux arms swapped", "m.d.comb += Mux(sel, ~b, a)"),
        ("invert", "'~' removed", "m.d.comb += Mux(sel, a, b)"),
        ("arith", "'>>' -> '<<'", "return x << 2"),
        ("constant", "2 -> 3", "return x >> 3"),
        ("constant", "2 -> 1", "return x >> 1"),
    }
    assert found == expected, (found - expected, expected - found)
    # nothing in the docstring, __all__, the raise statement or the name= keyword
    assert {op for op, _, _ in found} == set(OPERATORS)


def test_mutations_of_some_lines_are_those_of_the_whole_file_on_them():
    every = find_mutations("x.py", SOURCE)
    assert {mu.line for mu in every} >= {6, 8, 10}
    for lines in ([8], [6, 10], []):
        assert find_mutations("x.py", SOURCE, lines) == [mu for mu in every if mu.line in lines]


def test_every_mutant_parses_and_differs_only_at_its_span():
    source = (ROOT / "hw" / "rounding.py").read_text()
    found = find_mutations("hw/rounding.py", source)
    assert found
    for mu in found:
        text = mu.apply(source)
        ast.parse(text)
        assert text != source
        assert text[:mu.start] == source[:mu.start]
        body = mu.diff(source).splitlines()[2:]  # after the ---/+++ header
        removed = [ln for ln in body if ln.startswith("-")]
        added = [ln for ln in body if ln.startswith("+")]
        assert len(removed) == len(added) >= 1


def test_shift_and_comparison_tokens_are_not_confused():
    found = mutants("y = (a << 1) <= b\n")
    descriptions = {d for _, d, _ in found}
    assert "'<<' -> '>>'" in descriptions and "'<=' -> '<'" in descriptions
    assert all("'<' ->" not in d for d in descriptions)


@functools.cache
def mutations_of(path: str) -> tuple[str, tuple]:
    """The text of the project's file ``path`` and its mutations, made once per worker:
    find_mutations parses every mutant (hw/dot/fused_step.py: 667 mutants, 14 s), and the
    tests below read the same few files many times (no test writes them: the sandbox tests
    write a copy)."""
    source = (ROOT / path).read_text()
    return source, tuple(find_mutations(path, source))


def by_file():
    files = ["hw/arith.py", "hw/params.py", "hw/rounding.py"]
    return {f: list(mutations_of(f)[1]) for f in files}


def test_sampler_is_deterministic_for_a_seed_and_stratified(seed):
    print(f"sampler seed {seed}")
    mutations = by_file()
    first = [mu.key for mu in StratifiedSampler(mutations, seed).take(9)]
    again = [mu.key for mu in StratifiedSampler(mutations, seed).take(9)]
    assert first == again
    assert {key.split(":")[0] for key in first[:3]} == set(mutations)  # one per file first
    others = {tuple(mu.key for mu in StratifiedSampler(mutations, s).take(9))
              for s in random.Random(seed).sample(range(2**31), 5)}
    assert len(others | {tuple(first)}) > 1


def test_sampler_evens_out_effective_mutants_per_file(seed):
    print(f"sampler seed {seed}")
    sampler = StratifiedSampler(by_file(), seed)
    for _ in range(12):
        mu = sampler.next()
        sampler.record(mu, mu.path != "hw/arith.py")  # pretend arith mutants have no effect
    # arith.py is proposed first (fewest effective) until MAX_INEFFECTIVE_STREAK mutants in a
    # row left the Verilog alone, then set aside; the others stay within one of each other
    assert sampler.effective["hw/arith.py"] == 0
    assert sampler.drawn["hw/arith.py"] == MAX_INEFFECTIVE_STREAK
    assert abs(sampler.effective["hw/params.py"] - sampler.effective["hw/rounding.py"]) <= 1
    assert sampler.drawn["hw/params.py"] + sampler.drawn["hw/rounding.py"] == \
        12 - MAX_INEFFECTIVE_STREAK


def test_sampler_comes_back_to_a_set_aside_file_when_the_others_run_out(seed):
    mutations = by_file()
    sampler = StratifiedSampler({"hw/arith.py": mutations["hw/arith.py"][:5],
                                 "hw/params.py": mutations["hw/params.py"][:2]}, seed)
    seen = []
    while (mu := sampler.next()) is not None:
        seen.append(mu.path)
        sampler.record(mu, False)
    assert seen.count("hw/arith.py") == 5 and seen.count("hw/params.py") == 2


def test_sampler_validates_its_arguments():
    with pytest.raises(TypeError):
        StratifiedSampler(by_file(), "1")
    with pytest.raises(ValueError):
        StratifiedSampler(by_file(), 1).take(-1)


def test_the_regression_map_matches_the_simulation_tests():
    configs = default_configs(ROOT)
    assert {c.unit for c in configs} == {"quantizer", "dequantizer", "dot", "dot-general",
                                         "nvfp4-quantizer", "nvfp4-dequantizer", "gemm"}
    assert any("--accumulation" in c.argv for c in configs)  # the GPU modes
    assert len({c.nodeid for c in configs}) == len(configs)
    assert all(c.nodeid.split("[")[0].split("::")[0] in {s.path for s in SIM_TESTS}
               for c in configs)
    uses = unit_sources(ROOT)
    assert "hw/quantizer.py" in uses["quantizer"] and "hw/quantizer.py" not in uses["dot"]
    assert "hw/pipeline.py" in uses["dot-general"] and "hw/cli.py" in uses["dequantizer"]


@pytest.fixture(scope="module")
def sandbox():
    # One copy per run and xdist worker (two runs or workers rewriting the same copy race on
    # its files), removed afterwards.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    box = Sandbox(ROOT, f"test-mutate-{worker}-{uuid.uuid4().hex[:12]}", sim_seed=1)
    yield box
    shutil.rmtree(box.root, ignore_errors=True)


SMALL = SimConfig("dequantizer-int8", "dequantizer",
                  ("--format", "int8", "--output", "bf16", "--block-size", "2", "--stages", "1"))


def one(description, path, line_text):
    source, mutations = mutations_of(path)
    for mu in mutations:
        if mu.description == description and line_text in source.splitlines()[mu.line - 1]:
            return mu, source
    raise LookupError(f"no mutation {description} at {line_text!r} in {path}")


@pytest.mark.parametrize("path, line_text, description, changes", [
    # MAX_BLOCK only bounds the parameter check: the same Verilog ("no effect")
    ("hw/params.py", "MAX_BLOCK = 64", "64 -> 65", False),
    # the dequantizer's output mux: different Verilog
    ("hw/dequantizer.py", "Mux(", "Mux arms swapped", True),
])
def test_no_effect_detection(sandbox, path, line_text, description, changes):
    base = sandbox.fingerprints([SMALL], timeout=300)["fingerprints"][SMALL.nodeid]
    mu, source = one(description, path, line_text)
    sandbox.write(path, mu.apply(source))
    try:
        mutated = sandbox.fingerprints([SMALL], timeout=300)
    finally:
        sandbox.write(path, source)
    assert (mutated["fingerprints"][SMALL.nodeid] != base) is changes
    assert (ROOT / path).read_text() == source  # the real hw/ is never touched


def entry_lines(entry):
    """The text of a known equivalent's file and the numbers of the lines it can match."""
    source = (ROOT / entry.path).read_text()
    return source, [i for i, text in enumerate(source.splitlines(), start=1)
                    if text.strip() == entry.before]


def test_every_known_equivalent_is_a_mutant_of_todays_source():
    """Each entry matches exactly one mutant the operators make of the current file (an entry
    whose line changed would otherwise stop matching without anyone noticing)."""
    from mutate.equivalents import KNOWN_EQUIVALENTS, known_equivalent

    for entry in KNOWN_EQUIVALENTS:
        source, lines = entry_lines(entry)
        hits = [mu for mu in find_mutations(entry.path, source, lines)
                if known_equivalent(mu, source) == entry]
        assert len(hits) == 1, (
            f"known equivalent {entry.path}: {entry.before!r} -> {entry.after!r} matches "
            f"{len(hits)} mutants of today's source, not 1: the line changed or moved (a "
            "refactor?); check its reason again on the new code, then update or remove the "
            f"entry in mutate/equivalents.py (reason: {entry.reason})")


def test_known_equivalents_do_not_match_other_mutants_of_their_line():
    """An entry matches its one mutant, never another mutant of the same line (which may be
    an entry of its own: two mutants of one line can both be equivalent)."""
    from mutate.equivalents import KNOWN_EQUIVALENTS, known_equivalent

    others = 0
    for entry in KNOWN_EQUIVALENTS:
        source, lines = entry_lines(entry)
        for mu in find_mutations(entry.path, source, lines):
            after = mu.apply(source).splitlines()[mu.line - 1].strip()
            if after != entry.after:
                others += 1
                match = known_equivalent(mu, source)
                assert match is None or match.after == after, (entry.before, after)
    assert others > 0  # the lines have other mutants (e.g. the Mux line's arms swapped)


def test_a_sidecar_only_mutant_changes_the_sidecar_digest_alone(sandbox):
    """The fingerprint keeps the Verilog and the sidecar apart, so that the campaign judges a
    mutant that changes only sidecars with the sidecar test (no simulation can see it)."""
    config = SimConfig("quantizer-runtime", "quantizer",
                       ("--format", "fp4_e2m1", "--input", "bf16", "--block-size", "2",
                        "--stages", "1", "--rounding", "runtime"))
    base = sandbox.fingerprints([config], timeout=300)["fingerprints"][config.nodeid]
    mu, source = one("'==' -> '!='", "hw/sidecar.py", 'if rounding == "runtime":')
    sandbox.write("hw/sidecar.py", mu.apply(source))
    try:
        mutated = sandbox.fingerprints([config], timeout=300)["fingerprints"][config.nodeid]
    finally:
        sandbox.write("hw/sidecar.py", source)
    assert mutated[0] == base[0] and mutated[1] != base[1]


@pytest.mark.parametrize("verilog_changes", [False, True])
def test_campaign_judges_sidecar_only_mutants_with_the_sidecar_test(verilog_changes):
    """Same Verilog, other sidecar: the campaign runs the sidecar test instead of a
    simulation; a Verilog change still goes to the simulations."""
    from mutate.campaign import SIDECAR_TEST, Campaign
    from mutate.sandbox import SimOutcome

    campaign = Campaign(ROOT, ["hw/sidecar.py"], sample=1, seed=1, log=lambda *a: None)
    configs = campaign.configs_of["hw/sidecar.py"]
    campaign.baseline_prints = {c.nodeid: ["v", "s"] for c in configs}
    campaign.verilog_sizes = {c.nodeid: 1 for c in configs}
    campaign.baseline_seconds, campaign.generation_seconds = {}, 1.0
    campaign._baseline_time = lambda config: 1.0
    ran = []

    class FakeSandbox:
        def write(self, path, text):
            pass

        def fingerprints(self, configs, timeout):
            return {"fingerprints": {c.nodeid: ["v2" if verilog_changes else "v", "s2"]
                                     for c in configs}}

        def simulate(self, config, timeout):
            ran.append(config.nodeid)
            return SimOutcome("fail", 1.0, "mismatch")

    mu, _ = one("'==' -> '!='", "hw/sidecar.py", 'if rounding == "runtime":')
    result = campaign.evaluate(FakeSandbox(), mu)
    assert result.status == "killed" and result.sidecar_only is not verilog_changes
    assert (ran == [SIDECAR_TEST]) is not verilog_changes


@pytest.mark.parametrize("test", ["test_package_and_docs_schema_are_the_same_file",
                                  "test_example_sidecar_is_valid"])
def test_the_sidecar_judge_passes_in_a_sandbox(sandbox, test):
    """The sidecar test judges sidecar-only mutants in the sandbox, so the files it reads must
    be there: campaign 8 stopped at its first sidecar-only mutant because the sandbox held no
    docs/ (the unmutated baseline failed)."""
    from mutate.campaign import SIDECAR_TEST

    outcome = sandbox.simulate(SimConfig(f"{SIDECAR_TEST}::{test}", "sidecar", ()), 120)
    assert outcome.status == "pass", outcome.message
