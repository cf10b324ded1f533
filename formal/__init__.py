"""Formal proofs of the MX units' stream protocol and depth equivalence (SymbiYosys).

A development tool, not shipped with ``hw``.  ``python -m formal`` runs the proof matrix and
writes ``build/formal/report.md``; ``docs/verification.md`` ("Formal proofs") explains the
properties and the measured table.

* :mod:`formal.units` -- the units and configurations under proof; :mod:`formal.probes` -- where
  their pipeline control registers are (probes).
* :mod:`formal.harness`, :mod:`formal.chain_harness` -- the properties, as Amaranth harness
  modules; :mod:`formal.environment` -- their shared parts.
* :mod:`formal.sby` -- one SymbiYosys run and its verdict.
* :mod:`formal.matrix` -- the proof matrix (jobs) and the report table.
"""
