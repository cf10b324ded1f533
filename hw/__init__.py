"""hw: synthesizable Amaranth (0.5) implementations of the MX units.

Each unit is bit-exact to :mod:`golden`; ``python -m hw`` writes their Verilog.
"""
