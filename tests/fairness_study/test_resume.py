"""A grid point interrupted mid-training resumes from its last validation, as if never
interrupted (the crash is injected into the resume file's writer)."""

from __future__ import annotations

import pytest

from recaudit.fairness import split_per_user, to_implicit
from recaudit.fairness.study import load_recbole_atomic

from .test_study import small_ml100k

EPOCHS = 8
SETTINGS = {"embedding_size": 16, "stopping_step": 50}


class Interrupted(BaseException):
    """Stands in for the process being killed after a validation."""


@pytest.fixture(scope="module")
def split_folder(ml100k_path, tmp_path_factory):
    pytest.importorskip("torch", reason="training needs the `fairness` extra (torch)")
    pytest.importorskip("recbole", reason="training needs RecBole: "
                                          "pip install --no-deps recbole==1.2.1")
    from recaudit.fairness.study.models import write_atomic_split

    root = tmp_path_factory.mktemp("resume")
    data = small_ml100k(ml100k_path, root)
    split = split_per_user(to_implicit(load_recbole_atomic(data)), rng=5)
    return write_atomic_split(split, root / "data")


def train(split_folder, workdir, lr=0.01):
    from recaudit.fairness.study.models import train_model

    return train_model("MF", split_folder, workdir=workdir, grid={"learning_rate": [lr]},
                       epochs=EPOCHS, settings=SETTINGS, seed=3)


def crash_after(monkeypatch, epoch):
    """Make the resume writer raise right after writing the file of ``epoch`` (0-based)."""
    from recaudit.fairness.study.models._resume import PointProgress

    real = PointProgress.saver

    def saver(self, *args, **kwargs):
        save = real(self, *args, **kwargs)

        def wrapped(epoch_idx, valid_score):
            save(epoch_idx, valid_score)
            if epoch_idx == epoch:
                raise Interrupted

        return wrapped

    monkeypatch.setattr(PointProgress, "saver", saver)


@pytest.fixture(scope="module")
def uninterrupted(split_folder, tmp_path_factory):
    return train(split_folder, tmp_path_factory.mktemp("whole") / "work")


def same_weights(a, b):
    sa, sb = a.model.state_dict(), b.model.state_dict()
    return sa.keys() == sb.keys() and all((sa[k] == sb[k]).all() for k in sa)


@pytest.mark.parametrize("crash_epoch", [3, EPOCHS - 1])
def test_resumed_training_equals_uninterrupted_training(
        split_folder, uninterrupted, tmp_path, monkeypatch, crash_epoch):
    work = tmp_path / "work"
    with monkeypatch.context() as patch:
        crash_after(patch, crash_epoch)
        with pytest.raises(Interrupted):
            train(split_folder, work)
    assert (work / "checkpoints" / "resume-000.pth").is_file()
    resumed = train(split_folder, work)
    point, whole = resumed.grid[0], uninterrupted.grid[0]
    assert point.resumed_at == (crash_epoch + 2,)
    assert whole.resumed_at == ()
    assert (point.epochs_run, point.best_epoch, point.valid_score, point.valid_result) == (
        whole.epochs_run, whole.best_epoch, whole.valid_score, whole.valid_result)
    assert same_weights(resumed, uninterrupted)
    assert point.seconds > 0
    assert sorted(p.name for p in work.rglob("*.pth")) == ["best.pth"]  # resume file gone


def test_a_resume_file_of_other_settings_is_not_used(split_folder, tmp_path, monkeypatch):
    work = tmp_path / "work"
    with monkeypatch.context() as patch:
        crash_after(patch, 3)
        with pytest.raises(Interrupted):
            train(split_folder, work, lr=0.05)
    fresh = train(split_folder, work)  # another learning rate: starts at epoch 1
    assert fresh.grid[0].resumed_at == ()
    assert fresh.grid[0].epochs_run == EPOCHS


def test_a_torn_resume_file_is_ignored(split_folder, uninterrupted, tmp_path, monkeypatch):
    work = tmp_path / "work"
    with monkeypatch.context() as patch:
        crash_after(patch, 3)
        with pytest.raises(Interrupted):
            train(split_folder, work)
    resume = work / "checkpoints" / "resume-000.pth"
    resume.write_bytes(resume.read_bytes()[:100])
    fresh = train(split_folder, work)
    assert fresh.grid[0].resumed_at == ()
    assert same_weights(fresh, uninterrupted)
