"""Mutation operators: every single-point change of one Python source file, found with ``ast``.

A :class:`Mutation` is one edit of the source text (a span replaced by new text), so the
mutant differs from the original only where it was changed and its diff stays one or two
lines.  The operators (:data:`OPERATORS`):

* ``arith``     ``+`` <-> ``-``, ``<<`` <-> ``>>`` (also in augmented assignments, but not
  in Amaranth's ``m.d.<domain> += ...``);
* ``bitwise``   ``&`` <-> ``|``, ``^`` -> ``|``;
* ``compare``   ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``;
* ``constant``  an integer literal ``n`` -> ``n + 1`` and ``n - 1`` (never below 0);
* ``mux``       ``Mux(sel, a, b)`` -> ``Mux(sel, b, a)``;
* ``if``        ``m.If(c)`` / ``m.Elif(c)`` -> ``m.If((c) == 0)`` (the negated condition,
  for a multi-bit ``c`` too);
* ``invert``    ``~x`` -> ``x``.

Code that cannot reach the hardware is left alone: docstrings and other strings, ``raise``
and ``assert`` statements (parameter checks), ``__all__`` and keyword arguments named
``name`` (signal names only).
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

__all__ = ["Mutation", "OPERATORS", "find_mutations"]

#: Operator families, in the order :func:`find_mutations` reports them per node.
OPERATORS = ("arith", "bitwise", "compare", "constant", "mux", "if", "invert")

_BINOP_SWAPS = {
    ast.Add: ("arith", "+", "-"), ast.Sub: ("arith", "-", "+"),
    ast.LShift: ("arith", "<<", ">>"), ast.RShift: ("arith", ">>", "<<"),
    ast.BitAnd: ("bitwise", "&", "|"), ast.BitOr: ("bitwise", "|", "&"),
    ast.BitXor: ("bitwise", "^", "|"),
}
_COMPARE_SWAPS = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="),
}


@dataclass(frozen=True)
class Mutation:
    """One single-point change of a source file.

    Attributes
    ----------
    path : str
        The file, relative to the repository root (e.g. ``"hw/arith.py"``).
    operator : str
        Its family, one of :data:`OPERATORS`.
    line : int
        1-based line of the change.
    start, end : int
        Character offsets of the replaced span in the original text.
    replacement : str
        The text that replaces ``original[start:end]``.
    description : str
        What changed, e.g. ``"'+' -> '-'"``.
    """

    path: str
    operator: str
    line: int
    start: int
    end: int
    replacement: str
    description: str

    @property
    def key(self) -> str:
        """A stable identifier: file, line, offset and change."""
        return f"{self.path}:{self.line}:{self.start}:{self.operator}:{self.description}"

    def apply(self, source: str) -> str:
        """The mutated source text."""
        return source[:self.start] + self.replacement + source[self.end:]

    def diff(self, source: str) -> str:
        """Unified diff of the mutant against ``source``."""
        return "".join(difflib.unified_diff(
            source.splitlines(keepends=True), self.apply(source).splitlines(keepends=True),
            f"a/{self.path}", f"b/{self.path}", n=1))


class _Finder(ast.NodeVisitor):
    """Collects the mutations of one module, skipping code that cannot reach hardware."""

    def __init__(self, path: str, source: str):
        self.path = path
        self.source = source
        lines = source.splitlines(keepends=True)
        self.line_starts = [0]
        for text in lines:
            self.line_starts.append(self.line_starts[-1] + len(text))
        self.found: list[Mutation] = []

    # -- positions ---------------------------------------------------------------------------
    def offset(self, line: int, col: int) -> int:
        """Character offset of (1-based line, UTF-8 byte column)."""
        start = self.line_starts[line - 1]
        text = self.source[start:self.line_starts[line]]
        return start + len(text.encode()[:col].decode())

    def span(self, node) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))

    def add(self, operator, node, start, end, replacement, description):
        self.found.append(Mutation(self.path, operator, node.lineno, start, end, replacement,
                                   description))

    def swap_token(self, operator, node, gap_from, gap_to, old, new):
        """Replace the operator token ``old`` found between offsets ``gap_from``/``gap_to``
        (the text between two operands: whitespace, parentheses, the token)."""
        gap = self.source[gap_from:gap_to]
        i = gap.find(old)
        if i < 0:
            return
        # ``<`` inside ``<<`` or ``<=``: the token must be exactly ``old``
        rest = gap[i + len(old):i + len(old) + 1]
        if rest in ("<", ">", "="):
            return
        self.add(operator, node, gap_from + i, gap_from + i + len(old), new,
                 f"'{old}' -> '{new}'")

    # -- skipped subtrees --------------------------------------------------------------------
    def visit_Raise(self, node):
        pass

    def visit_Assert(self, node):
        pass

    def visit_JoinedStr(self, node):
        pass

    def visit_Assign(self, node):
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return
        self.generic_visit(node)

    def visit_keyword(self, node):
        if node.arg != "name":
            self.generic_visit(node)

    # -- mutation sites ----------------------------------------------------------------------
    def visit_BinOp(self, node):
        swap = _BINOP_SWAPS.get(type(node.op))
        if swap:
            _, left_end = self.span(node.left)
            right_start, _ = self.span(node.right)
            self.swap_token(swap[0], node, left_end, right_start, swap[1], swap[2])
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        swap = _BINOP_SWAPS.get(type(node.op))
        target = node.target
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute)
                and target.value.attr == "d"):
            swap = None  # ``m.d.comb += ...`` is Amaranth's assignment, not an addition
        if swap:
            _, target_end = self.span(node.target)
            value_start, _ = self.span(node.value)
            self.swap_token(swap[0], node, target_end, value_start, swap[1] + "=",
                            swap[2] + "=")
        self.generic_visit(node)

    def visit_Compare(self, node):
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            swap = _COMPARE_SWAPS.get(type(op))
            if swap:
                _, left_end = self.span(left)
                right_start, _ = self.span(right)
                self.swap_token("compare", node, left_end, right_start, *swap)
            left = right
        self.generic_visit(node)

    def visit_Constant(self, node):
        if type(node.value) is int:  # not bool
            start, end = self.span(node)
            for new in (node.value + 1, node.value - 1):
                if new >= 0:
                    self.add("constant", node, start, end, str(new),
                             f"{node.value} -> {new}")

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Invert):
            start, end = self.span(node)
            operand_start, operand_end = self.span(node.operand)
            self.add("invert", node, start, end, self.source[operand_start:operand_end],
                     "'~' removed")
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)
        if name == "Mux" and len(node.args) == 3 and not node.keywords:
            _, a, b = node.args
            a_start, a_end = self.span(a)
            b_start, b_end = self.span(b)
            text_a, text_b = self.source[a_start:a_end], self.source[b_start:b_end]
            self.add("mux", node, a_start, b_end,
                     text_b + self.source[a_end:b_start] + text_a, "Mux arms swapped")
        elif name in ("If", "Elif") and isinstance(func, ast.Attribute) and len(node.args) == 1:
            start, end = self.span(node.args[0])
            self.add("if", node, start, end, f"({self.source[start:end]}) == 0",
                     f"{name} condition negated")
        self.generic_visit(node)

    def visit_Expr(self, node):
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.generic_visit(node)  # a docstring or a bare string: nothing to mutate


def find_mutations(path: str, source: str, lines=None) -> list[Mutation]:
    """Every mutation of ``source`` (the text of ``path``), in source order; with ``lines``
    (line numbers, from 1), only those on these lines.

    Each one is checked to parse; a change that would not be valid Python is dropped.  The
    check parses the whole mutated file (14 s for the 667 mutants of hw/dot/fused_step.py),
    so ``lines`` is the cheap way to the mutants of a few lines.
    """
    finder = _Finder(path, source)
    finder.visit(ast.parse(source, filename=path))
    if lines is None:
        found = finder.found
    else:
        lines = set(lines)
        found = [mu for mu in finder.found if mu.line in lines]
    valid = []
    for mutation in sorted(found, key=lambda mu: (mu.start, mu.operator, mu.description)):
        try:
            ast.parse(mutation.apply(source))
        except SyntaxError:
            continue
        valid.append(mutation)
    return valid
