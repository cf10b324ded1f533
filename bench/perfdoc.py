"""docs/performance.md is assembled from sections that different commands regenerate.

``make bench`` rewrites the header and its measurement sections, ``make synth`` the synthesis
section and the depth sweep's (that one only when it runs the sweeps); each keeps the others.
A section lives between ``<!-- begin NAME -->`` and ``<!-- end NAME -->`` markers.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
ORDER = ("header", "golden", "seeds", "sim", "synth", "sweep")


def _sections(text: str) -> dict[str, str]:
    found = {}
    for m in re.finditer(r"<!-- begin (\w+) -->\n(.*?)<!-- end \1 -->\n", text, re.S):
        found[m[1]] = m[2]
    return found


def update(**new: str) -> Path:
    """Replace the named sections (markdown text) and write the document back."""
    old = _sections(DOC.read_text()) if DOC.exists() else {}
    old.update({k: v if v.endswith("\n") else v + "\n" for k, v in new.items()})
    names = [n for n in ORDER if n in old] + [n for n in old if n not in ORDER]
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text("\n".join(f"<!-- begin {n} -->\n{old[n]}<!-- end {n} -->\n" for n in names))
    return DOC
