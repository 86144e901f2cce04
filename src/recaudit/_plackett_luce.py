"""The primacy Plackett-Luce ranking model, shared by the top-N simulation
(:mod:`recaudit.positional._topn`) and the simulated backend
(:mod:`recaudit.llm.backends._simulated`).

It lives at the top level because both the statistics and the system under test draw
from it, and neither may import the other (tests/test_import_graph.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["draw_ranking"]


def draw_ranking(worth: npt.ArrayLike, order: Sequence[int], *, p_bias: float,
                 rng: np.random.Generator,
                 position_weights: Sequence[float] | None = None) -> tuple[int, ...]:
    r"""One ranking (prompt positions, best first) from the primacy Plackett-Luce model.

    Stage by stage, among the items not yet ranked: with probability ``p_bias`` the item
    at a prompt position drawn from ``position_weights`` restricted to the remaining
    positions (default: the earliest remaining one) is ranked next; otherwise an item
    is drawn with probability proportional to its ``worth`` (Plackett 1975; Luce 1959).
    ``p_bias = 0`` is the null (the ranking of items ignores the order).

    Parameters
    ----------
    worth : sequence of float
        Positive worth of each ORIGINAL item 1..k.
    order : sequence of int
        Original indices (1-based) at prompt positions 1..k.
    """
    k = len(order)
    w_item = np.asarray(worth, dtype=float)
    w_pos = (np.asarray(position_weights, dtype=float) if position_weights is not None
             else None)
    remaining = list(range(k))  # prompt positions (0-based)
    out = []
    for _ in range(k):
        if rng.random() < p_bias:
            if w_pos is None:
                pick = remaining[0]
            else:
                w = w_pos[remaining]
                pick = remaining[int(rng.choice(len(remaining), p=w / w.sum()))] \
                    if w.sum() > 0 else remaining[0]
        else:
            w = w_item[[order[p] - 1 for p in remaining]]
            pick = remaining[int(rng.choice(len(remaining), p=w / w.sum()))]
        remaining.remove(pick)
        out.append(pick + 1)
    return tuple(out)
