"""One BLAS thread for the calling thread, around a run of many small BLAS calls.

:func:`golden.matmul` makes one BLAS call per K block and row tile (rank-``k`` updates).  A
multi-threaded OpenBLAS wakes and joins its worker threads at every call; on a machine whose
cores are busy each join waits for a time slice (a 1024^3 fp8_e4m3 product runs about ten
times slower with two BLAS threads than with one on a shared two-core machine at load 6).
golden's kernels run on one thread, and so does BLAS inside :func:`one_blas_thread`.

It uses OpenBLAS's ``openblas_set_num_threads_local`` (OpenBLAS >= 0.3.27, the library numpy's
wheels bundle): the setting is local to the calling thread and restored on exit, so other
threads' BLAS calls are not affected.  With any other BLAS it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from pathlib import Path

import numpy as np

__all__ = ["one_blas_thread", "set_local_blas_threads"]


@functools.cache
def _set_local_threads():
    """OpenBLAS's ``openblas_set_num_threads_local`` of the library numpy loaded, or None."""
    root = Path(np.__file__).resolve().parent
    for lib in sorted([*root.parent.glob("numpy.libs/*openblas*"),
                       *root.glob(".dylibs/*openblas*")]):
        try:
            fn = ctypes.CDLL(str(lib)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
        return fn
    return None


def set_local_blas_threads(n: int) -> int | None:
    """Set the calling thread's BLAS thread count; returns the previous count, or None (and
    changes nothing) when numpy's BLAS is not an OpenBLAS with per-thread settings."""
    fn = _set_local_threads()
    return None if fn is None else int(fn(int(n)))


@contextlib.contextmanager
def one_blas_thread():
    """Within the block, the calling thread's BLAS calls run on one thread (OpenBLAS only)."""
    previous = set_local_blas_threads(1)
    try:
        yield
    finally:
        if previous is not None:
            set_local_blas_threads(previous)
