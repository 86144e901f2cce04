"""Data helpers of the fairness-metrics tests: synthetic tables and ML-100K.

A plain module (not a conftest) so that it cannot clash with other test folders' fixtures;
test modules import the fixtures from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest


def synthetic(
    n_users: int = 120, n_items: int = 60, length: int = 15, seed: int = 0, gap: float = 0.0
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Random top-``length`` lists, 1-8 test items per user, a binary ``gender``.

    With ``gap > 0`` the test items of male users are drawn from the head of their
    lists more often, so the metrics favour the unprotected group.
    """
    rng = np.random.default_rng(seed)
    users = pd.DataFrame(
        {
            "user_id": [f"u{i}" for i in range(n_users)],
            "gender": np.where(np.arange(n_users) % 3 == 0, "F", "M"),
            "age": np.where(np.arange(n_users) % 2 == 0, "young", "old"),
        }
    )
    recs, test = [], []
    for u, g in zip(users.user_id, users.gender, strict=True):
        items = rng.choice(n_items, size=length, replace=False)
        recs.append(
            pd.DataFrame({"user_id": u, "item_id": items, "rank": np.arange(1, length + 1)})
        )
        k = int(rng.integers(1, 9))
        pool = items[:5] if (g == "M" and rng.random() < gap) else np.arange(n_items)
        test.append(
            pd.DataFrame(
                {"user_id": u, "item_id": rng.choice(pool, size=min(k, pool.size), replace=False)}
            )
        )
    return pd.concat(recs, ignore_index=True), pd.concat(test, ignore_index=True), users


@pytest.fixture
def tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return synthetic()


def _read_atomic(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, sep="\t", dtype=str)
    df.columns = [c.split(":")[0] for c in df.columns]
    return df


@pytest.fixture(scope="session")
def ml100k(ml100k_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(interactions, users) of ML-100K (``ml100k_path`` skips when the shared copy is
    absent)."""
    return (_read_atomic(ml100k_path / "ml-100k.inter"),
            _read_atomic(ml100k_path / "ml-100k.user"))


def popularity_baseline(
    inter: pd.DataFrame, *, length: int = 15, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """80/20 random per-user split and the top-``length`` most popular unseen items.

    Returns ``(train, test, recs)``.
    """
    shuffled = inter[["user_id", "item_id"]].sample(frac=1.0, random_state=seed)
    pos = shuffled.groupby("user_id").cumcount()
    size = shuffled.groupby("user_id")["item_id"].transform("size")
    is_train = pos < np.ceil(0.8 * size)
    train, test = shuffled[is_train], shuffled[~is_train]
    ranked = train["item_id"].value_counts().index.to_numpy()[: length + 800]
    seen = set(zip(train.user_id, train.item_id, strict=True))
    rows = []
    for u in train["user_id"].unique():
        picks = [i for i in ranked if (u, i) not in seen][:length]
        rows.append(
            pd.DataFrame({"user_id": u, "item_id": picks, "rank": np.arange(1, length + 1)})
        )
    return train, test, pd.concat(rows, ignore_index=True)
