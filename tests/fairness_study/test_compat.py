"""The RecBole compatibility module: optional import, containment, shims."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import random
import sys

import numpy as np
import pytest

from recaudit import MissingExtraError
from recaudit.fairness.study.models import _recbole_compat as compat


@pytest.fixture
def recbole():
    """Skip unless torch and RecBole are installed (not on the torch-free base run)."""
    pytest.importorskip("torch", reason="needs the `fairness` extra (torch)")
    pytest.importorskip("recbole", reason="needs RecBole: pip install --no-deps recbole==1.2.1")
    return compat.import_recbole()


def test_missing_recbole_gives_the_whole_install_command(monkeypatch):
    real = importlib.metadata.version

    def version(name):
        if name == "recbole":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(MissingExtraError) as info:
        compat.import_recbole()
    assert info.value.command == compat.RECBOLE_INSTALL
    assert ("install it with `pip install 'recaudit[fairness]' && "
            "pip install --no-deps recbole==1.2.1`") in str(info.value)


def test_missing_requirements_skip_ray_and_extras(monkeypatch):
    declared = ["numpy (>=1.17.2)", "ray (<=2.6.3,>=1.13.0)",
                "recaudit-no-such-dist (>=1.0)", "hyperopt (==0.2.5) ; extra == 'hyperopt'"]
    monkeypatch.setattr(importlib.metadata, "requires",
                        lambda name: declared if name == "recbole" else [])
    assert compat.missing_requirements() == ["recaudit-no-such-dist"]


def test_a_missing_requirement_is_named_with_the_extra(monkeypatch):
    monkeypatch.setattr(compat, "_checked", False)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: compat.RECBOLE_VERSION)
    monkeypatch.setattr(importlib.metadata, "requires",
                        lambda name: ["numpy (>=1.17.2)", "recaudit-no-such-dist (>=1.0)"]
                        if name == "recbole" else [])
    with pytest.raises(MissingExtraError,
                       match=r"`recaudit-no-such-dist` is required .*recaudit\[fairness\]"):
        compat.import_recbole()


def test_numpy_aliases_for_recbole_without_the_names_numpy_2_removed(recbole):
    from recbole.config.configurator import Config

    Config.compatibility_settings(None)  # what every RecBole Config runs first
    expected = {"float": np.float64, "complex": np.complex128, "unicode": np.str_,
                "str": np.str_, "int": np.int_, "bool": np.bool_, "object": np.object_}
    for name, target in expected.items():  # the names RecBole's own code uses
        assert getattr(np, name) is target, name
    if int(np.__version__.split(".")[0]) >= 2:
        for removed in ("float_", "complex_", "unicode_"):
            assert not hasattr(np, removed), removed


def test_dok_matrix_update_for_ngcf_and_lightgcn(recbole):
    import scipy.sparse as sp

    a = sp.dok_matrix((3, 3), dtype=np.float32)
    a._update({(0, 1): 1, (2, 0): 1, (1, 2): 1})  # as NGCF/LightGCN build the adjacency
    assert a.nnz == 3
    assert a.toarray().tolist() == [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    assert (a.tocsr() > 0).sum(axis=1).tolist() == [[1], [1], [1]]


def test_missing_recbole_names_the_extra(monkeypatch):
    real = importlib.import_module

    def fake(name, *args):
        if name.startswith("recbole"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(compat.importlib, "import_module", fake)
    with pytest.raises(MissingExtraError, match=r"`recbole` is required .*recaudit\[fairness\]"):
        compat.import_recbole()


def test_session_contains_argv_cwd_threads_and_global_rng(tmp_path, monkeypatch, recbole):
    torch, _ = recbole
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


def test_collector_shim_moves_only_tensors(recbole):
    torch, _ = recbole
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
