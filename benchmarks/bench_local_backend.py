"""SmolLM2-135M-Instruct evaluations/s at k = 5, sequential vs batched, and its
discard rate under the strict parser (recaudit LLM testbed).

Usage::

    PYTHONPATH=src python benchmarks/bench_local_backend.py [--prompts 20] [--sequential 6]
        [--batch-size 5] [--max-tokens 96]

Real prompts: Myntra catalog, generated queries, top-5 retrieval with the packaged
embedder, the default template, greedy decoding. All ``--prompts`` prompts run
batched (for throughput and the discard rate); the first ``--sequential`` also run
one by one (greedy, so their texts must equal the batched ones). Also times the
choice-probability computation alone (``max_tokens=1``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from recaudit.llm import (  # noqa: E402
    ChatRequest,
    ColumnMap,
    PromptTemplate,
    Retriever,
    generate_queries,
    load_catalog,
    parse_answer,
    positional_identifiers,
    render_request,
    sampled_orders,
)
from recaudit.llm.backends import LocalBackend  # noqa: E402

DEFAULT_CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--sequential", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    ap.add_argument("--stop-after-json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    catalog = load_catalog(args.catalog, columns=ColumnMap.myntra())
    queries = generate_queries(catalog, args.prompts, rng=0)
    cands = Retriever().retrieve(catalog, queries, k=5)
    orders = sampled_orders(5, args.prompts, rng=1)
    template = PromptTemplate.default()
    reqs = [
        render_request(
            template,
            q.text,
            cands[q.query_id],
            orders[i],
            identifiers=positional_identifiers(5),
            temperature=0.0,
            max_tokens=args.max_tokens,
            query_id=q.query_id,
        )
        for i, q in enumerate(queries)
    ]
    out: dict[str, object] = {
        "k": 5,
        "prompts": args.prompts,
        "max_tokens": args.max_tokens,
        "load_avg_start": os.getloadavg()[0],
    }
    t = time.perf_counter()
    backend = LocalBackend(n_threads=1, stop_after_json=args.stop_after_json)
    out["load_s"] = round(time.perf_counter() - t, 1)
    out["backend"] = backend.name
    out["loaded_from_cache"] = backend.loaded_from is not None
    t = time.perf_counter()
    batched = []
    for s in range(0, len(reqs), args.batch_size):
        batched += backend.complete_batch(reqs[s : s + args.batch_size])
    dt = time.perf_counter() - t
    out["batched_evals_per_s"] = round(len(reqs) / dt, 4)
    out["batch_size"] = args.batch_size
    if args.sequential:
        t = time.perf_counter()
        seq = [backend.complete_sync(r) for r in reqs[: args.sequential]]
        dt = time.perf_counter() - t
        out["sequential_evals_per_s"] = round(args.sequential / dt, 4)
        out["sequential_equals_batched"] = [
            a.text == b.text for a, b in zip(seq, batched, strict=False)
        ]
    out["mean_prompt_tokens"] = float(np.mean([r.prompt_tokens for r in batched]))
    out["mean_completion_tokens"] = float(np.mean([r.completion_tokens for r in batched]))
    parsed = [parse_answer(r.text, q.identifiers) for r, q in zip(batched, reqs, strict=True)]
    reasons = collections.Counter(p.discard_reason or "valid" for p in parsed)
    out["parse_outcomes"] = dict(reasons)
    out["discard_rate"] = round(1 - reasons["valid"] / len(parsed), 3)
    out["positions_chosen"] = dict(collections.Counter(p.position for p in parsed if p.valid))
    probe = [
        ChatRequest(**{**r.__dict__, "max_tokens": 1, "choice_probabilities": True})
        for r in reqs[:4]
    ]
    t = time.perf_counter()
    probs = [backend.complete_sync(r) for r in probe]
    out["choice_prob_evals_per_s"] = round(len(probe) / (time.perf_counter() - t), 4)
    out["choice_probs_mean"] = [
        round(float(x), 3) for x in np.mean([r.choice_probs for r in probs], axis=0)
    ]
    out["outside_mass_mean"] = round(float(np.mean([r.outside_mass for r in probs])), 3)
    out["examples"] = [r.text[:160] for r in batched[:3]]
    out["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
