"""Where numba keeps the golden kernels' compiled code: a per-user cache, not the package.

numba's ``cache=True`` writes next to the source file by default, that is into the installed
package (often read-only, or shared by several users).  golden's kernel modules decorate
with :func:`njit`, which points numba at a per-user cache directory first (numba's
configuration, not the environment), unless ``NUMBA_CACHE_DIR`` is already set:

* ``$XDG_CACHE_HOME/ocp-mx-hdl/numba`` (default ``~/.cache/ocp-mx-hdl/numba``) on Linux and
  macOS, ``%LOCALAPPDATA%\\ocp-mx-hdl\\numba`` on Windows.

The first call of each kernel in a new cache compiles it (tens of seconds for the first
``golden.quantize``; see README); later processes load the compiled code in about a second.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["numba_cache_dir", "configure_numba_cache", "njit"]


def numba_cache_dir() -> Path:
    """The per-user directory golden's numba cache goes to when ``NUMBA_CACHE_DIR`` is unset."""
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"])
    else:
        base = Path.home() / ".cache"
    return base / "ocp-mx-hdl" / "numba"


def configure_numba_cache() -> str:
    """Point numba's cache at :func:`numba_cache_dir` unless the user set ``NUMBA_CACHE_DIR``;
    returns the directory in force.

    numba's own configuration (``numba.config.CACHE_DIR``) is set, not the environment:
    ``os.environ`` stays as the caller left it, and numba keeps a value set this way until a
    ``NUMBA_*`` variable changes.  The kernels, compiled after this call, cache there.
    """
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if not chosen:
        from numba.core import config

        chosen = str(numba_cache_dir())
        config.CACHE_DIR = chosen
    return chosen


def njit(*args, **kwargs):
    """``numba.njit`` with the per-user cache in force (:func:`configure_numba_cache`).

    golden's kernel modules decorate with it, so numba is configured, and imported, when the
    first of them loads: importing :mod:`golden` alone loads no numba (``python -m hw``
    generates Verilog without it)."""
    configure_numba_cache()
    from numba import njit as numba_njit

    return numba_njit(*args, **kwargs)
