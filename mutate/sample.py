"""Stratified, seeded sampling of mutations: every file gets its share of the mutants that
change the Verilog.

A mutant's effect is known only after its Verilog was generated, so sampling is a
conversation: :meth:`StratifiedSampler.next` proposes the next mutation of the file with the
fewest mutants that changed the Verilog so far, :meth:`StratifiedSampler.record` says whether
it did.  A file whose last :data:`MAX_INEFFECTIVE_STREAK` mutants all left the Verilog alone
(a command-line or packaging module, say) is set aside while other files have mutants left:
each such mutant costs a generation of every default configuration and simulates nothing.
The proposals depend only on the mutations, the seed and the recorded outcomes.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from .operators import Mutation

__all__ = ["StratifiedSampler", "MAX_INEFFECTIVE_STREAK"]

#: Consecutive mutants of a file without a Verilog change after which the file is set aside.
MAX_INEFFECTIVE_STREAK = 3


class StratifiedSampler:
    """Proposes mutations file by file, evening out the effective ones per file.

    Parameters
    ----------
    by_file : mapping of str to sequence of Mutation
        Every candidate mutation, per file.
    seed : int
        Shuffles each file's mutations (``random.Random(seed)``, files in sorted order).
    """

    def __init__(self, by_file: Mapping[str, Sequence[Mutation]], seed: int):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        rng = random.Random(seed)
        self.queues: dict[str, list[Mutation]] = {}
        for path in sorted(by_file):
            order = list(by_file[path])
            rng.shuffle(order)
            if order:
                self.queues[path] = order
        self.effective = dict.fromkeys(self.queues, 0)
        self.drawn = dict.fromkeys(self.queues, 0)
        self.streak = dict.fromkeys(self.queues, 0)  # consecutive mutants without effect

    def next(self) -> Mutation | None:
        """The next mutation to try, or None when every file is exhausted."""
        open_files = [p for p in self.queues if self.drawn[p] < len(self.queues[p])]
        if not open_files:
            return None
        productive = [p for p in open_files if self.streak[p] < MAX_INEFFECTIVE_STREAK]
        open_files = productive or open_files
        path = min(open_files, key=lambda p: (self.effective[p], self.drawn[p]))
        mutation = self.queues[path][self.drawn[path]]
        self.drawn[path] += 1
        return mutation

    def record(self, mutation: Mutation, effective: bool) -> None:
        """Whether ``mutation`` changed the Verilog of some default configuration."""
        if effective:
            self.effective[mutation.path] += 1
            self.streak[mutation.path] = 0
        else:
            self.streak[mutation.path] += 1

    def take(self, n: int) -> list[Mutation]:
        """The first ``n`` proposals, assuming each one is effective (``--list``)."""
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"n must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        picked = []
        while len(picked) < n and (mutation := self.next()) is not None:
            self.record(mutation, True)
            picked.append(mutation)
        return picked
