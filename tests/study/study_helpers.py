"""Helpers of the study tests (imported as ``study_helpers``; not a conftest)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
COLOURS = ("red", "blue", "black", "white", "green")
TYPES = ("jeans", "t-shirt", "sneakers", "kurta", "jacket", "dress")


def write_catalog(path: Path) -> None:
    """A 30-product catalog with id, title, description, brand, colour columns."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "title", "description", "brand", "colour"])
        i = 0
        for c in COLOURS:
            for t in TYPES:
                i += 1
                w.writerow([f"P{i:03d}", f"Brand{i % 4} {c.title()} {t.title()}",
                            f"A {c} {t} made of cotton, comfortable fit.", f"Brand{i % 4}", c])


def study_config(folder: Path, name: str, *, cache_dir: Path) -> Path:
    """Copy ``tests/study/<name>`` into ``folder`` beside a catalog; return its path."""
    write_catalog(folder / "catalog.csv")
    target = folder / name
    shutil.copy(HERE / name, target)
    text = target.read_text(encoding="utf-8").replace(
        "[retrieval]", f'[retrieval]\ncache_dir = "{cache_dir}"')
    target.write_text(text, encoding="utf-8")
    return target


def synthetic_table(
    *,
    models: dict[str, float],
    k: int = 5,
    n_queries: int = 30,
    n_evals: int = 10,
    temperatures: tuple[float, ...] = (0.0, 0.6),
    conditions: tuple[str, ...] = ("permutation", "decoding", "labels", "labels_permutation"),
    discard_rate: float = 0.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An evaluations table of the section-8 model in every cell, and its candidates.

    Each query has a relevance set R (size 1..3); an evaluation picks the item at prompt
    position 1 with probability ``p_bias`` (per model), else uniformly from R; at T = 0
    in identity-order cells it picks R's first item (deterministic decoding).
    """
    rng = np.random.default_rng(seed)
    rows = []
    rel = {q: rng.choice(k, size=rng.integers(1, 4), replace=False) for q in range(n_queries)}
    for model, p_bias in models.items():
        for t in temperatures:
            for cond in conditions:
                permuted = cond in ("permutation", "labels_permutation")
                for q in range(n_queries):
                    for _e in range(n_evals):
                        order = rng.permutation(k) if permuted else np.arange(k)
                        if not permuted and t == 0:
                            item = int(rel[q][0])
                        elif rng.random() < p_bias:
                            item = int(order[0])
                        else:
                            item = int(rng.choice(rel[q]))
                        pos = int(np.flatnonzero(order == item)[0]) + 1
                        rows.append({
                            "query_id": f"q{q}", "order": " ".join(str(i + 1) for i in order),
                            "selected_position": None if rng.random() < discard_rate else pos,
                            "model": model, "k": k, "temperature": t, "condition": cond,
                        })
    table = pd.DataFrame(rows)
    table["selected_position"] = table["selected_position"].astype("Int64")
    cands = pd.DataFrame([
        {"k": k, "query_id": f"q{q}", "original_index": i + 1, "score": s}
        for q in range(n_queries)
        for i, s in enumerate(np.sort(rng.uniform(0.2, 0.9, size=k))[::-1])
    ])
    return table, cands
