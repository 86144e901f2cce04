"""Ad-hoc probe behind the decision "Retrieval without torch": can a cheap first stage
keep MiniLM's exact top k?

Usage::

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src python benchmarks/embedder_shortcuts.py \
        [--cache-dir DIR] [--skip-int8]

Exact = full dense retrieval with the packaged MiniLM (ONNX Runtime engine; the whole
catalog is embedded once, or read from ``--cache-dir``). For the demo's 20 queries and
200 generated ones, prints the share whose exact top k (k = 5, 10, 20) lies inside the
top N (N = 50 ... 1,000) of each first stage: BM25 on words, BM25 on word pieces, the
mean of MiniLM's input token vectors, and the mean of MiniLM's vector of each word
piece embedded alone. With the ``onnx`` package installed (not part of the ``embed``
extra), also ONNX Runtime's dynamic int8 quantisation of the same graph: its speed, its
largest |1 - cosine| and its top-k agreement. Results are printed, not stored: a probe.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from recaudit.audit import demo_config
from recaudit.audit._plan import prepare_inputs
from recaudit.llm import ColumnMap, Retriever, generate_queries, load_catalog

CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"


def bm25(docs: list[list], queries: list[list], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 (Robertson & Zaragoza, 2009) of every query against every document."""
    vocab: dict = {}
    rows, cols = [], []
    for i, toks in enumerate(docs):
        for t in toks:
            rows.append(i)
            cols.append(vocab.setdefault(t, len(vocab)))
    tf = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                       shape=(len(docs), len(vocab))).tocoo()
    dl = np.bincount(tf.row, weights=tf.data, minlength=len(docs))
    df = np.bincount(tf.col, minlength=len(vocab))
    idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
    w = tf.data * (k1 + 1) / (tf.data + k1 * (1 - b + b * dl[tf.row] / dl.mean())) * idf[tf.col]
    weights = sp.csr_matrix((w, (tf.row, tf.col)), shape=tf.shape)
    q = sp.lil_matrix((len(queries), len(vocab)))
    for i, toks in enumerate(queries):
        for t in set(toks) & vocab.keys():
            q[i, vocab[t]] = 1
    return (q.tocsr() @ weights.T).toarray()


def top_sets(scores: np.ndarray, k: int) -> list[set]:
    return [set(np.lexsort((np.arange(r.size), -r))[:k]) for r in scores]


def report(name: str, first: np.ndarray, exact: dict[int, list[set]]) -> None:
    for n in (50, 100, 200, 500, 1000):
        short = [set(r) for r in np.argsort(-first, axis=1, kind="stable")[:, :n]]
        parts = []
        for k, sets in exact.items():
            ok = np.array([s <= short[i] for i, s in enumerate(sets)])
            parts.append(f"k={k}: demo {ok[:20].sum()}/20, all {ok.mean():.3f}")
        print(f"{name:10s} N={n:5d}  " + " | ".join(parts))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--skip-int8", action="store_true")
    args = ap.parse_args()
    catalog = load_catalog(CATALOG, columns=ColumnMap.myntra())
    r = Retriever(engine="onnx", cache_dir=args.cache_dir or Path(tempfile.mkdtemp()))
    demo = prepare_inputs(demo_config(catalog=Path(CATALOG)), run_dir=Path(tempfile.mkdtemp()),
                          resume=False, retriever=r, say=lambda _m: None, catalog=catalog)
    texts = [q.text for q in demo.queries] + [q.text for q in generate_queries(catalog, 200, rng=1)]
    titles = catalog.items["title"].tolist()
    emb, q = r.catalog_embeddings(catalog), r.embed(texts)
    exact = {k: top_sets(q @ emb.T, k) for k in (5, 10, 20)}
    words = re.compile(r"[a-z0-9]+")
    report("bm25-words", bm25([words.findall(t.lower()) for t in titles],
                              [words.findall(t.lower()) for t in texts]), exact)
    tok = r._encoder  # noqa: SLF001 -- a probe reads the loaded tokenizer and weights
    tok.model  # noqa: B018 -- load
    enc = [e.ids[1:-1] for e in tok._tokenizer.encode_batch([t.lower() for t in titles])]
    qenc = [e.ids[1:-1] for e in tok._tokenizer.encode_batch([t.lower() for t in texts])]
    report("bm25-wp", bm25(enc, qenc), exact)
    from recaudit.llm._bert import BertWeights

    table = BertWeights.load(tok.spec).word

    def static(seqs: list[list[int]], vectors: np.ndarray) -> np.ndarray:
        v = np.stack([vectors[s].mean(0) for s in seqs])
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    report("static-in", static(qenc, table) @ static(enc, table).T, exact)
    used = sorted({i for s in enc + qenc for i in s})
    t = time.process_time()
    alone = np.zeros_like(table)
    alone[used] = np.concatenate([tok.model(np.array([[101, u, 102] for u in used[s:s + 1000]]))
                                  for s in range(0, len(used), 1000)])
    print(f"distilled: {len(used)} word pieces, {time.process_time() - t:.1f} CPU-s")
    report("distilled", static(qenc, alone) @ static(enc, alone).T, exact)
    if not args.skip_int8:
        int8(r, titles, texts, emb, q, exact)


def int8(r: Retriever, titles: list[str], texts: list[str], emb: np.ndarray, q: np.ndarray,
         exact: dict[int, list[set]]) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from recaudit.llm._bert import BertWeights, encode_by_length
    from recaudit.llm._bert_onnx import build_graph

    enc = r._encoder  # noqa: SLF001
    folder = Path(tempfile.mkdtemp())
    (folder / "f32.onnx").write_bytes(build_graph(enc.spec, BertWeights.load(enc.spec)))
    quantize_dynamic(str(folder / "f32.onnx"), str(folder / "int8.onnx"),
                     weight_type=QuantType.QInt8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(folder / "int8.onnx"), options)

    def run(texts_: list[str]) -> np.ndarray:
        return encode_by_length(enc.spec, enc._tokenizer, texts_,
                                lambda ids: session.run(["pooled"], {"input_ids": ids})[0])

    for label, fwd in (("float32", lambda x: r.embed(x)), ("int8", run)):
        t = time.process_time()
        fwd(titles[:1000])
        print(f"{label}: {time.process_time() - t:.1f} CPU-s per 1,000 titles")
    e8, q8 = run(titles), run(texts)
    print(f"int8 largest |1 - cosine|: {np.abs(1 - (e8 * emb).sum(1)).max():.3f}")
    for k, sets in exact.items():
        same = [a == b for a, b in zip(sets, top_sets(q8 @ e8.T, k), strict=True)]
        print(f"int8 top-{k} sets equal: demo {sum(same[:20])}/20, all {np.mean(same):.3f}")
    report("int8", q8 @ e8.T, exact)


if __name__ == "__main__":
    main()
