"""How far two engines on the same GGUF weights disagree, on the demo's prompts.

Usage::

    PYTHONPATH=src OMP_WAIT_POLICY=PASSIVE python benchmarks/engine_agreement.py \
        [--evaluations 80] [--model smollm2-135m] [--out benchmarks/results/engine_agreement.json]

For the first ``--evaluations`` evaluations of the demo audit (Myntra catalog, k = 5,
the demo's prompt; queries and candidates retrieved with the packaged embedder, cached),
three answer paths on the SAME GGUF file:

- ``transformers``: :class:`LocalBackend` (GGUF dequantised to float32), constrained:
  forced-prefix choice probabilities, argmax at temperature 0;
- ``llamacpp``: :class:`LlamaCppBackend` (llama.cpp in process, quantised kernels),
  constrained by the same forced-prefix definition;
- ``llamacpp_json_schema``: llama.cpp's HTTP server with a JSON-schema
  ``response_format`` (grammar-constrained decoding of the whole JSON object, what an
  ``openai`` model with ``constrained = true`` gets), greedy.

Reports the largest and mean |difference| of the two engines' choice probabilities, the
share of prompts with the same argmax, and each path's share of selections by prompt
position. Writes one JSON file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_llamacpp_engine import DEFAULT_CATALOG, _gather_limited, _requests, _Server

from recaudit.audit._plan import answer_schema
from recaudit.llm import parse_answer
from recaudit.llm.backends import (
    PACKAGED_MODELS,
    LlamaCppBackend,
    LocalBackend,
    OpenAIBackend,
    packaged_model_path,
)


def _shares(positions: list[int | None], k: int) -> list[float]:
    got = [p for p in positions if p is not None]
    return [sum(p == i for p in got) / max(len(got), 1) for i in range(1, k + 1)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluations", type=int, default=80)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    ap.add_argument("--run", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/engine_agreement.json")
    args = ap.parse_args()
    gguf = packaged_model_path(args.model) / PACKAGED_MODELS[args.model].gguf_file
    reqs = [replace(r, choice_probabilities=True) for r in _requests(args)]
    k = len(reqs[0].identifiers)

    t0 = time.perf_counter()
    engine = LlamaCppBackend(args.model, n_threads=args.threads, n_parallel=1,
                             constrained=True)
    cpp = [engine.complete_sync(r) for r in reqs]
    asyncio.run(engine.aclose())
    t_cpp = time.perf_counter() - t0

    t0 = time.perf_counter()
    ref = LocalBackend(args.model, n_threads=args.threads, constrained=True)
    hf = [ref.complete_sync(r) for r in reqs]
    asyncio.run(ref.aclose())
    t_hf = time.perf_counter() - t0

    server = _Server(gguf, args)
    try:
        backend = OpenAIBackend(server.url.removesuffix("/chat/completions"), "m",
                                concurrency=args.parallel)

        async def run() -> list:
            out = await _gather_limited(args.parallel, [
                (lambda r=r: backend.complete(replace(
                    r, response_format=answer_schema(r.identifiers),
                    choice_probabilities=False))) for r in reqs])
            await backend.aclose()
            return out

        schema = asyncio.run(run())
    finally:
        server.stop()

    a = np.array([r.choice_probs for r in cpp])
    b = np.array([r.choice_probs for r in hf])
    diff = np.abs(a - b)
    ids = reqs[0].identifiers
    pos = {
        "transformers": [parse_answer(r.text, ids).position for r in hf],
        "llamacpp": [parse_answer(r.text, ids).position for r in cpp],
        "llamacpp_json_schema": [parse_answer(r.text, ids).position for r in schema],
    }
    out = {
        "model": args.model, "gguf": gguf.name, "evaluations": len(reqs), "k": k,
        "max_abs_diff": float(diff.max()), "mean_abs_diff": float(diff.mean()),
        "argmax_agreement": float(np.mean(a.argmax(1) == b.argmax(1))),
        "mean_outside_mass": {"transformers": float(np.mean([r.outside_mass for r in hf])),
                              "llamacpp": float(np.mean([r.outside_mass for r in cpp]))},
        "position_shares": {name: _shares(p, k) for name, p in pos.items()},
        "mean_choice_probs": {"transformers": b.mean(0).tolist(),
                              "llamacpp": a.mean(0).tolist()},
        "wall_s": {"transformers_incl_load": t_hf, "llamacpp_incl_load": t_cpp},
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
