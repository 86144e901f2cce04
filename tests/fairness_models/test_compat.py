"""The RecBole compatibility module: optional import, containment, shims."""

from __future__ import annotations

import importlib
import os
import random
import sys

import numpy as np
import pytest

from recaudit import MissingExtraError
from recaudit.fairness.models import _recbole_compat as compat


def test_missing_recbole_names_the_extra(monkeypatch):
    real = importlib.import_module

    def fake(name, *args):
        if name.startswith("recbole"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(compat.importlib, "import_module", fake)
    with pytest.raises(MissingExtraError, match=r"`recbole` is required .*recaudit\[fairness\]"):
        compat.import_recbole()


def test_session_contains_argv_cwd_threads_and_global_rng(tmp_path, monkeypatch):
    torch, _ = compat.import_recbole()
    from recbole.utils import init_seed

    monkeypatch.setattr(sys, "argv", ["prog", "--learning_rate=9"])
    cwd = os.getcwd()
    threads = torch.get_num_threads()
    random.seed(1)
    np.random.seed(1)  # noqa: NPY002 -- the global state RecBole would clobber
    torch.manual_seed(1)
    expected = (random.random(), np.random.random(), torch.rand(1).item())  # noqa: NPY002
    random.seed(1)
    np.random.seed(1)  # noqa: NPY002
    torch.manual_seed(1)
    with compat.recbole_session(tmp_path / "work", num_threads=1):
        assert sys.argv == ["prog"]
        assert os.getcwd() == str((tmp_path / "work").resolve())
        assert torch.get_num_threads() == 1
        assert os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1"
        init_seed(123, True)
    assert sys.argv == ["prog", "--learning_rate=9"] and os.getcwd() == cwd
    assert torch.get_num_threads() == threads
    got = (random.random(), np.random.random(), torch.rand(1).item())  # noqa: NPY002
    assert got == expected


def test_collector_shim_moves_only_tensors():
    torch, _ = compat.import_recbole()
    from recbole.evaluator.collector import Collector

    class Struct:
        def __init__(self):
            self._data_dict = {"data.num_items": 5, "rec.items": torch.ones(2)}

        def __contains__(self, key):
            return key in self._data_dict

        def __delitem__(self, key):
            del self._data_dict[key]

    collector = Collector.__new__(Collector)
    collector.data_struct = Struct()
    out = Collector.get_data_struct(collector)
    assert out._data_dict["data.num_items"] == 5
    assert "rec.items" not in collector.data_struct
