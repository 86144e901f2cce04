"""Catalog embedding throughput and embedding-cache effect (recaudit LLM testbed).

Usage::

    PYTHONPATH=src python benchmarks/bench_embedding.py [--n 2000] [--catalog PATH]

Embeds ``n`` Myntra product titles with the packaged all-MiniLM-L6-v2 through
sentence-transformers (``engine="torch"``; the torch-free engines are compared in
bench_embedder_engines.py), once with torch set to 1 thread and once with torch's
default thread count, then times a
second ``Retriever`` on the same catalog and cache folder (must not re-embed).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from recaudit.llm import ColumnMap, Retriever, generate_queries, load_catalog  # noqa: E402

DEFAULT_CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    args = ap.parse_args()
    default_threads = torch.get_num_threads()
    catalog = load_catalog(args.catalog, columns=ColumnMap.myntra())
    sub = catalog.subset(np.random.default_rng(0).choice(len(catalog), args.n, replace=False))
    titles = sub.items["title"].tolist()
    out: dict[str, object] = {"n_titles": args.n, "load_avg_start": os.getloadavg()[0]}
    for label, threads in (("1_thread", 1), ("default_threads", None)):
        r = Retriever(cache_dir=Path(tempfile.mkdtemp()), n_threads=threads, engine="torch")
        r.embed(titles[:64])  # load + warm up
        t = time.perf_counter()
        r.embed(titles)
        dt = time.perf_counter() - t
        out[f"sentences_per_s_{label}"] = round(args.n / dt, 1)
    out["default_threads"] = default_threads
    cache = Path(tempfile.mkdtemp())
    queries = generate_queries(sub, 50, rng=0)
    first = Retriever(cache_dir=cache, engine="torch")
    t = time.perf_counter()
    first.retrieve(sub, queries, k=5)
    out["first_run_s"] = round(time.perf_counter() - t, 2)
    second = Retriever(cache_dir=cache, engine="torch")
    second.encoder  # noqa: B018 -- load the model outside the timing, like the first run's warm-up
    t = time.perf_counter()
    second.retrieve(sub, queries, k=5)
    out["second_run_s"] = round(time.perf_counter() - t, 2)
    out["second_run_embedded"] = second.n_embedded
    out["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
