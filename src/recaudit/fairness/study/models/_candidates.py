"""Sampled ranking with RecBole models: score each user's candidates only.

:func:`recommend_candidates` ranks the candidates of
:func:`~recaudit.fairness.sample_candidates` with a model trained by
:func:`~._recbole.train_model`, or with one read back from its kept checkpoint by
:func:`load_model` (how a finished study model is scored under a protocol added
later, without retraining).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ....exceptions import InputError
from ... import ITEM_ID, USER_ID
from . import _recbole
from ._recbole import TrainedModel
from ._recbole_compat import import_recbole, load_checkpoint, recbole_session

__all__ = ["LoadedModel", "load_model", "recommend_candidates"]


@dataclass(frozen=True)
class LoadedModel:
    """A RecBole model read back from its checkpoint by :func:`load_model`.

    Attributes
    ----------
    name : str
        Study name (``"MF"``, ...): the ``model`` column of its lists.
    model, dataset : object
        The RecBole model (its checkpoint's weights) and the dataset it was built on.
    """

    name: str
    model: Any = field(repr=False)
    dataset: Any = field(repr=False)


def load_model(
    checkpoint: Path, *, name: str, workdir: Path, num_threads: int = 1
) -> LoadedModel:
    """Read a RecBole checkpoint back, as ``recbole.quick_start.load_data_and_model``.

    The checkpoint's own config rebuilds the dataset from its benchmark files (the
    split written by :func:`~._recbole.write_atomic_split`, so the vocabularies are those of
    training) and the model; its weights are then loaded. Runs inside
    :func:`~._recbole_compat.recbole_session` (torch's ``weights_only`` handled by
    :func:`~._recbole_compat.load_checkpoint`); ``quick_start`` itself is not imported
    because it imports Ray.

    Parameters
    ----------
    checkpoint : pathlib.Path
        A checkpoint written by RecBole's trainer (``done.json["checkpoint"]``).
    name : str
        Study name of the model.
    workdir : pathlib.Path
        Folder for RecBole's log while loading.
    num_threads : int, default 1
        torch threads.

    Returns
    -------
    LoadedModel

    Raises
    ------
    InputError
        When the checkpoint file does not exist.
    """
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():
        raise InputError(f"checkpoint of {name} not found: {checkpoint}; train the model again")
    import_recbole()
    from recbole.data import create_dataset, data_preparation
    from recbole.utils import get_model, init_seed

    with recbole_session(Path(workdir), num_threads=num_threads):
        state = load_checkpoint(checkpoint.resolve())
        config = state["config"]
        init_seed(config["seed"], config["reproducibility"])
        dataset = create_dataset(config)
        train_data, _, _ = data_preparation(config, dataset)
        init_seed(config["seed"], config["reproducibility"])
        model = get_model(config["model"])(config, train_data._dataset).to("cpu")
        model.load_state_dict(state["state_dict"])
        model.load_other_parameter(state.get("other_parameter"))
    return LoadedModel(name=name, model=model, dataset=dataset)


def recommend_candidates(
    trained: TrainedModel | LoadedModel,
    candidates: pd.DataFrame,
    *,
    n: int = 20,
    batch_size: int = 256,
) -> pd.DataFrame:
    """Top-``n`` lists ranked within each user's candidates (sampled ranking).

    Each user's candidates (:func:`~recaudit.fairness.sample_candidates`) are scored
    -- ``full_sort_predict`` of the user's batch then the candidates' columns, or
    ``predict`` on the candidate pairs for models without it (NeuMF, NNCF) -- and
    the ``n`` best kept; a user with fewer candidates gets all of them.

    Parameters
    ----------
    trained : TrainedModel or LoadedModel
        From :func:`~._recbole.train_model` or :func:`load_model`.
    candidates : pandas.DataFrame
        ``user_id, item_id`` pairs; ids are matched to RecBole's tokens by their text.
    n : int, default 20
        List length.
    batch_size : int, default 256
        Users scored at once.

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id`` (the candidates' own values), ``rank`` (1 = top),
        ``score``, ``model``; users in order of appearance.

    Raises
    ------
    InputError
        On a user or item RecBole's dataset does not know, or a bad ``n``.
    """
    pairs = _candidates_recbole_iv(trained, candidates, n)
    torch, _ = import_recbole()
    from recbole.data.interaction import Interaction

    model, dataset = trained.model, trained.dataset
    uid_field, iid_field = dataset.uid_field, dataset.iid_field
    uids = np.asarray(dataset.token2id(uid_field, pairs[USER_ID].astype(str).to_numpy()))
    iids = np.asarray(dataset.token2id(iid_field, pairs[ITEM_ID].astype(str).to_numpy()))
    users = pd.unique(uids)
    scores = np.empty(len(pairs), dtype=np.float64)
    model.eval()
    with torch.no_grad():
        for start in range(0, len(users), batch_size):
            batch = users[start : start + batch_size]
            rows = np.flatnonzero(np.isin(uids, batch))
            scores[rows] = _score_pairs(model, batch, uids[rows], iids[rows], uid_field,
                                        iid_field, Interaction, torch)
    order = np.lexsort((-scores, pd.Index(users).get_indexer(uids)))
    ranked = pairs.iloc[order].assign(score=scores[order])
    ranked["rank"] = ranked.groupby(USER_ID, sort=False).cumcount() + 1
    out = ranked.loc[ranked["rank"] <= n, [USER_ID, ITEM_ID, "rank", "score"]]
    out = out.reset_index(drop=True)
    out["model"] = trained.name
    return out


def _score_pairs(
    model: Any, batch: Any, uids: Any, iids: Any, uid_field: str, iid_field: str,
    interaction: Any, torch: Any,
) -> Any:
    """Scores of the pairs ``(uids, iids)`` of the users ``batch``.

    ``full_sort_predict`` of the batch, then each pair's cell; a model without it
    (NeuMF, NNCF) scores just the pairs with ``predict``,
    :data:`~._recbole.PAIRS_PER_CALL` at a time.
    """
    try:
        full = model.full_sort_predict(interaction({uid_field: torch.as_tensor(batch)}))
    except NotImplementedError:
        step = _recbole.PAIRS_PER_CALL
        parts = []
        for start in range(0, len(uids), step):
            parts.append(model.predict(interaction({
                uid_field: torch.as_tensor(uids[start : start + step]),
                iid_field: torch.as_tensor(iids[start : start + step]),
            })))
        return torch.cat(parts).float().numpy()
    row = pd.Index(batch).get_indexer(uids)
    return full.view(len(batch), -1).float().numpy()[row, iids]


def _candidates_recbole_iv(
    trained: TrainedModel | LoadedModel, candidates: pd.DataFrame, n: int
) -> pd.DataFrame:
    if not isinstance(trained, TrainedModel | LoadedModel):
        raise InputError(
            f"`trained` must be a TrainedModel or LoadedModel, got {type(trained).__name__}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"`n` must be a positive integer, got {n!r}")
    for column in (USER_ID, ITEM_ID):
        if column not in candidates.columns:
            raise InputError(f"`candidates` has no column `{column}`")
    pairs = candidates[[USER_ID, ITEM_ID]].drop_duplicates().reset_index(drop=True)
    dataset = trained.dataset
    for column, field_name in ((USER_ID, dataset.uid_field), (ITEM_ID, dataset.iid_field)):
        known = dataset.field2token_id[field_name]
        unknown = [v for v in pd.unique(pairs[column]) if str(v) not in known]
        if unknown:
            raise InputError(
                f"{len(unknown)} candidate {column}s are not in the training data of "
                f"{trained.name} (e.g. {unknown[0]!r}); draw candidates from the split's "
                "items and test users")
    return pairs
