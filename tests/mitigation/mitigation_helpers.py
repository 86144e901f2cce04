"""Helpers of the mitigation tests (imported as ``mitigation_helpers``)."""

from __future__ import annotations

from pathlib import Path

from helpers import write_config as write_audit_config
from helpers import write_products

COLOURS = ("red", "blue", "green", "black", "white", "pink", "grey", "yellow", "navy",
           "brown")
TYPES = ("jeans", "t-shirt", "sneakers", "kurta", "jacket", "dress")


def write_catalog(path: Path) -> None:
    """A 240-product catalog (4 brands x 10 colours x 6 types)."""
    combos = ((b, c, t) for b in range(4) for c in COLOURS for t in TYPES)
    write_products(path, [(f"P{i:03d}", f"Brand{b} {c.title()} {t.title()}",
                           f"A {c} {t} by Brand{b}, cotton.", f"Brand{b}", c)
                          for i, (b, c, t) in enumerate(combos, start=1)])


MODEL = """\
[[models]]
name = "sim"
backend = "simulated"
p_bias = {p_bias}
max_relevant = 2
"""

MITIGATION = """\
[mitigation]
methods = ["ensemble", "calibration", "canonical"]
n_boot = 200
[mitigation.ensemble]
m = {m}
[mitigation.calibration]
queries = 10
orders = 5
"""


def write_config(folder, *, cache_dir, n_queries=30, n_perms=10, k=5, p_bias=0.4, m=3,
                 mitigation=None):
    """Write catalog.csv and mitigate.toml into ``folder``; return the config path."""
    return write_audit_config(
        folder, cache_dir=cache_dir, seed=11, concurrency=16, n_queries=n_queries,
        n_perms=n_perms, k=k, choice_probabilities=True, models=MODEL.format(p_bias=p_bias),
        extra=MITIGATION.format(m=m) if mitigation is None else mitigation,
        name="mitigate.toml", catalog=write_catalog)
