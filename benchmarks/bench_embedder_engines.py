"""Retrieval embedders without torch vs sentence-transformers, in one process.

Usage::

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src python benchmarks/bench_embedder_engines.py \
        [--n 1000] [--threads 1 2] [--agreement [--skip-throughput]] [--out FILE.jsonl]

Throughput: ``n`` random Myntra titles embedded by each engine of ``Retriever``
(``torch`` = sentence-transformers, ``onnx`` = ONNX Runtime on the graph built from
the packaged safetensors, ``numpy`` = the reference pass) at each thread count, model
load excluded (timed apart) after a 64-title warm-up; titles/s by wall clock and per
CPU-second, and the ratio to sentence-transformers at the same thread count.

``--agreement`` then embeds the WHOLE catalog (12,491 titles) with ``onnx`` and
``torch`` (the cold first run of ``make demo``, timed) and reports the largest
|1 - cosine| between the two and whether the top-k candidate sets (k = 5, 10, 20) are
equal, in order, on the demo's 20 queries (built exactly as ``recaudit positional
demo`` builds them) and on 200 more generated queries -- as item ids, and as the
titles the model is shown (duplicate titles tie exactly; which of them comes first is
a tie-break).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from recaudit.audit import demo_config  # noqa: E402
from recaudit.audit._plan import prepare_inputs  # noqa: E402
from recaudit.llm import ColumnMap, Retriever, generate_queries, load_catalog  # noqa: E402

DEFAULT_CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"
ENGINES = ("torch", "onnx", "numpy")


def _blas_threads(engine: str, threads: int):
    """The numpy engine's threads are its BLAS's (threadpoolctl, when installed)."""
    if engine != "numpy":
        return nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    return threadpool_limits(threads)


def _available(engine: str) -> bool:
    mods = {"torch": ("torch", "sentence_transformers"), "onnx": ("onnxruntime",),
            "numpy": ("tokenizers", "safetensors")}[engine]
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in mods)


def throughput(titles: list[str], threads: list[int]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for n_threads in threads:
        base = None
        for engine in ENGINES:
            if not _available(engine):
                continue
            r = Retriever(engine=engine, n_threads=n_threads, cache_dir=Path(tempfile.mkdtemp()))
            with _blas_threads(engine, n_threads):
                t = time.perf_counter()
                r.embed(titles[:64])  # load + warm-up
                load = time.perf_counter() - t
                wall, cpu = time.perf_counter(), time.process_time()
                r.embed(titles)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            row = {"engine": engine, "threads": n_threads, "n_titles": len(titles),
                   "load_and_warmup_s": round(load, 2),
                   "titles_per_s": round(len(titles) / wall, 1),
                   "titles_per_cpu_s": round(len(titles) / cpu, 1),
                   "load_avg": round(os.getloadavg()[0], 2)}
            if engine == "torch":
                base = row["titles_per_s"]
            if base:
                row["ratio_vs_torch"] = round(float(row["titles_per_s"]) / float(base), 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _lists(retriever: Retriever, catalog, queries, k: int, field: str) -> dict[str, list[str]]:
    got = retriever.retrieve(catalog, queries, k=k)
    return {q: [getattr(c, field) for c in cands] for q, cands in got.items()}


def agreement(catalog_path: str, threads: int) -> dict[str, object]:
    cfg = demo_config(catalog=Path(catalog_path))
    catalog = load_catalog(catalog_path, columns=ColumnMap.myntra())
    out: dict[str, object] = {"n_titles": len(catalog), "threads": threads}
    retrievers = {}
    for engine in ("onnx", "torch"):
        r = Retriever(engine=engine, n_threads=threads, cache_dir=Path(tempfile.mkdtemp()))
        wall, cpu = time.perf_counter(), time.process_time()
        demo = prepare_inputs(cfg, run_dir=Path(tempfile.mkdtemp()), resume=False,
                              retriever=r, say=lambda _m: None, catalog=catalog)
        out[f"cold_demo_retrieval_s_{engine}"] = round(time.perf_counter() - wall, 1)
        out[f"cold_demo_retrieval_cpu_s_{engine}"] = round(time.process_time() - cpu, 1)
        retrievers[engine] = r
        print(json.dumps(out), flush=True)
    a, b = (retrievers[e].catalog_embeddings(catalog) for e in ("onnx", "torch"))
    out["max_abs_1_minus_cos"] = float(np.abs(1 - (a * b).sum(1)).max())
    out["max_abs_diff"] = float(np.abs(a - b).max())
    more = generate_queries(catalog, 200, rng=1)
    for k in (5, 10, 20):
        for label, queries in (("demo20", demo.queries), ("gen200", more)):
            x, y = (_lists(retrievers[e], catalog, queries, k, "item_id")
                    for e in ("onnx", "torch"))
            out[f"equal_ordered_k{k}_{label}"] = sum(x[q] == y[q] for q in x)
            out[f"equal_sets_k{k}_{label}"] = sum(set(x[q]) == set(y[q]) for q in x)
            # the titles the model is shown, lower-cased as the uncased tokenizer sees them
            x, y = ({q: [t.lower() for t in v] for q, v in
                     _lists(retrievers[e], catalog, queries, k, "title").items()}
                    for e in ("onnx", "torch"))
            out[f"equal_titles_ordered_k{k}_{label}"] = sum(x[q] == y[q] for q in x)
    out["load_avg"] = round(os.getloadavg()[0], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    ap.add_argument("--agreement", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--agreement-threads", type=int, default=1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    catalog = load_catalog(args.catalog, columns=ColumnMap.myntra())
    rows = np.random.default_rng(0).choice(len(catalog), args.n, replace=False)
    records = [] if args.skip_throughput else \
        throughput(catalog.items["title"].iloc[rows].tolist(), args.threads)
    if args.agreement:
        records.append(agreement(args.catalog, args.agreement_threads))
        print(json.dumps(records[-1], indent=2))
    if args.out:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with args.out.open("a", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps({"date": stamp, **rec}) + "\n")


if __name__ == "__main__":
    main()
