"""Arrays from other frameworks in, and back out: torch tensors, JAX arrays, DLPack producers.

numpy is the only array library golden needs.  torch and JAX are recognised by the module their
array type comes from and are never imported here unless the caller's array (or ``like=``)
already is one, so neither becomes a dependency:

* a torch tensor is detached, moved to the CPU and viewed as numpy without a copy; bfloat16
  (which numpy cannot hold) goes through a bit view (``int16``) to ml_dtypes' ``bfloat16``;
* a JAX array converts with ``np.asarray`` (JAX's bfloat16 *is* ml_dtypes' type);
* any other object with ``__dlpack__`` goes through ``np.from_dlpack``; anything else through
  ``np.asarray``.

``like`` names the type results come back in: ``"numpy"``, ``"torch"``, ``"jax"``, or an array
whose kind (and, for torch, device) the result follows.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

__all__ = ["array_kind", "to_numpy", "from_numpy", "KINDS"]

#: The result kinds ``like=`` accepts by name.
KINDS = ("numpy", "torch", "jax")


def array_kind(x) -> str:
    """``"torch"``, ``"jax"`` or ``"numpy"`` (anything else) for an array, by its type's module."""
    root = type(x).__module__.split(".")[0]
    if root == "torch" and hasattr(x, "detach"):
        return "torch"
    if root in ("jax", "jaxlib"):
        return "jax"
    return "numpy"


def to_numpy(x) -> np.ndarray:
    """A numpy view (or copy, where the data live elsewhere) of ``x``, dtype kept.

    torch bfloat16 becomes ml_dtypes ``bfloat16`` bit for bit.
    """
    if isinstance(x, np.ndarray):
        return x
    kind = array_kind(x)
    if kind == "torch":
        torch = sys.modules["torch"]
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == torch.bfloat16:
            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.resolve_conj().resolve_neg().numpy()
    if kind == "jax" or not hasattr(x, "__dlpack__"):
        return np.asarray(x)
    try:
        return np.from_dlpack(x)
    except (TypeError, ValueError, RuntimeError, BufferError):
        return np.asarray(x)


def _resolve_like(like) -> tuple[str, object]:
    if like is None:
        return "numpy", None
    if isinstance(like, str):
        if like not in KINDS:
            raise ValueError(f"like must be one of {', '.join(KINDS)} or an array, got {like!r}")
        return like, None
    return array_kind(like), like


def from_numpy(a: np.ndarray, like=None):
    """``a`` as the kind of array ``like`` names (see module doc); numpy for ``None``.

    A torch result shares memory with ``a`` where it can and lands on ``like``'s device when
    ``like`` is a tensor; bfloat16 becomes ``torch.bfloat16`` bit for bit.
    """
    kind, example = _resolve_like(like)
    a = np.asarray(a)
    if kind == "numpy":
        return a
    if kind == "torch":
        import torch

        a = np.ascontiguousarray(a)
        if a.dtype == ml_dtypes.bfloat16:
            t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        else:
            t = torch.from_numpy(a)
        if example is not None and example.device.type != "cpu":
            t = t.to(example.device)
        return t
    import jax.numpy as jnp

    return jnp.asarray(a)
