"""Helpers shared by the test folders (imported as ``helpers``; not a conftest).

``tests/`` is on ``sys.path`` through the root ``conftest.py``, so every folder imports
this module by name. It holds what several folders build: the small product catalogs,
the simulated-audit config the runner/CLI/Ray/sequential/exact/mitigation tests run,
and the synthetic evaluations table of the study and CLI tests. Folder-specific
helpers stay in their folder (``runner_helpers``: fake tasks and a loopback server;
``study_helpers``: the study configs; ``mitigation_helpers``: the mitigation config).
"""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd

CATALOG_HEADER = ("id", "title", "description", "brand", "colour")
COLOURS = ("red", "blue", "black", "white", "green")
TYPES = ("jeans", "t-shirt", "sneakers", "kurta", "jacket", "dress")


def write_products(path: Path, rows: Iterable[tuple[str, str, str, str, str]]) -> None:
    """Write a catalog CSV with the columns of :data:`CATALOG_HEADER`."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(CATALOG_HEADER)
        w.writerows(rows)


def write_catalog(path: Path) -> None:
    """A 30-product catalog (5 colours x 6 types; brand = product number mod 4)."""
    rows = []
    for i, (c, t) in enumerate(((c, t) for c in COLOURS for t in TYPES), start=1):
        rows.append((f"P{i:03d}", f"Brand{i % 4} {c.title()} {t.title()}",
                     f"A {c} {t} made of cotton, comfortable fit.", f"Brand{i % 4}", c))
    write_products(path, rows)


AUDIT_CONFIG = """\
seed = {seed}
concurrency = {concurrency}
temperatures = [0.0]
conditions = {conditions}

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
{prompt}
[design]
kind = "sampled"
n_perms = {n_perms}

{models}
{extra}"""

SIM_MODEL = """\
[[models]]
name = "sim"
backend = "simulated"
p_bias = 0.4
discard_rate = 0.05
delay_s = {delay_s}
"""

#: One OpenAI-compatible model at ``{url}`` (``.format(url=...)``), one retry.
OPENAI_MODEL = """\
[[models]]
name = "remote"
backend = "openai"
base_url = "{url}"
model = "tiny"
max_retries = 1
"""
CHOICE_PROBABILITIES = "\n[prompt]\nchoice_probabilities = true\n"


def write_config(folder: Path, *, cache_dir: Path, n_queries: int = 8, n_perms: int = 5,
                 delay_s: float = 0.0, concurrency: int = 4,
                 conditions: str = '["permutation"]', models: str | None = None,
                 seed: int = 7, k: int = 4, choice_probabilities: bool = False,
                 extra: str = "", name: str = "audit.toml",
                 catalog: Callable[[Path], None] = write_catalog) -> Path:
    """Write ``catalog.csv`` and a simulated-audit config into ``folder``; return its path.

    The default is one simulated model (``SIM_MODEL``: p_bias 0.4, 5 % discards) on the
    30-product catalog at k = 4. ``models`` replaces the ``[[models]]`` block,
    ``choice_probabilities`` adds ``[prompt] choice_probabilities = true``, ``extra`` is
    appended (e.g. a ``[mitigation]`` table) and ``catalog`` writes the catalog file.
    """
    catalog(folder / "catalog.csv")
    text = AUDIT_CONFIG.format(
        seed=seed, concurrency=concurrency, conditions=conditions, n_queries=n_queries, k=k,
        cache_dir=cache_dir, n_perms=n_perms,
        prompt=CHOICE_PROBABILITIES if choice_probabilities else "",
        models=models or SIM_MODEL.format(delay_s=delay_s), extra=extra)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def prepared_run(config: Path, out_dir: Path, retriever: object) -> Path:
    """Run the audit of ``config`` in process, then empty its journal; return ``out_dir``.

    The folder holds what ``positional run`` writes before any evaluation (queries,
    candidate sets, journal meta), so a CLI ``--resume`` on it re-runs every evaluation
    without loading the embedder.
    """
    from recaudit.audit._config import load_audit_config
    from recaudit.audit._run import run_audit

    run_audit(load_audit_config(config), out_dir=out_dir, retriever=retriever)
    with closing(sqlite3.connect(out_dir / "journal.sqlite")) as conn, conn:
        conn.execute("DELETE FROM evaluations")
    return out_dir


def damage_journal(run_dir: Path, *, lose: int, fail: int) -> None:
    """Delete ``lose`` random evaluations from ``run_dir``'s journal and mark ``fail`` of
    the rest failed, as if the process had died mid-run."""
    with closing(sqlite3.connect(run_dir / "journal.sqlite")) as conn, conn:
        conn.execute("DELETE FROM evaluations WHERE rowid IN "
                     "(SELECT rowid FROM evaluations ORDER BY random() LIMIT ?)", (lose,))
        conn.execute("UPDATE evaluations SET status = 'failed', selected_position = NULL "
                     "WHERE rowid IN (SELECT rowid FROM evaluations LIMIT ?)", (fail,))


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


def fairness_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Top-10 lists, 1-5 test items per user and a binary gender (60 users, seeded):
    ``(recs, test, users)`` for the fairness commands' hostile-input tests."""
    rng = np.random.default_rng(3)
    users = pd.DataFrame({"user_id": [f"u{i}" for i in range(60)],
                          "gender": ["F" if i % 3 == 0 else "M" for i in range(60)]})
    recs = pd.DataFrame([(u, int(it), r + 1) for u in users.user_id
                         for r, it in enumerate(rng.choice(40, 10, replace=False))],
                        columns=["user_id", "item_id", "rank"])
    test = pd.DataFrame([(u, int(it)) for u in users.user_id
                         for it in rng.choice(40, int(rng.integers(1, 6)), replace=False)],
                        columns=["user_id", "item_id"])
    return recs, test, users


def product_sets(catalog: object, words: Iterable[str], *, k: int,
                 description_chars: int) -> list[tuple[str, tuple[object, ...]]]:
    """``(query, candidates)`` per word: the first ``k`` catalog products whose title ends
    with it, in catalog order, descriptions clipped (the local backends' real prompts)."""
    from recaudit.llm import Candidate

    items = catalog.items  # type: ignore[attr-defined]
    out: list[tuple[str, tuple[object, ...]]] = []
    for word in words:
        rows = items[items["title"].str.endswith(word)].head(k)
        out.append((f"I want {word.lower()} for everyday use.", tuple(
            Candidate(i, r.item_id, r.title, r.description[:description_chars], 0.0)
            for i, r in enumerate(rows.itertuples(), start=1))))
    return out
