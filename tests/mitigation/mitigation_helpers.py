"""Helpers of the mitigation tests (imported as ``mitigation_helpers``)."""

from __future__ import annotations

import csv

COLOURS = ("red", "blue", "green", "black", "white", "pink", "grey", "yellow", "navy",
           "brown")
TYPES = ("jeans", "t-shirt", "sneakers", "kurta", "jacket", "dress")


def write_catalog(path) -> None:
    """A 240-product catalog (10 colours x 6 types x 4 brands)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "title", "description", "brand", "colour"])
        i = 0
        for b in range(4):
            for c in COLOURS:
                for t in TYPES:
                    i += 1
                    w.writerow([f"P{i:03d}", f"Brand{b} {c.title()} {t.title()}",
                                f"A {c} {t} by Brand{b}, cotton.", f"Brand{b}", c])


CONFIG = """\
seed = 11
concurrency = 16
temperatures = [0.0]
conditions = ["permutation"]

[catalog]
path = "catalog.csv"
[catalog.columns]
id = "id"
title = "title"
description = "description"
brand = "brand"
colour = "colour"

[queries]
n = {n_queries}

[retrieval]
k = [{k}]
cache_dir = "{cache_dir}"

[prompt]
choice_probabilities = true

[design]
kind = "sampled"
n_perms = {n_perms}

[[models]]
name = "sim"
backend = "simulated"
p_bias = {p_bias}
max_relevant = 2

{mitigation}
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
    write_catalog(folder / "catalog.csv")
    text = CONFIG.format(n_queries=n_queries, n_perms=n_perms, k=k, p_bias=p_bias,
                         cache_dir=cache_dir,
                         mitigation=MITIGATION.format(m=m) if mitigation is None
                         else mitigation)
    path = folder / "mitigate.toml"
    path.write_text(text, encoding="utf-8")
    return path
