"""What a shared KV prefix would save the local backend, measured (issue 3).

A prompt pass over a prompt whose first P tokens were already processed (their keys and
values cached) only has to process the remaining tokens. How much is shared depends on
the template:

- ``paper`` order (the default: candidates, then the query): every prompt of a run
  shares only the system message, the chat-template header and the text before the
  first candidate; the query comes after the (permuted) candidates.
- ``query-first`` (NOT the paper's template; a variant built here only to measure it):
  the prompts of one query (all its candidate orders) also share the query.

For real Myntra prompts (packaged embedder, generated queries, sampled orders) this
times, per prompt, the full prompt pass against the pass over the unshared suffix with
the prefix's cache (the prefix pass itself amortised over the prompts that share it),
and compares the two next-token distributions (floating-point differences: the
reason a shared prefix is not the default, docs/decisions/).

Usage::

    PYTHONPATH=src python benchmarks/bench_prefix_cache.py [--queries 6] [--orders 4] [--k 5 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from recaudit.llm import (  # noqa: E402
    ColumnMap,
    PromptTemplate,
    Retriever,
    generate_queries,
    load_catalog,
    positional_identifiers,
    render_request,
    sampled_orders,
)
from recaudit.llm.backends import LocalBackend  # noqa: E402
from recaudit.llm.backends._local import _cache_of  # noqa: E402

DEFAULT_CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"
DEMO_TEMPLATE = "src/recaudit/llm/configs/demo_prompt.toml"


def _query_first(template: PromptTemplate) -> PromptTemplate:
    """The same template with the customer request moved before the candidates."""
    head, _, tail = template.user.partition("{candidates}")
    request_line = next(line for line in tail.splitlines() if "{query}" in line)
    rest = tail.replace(request_line, "").lstrip("\n")
    user = f"{request_line}\n\n{head}{{candidates}}\n\n{rest}"
    return PromptTemplate(system=template.system, user=user, candidate=template.candidate,
                          separator=template.separator)


def _common(seqs: list[list[int]]) -> int:
    n = min(len(s) for s in seqs)
    for i in range(n):
        if any(s[i] != seqs[0][i] for s in seqs[1:]):
            return i
    return n


def _pass(backend: LocalBackend, ids: list[int], cache: object = None) -> tuple[float, Any]:
    kw = {} if cache is None else {backend._cache_kw: cache}
    t = time.perf_counter()
    with torch.inference_mode():
        out = backend.model(input_ids=torch.tensor([ids]), use_cache=True, logits_to_keep=1,
                            **kw)
    return time.perf_counter() - t, out


def _measure(backend: LocalBackend, groups: list[list[list[int]]],
             prefix_of: Callable[[list[list[int]]], int]) -> dict[str, object]:
    """Full vs suffix-with-cached-prefix passes over ``groups`` (prompts sharing a prefix)."""
    full_t, split_t, prefix_t, diffs, same_argmax, n_prompts = [], [], 0.0, [], 0, 0
    shared_tokens, total_tokens = 0, 0
    cached: dict[tuple[int, ...], object] = {}
    for group in groups:
        p = min(prefix_of(group), min(len(s) for s in group) - 1)
        key = tuple(group[0][:p])
        if key not in cached:
            dt, out = _pass(backend, list(key))
            prefix_t += dt
            cached[key] = _cache_of(out)
        cache = cached[key]
        for ids in group:
            tf, full = _pass(backend, ids)
            ts, split = _pass(backend, ids[p:], cache)
            cache.crop(-(len(ids) - p))  # back to the prefix for the next prompt
            pf = torch.softmax(full.logits[0, -1].float(), -1)
            ps = torch.softmax(split.logits[0, -1].float(), -1)
            diffs.append(float((pf - ps).abs().max()))
            same_argmax += int(int(pf.argmax()) == int(ps.argmax()))
            full_t.append(tf)
            split_t.append(ts)
            shared_tokens += p
            total_tokens += len(ids)
            n_prompts += 1
    full_s, split_s = sum(full_t), sum(split_t) + prefix_t
    return {
        "prompts": n_prompts,
        "mean tokens": total_tokens / n_prompts,
        "shared share": shared_tokens / total_tokens,
        "full s/prompt": full_s / n_prompts,
        "split s/prompt": split_s / n_prompts,
        "speed-up": full_s / split_s,
        "max |dp|": max(diffs),
        "median |dp|": statistics.median(diffs),
        "same argmax": f"{same_argmax}/{n_prompts}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=6)
    ap.add_argument("--orders", type=int, default=4)
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10])
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    args = ap.parse_args()
    torch.set_num_threads(1)
    catalog = load_catalog(args.catalog, columns=ColumnMap.myntra())
    queries = generate_queries(catalog, args.queries, rng=0)
    backend = LocalBackend(n_threads=1)
    templates = {"paper": PromptTemplate.default(),
                 "demo": PromptTemplate.from_file(DEMO_TEMPLATE)}
    print(f"load average {os.getloadavg()[0]:.2f}; {args.queries} queries x {args.orders} "
          f"orders; one thread; seconds are sums over prompts (prefix passes included)")
    header = None
    for k in args.k:
        cands = Retriever().retrieve(catalog, queries, k=k)
        orders = sampled_orders(k, args.orders, rng=1)
        for tname, template in templates.items():
            for layout, tpl in (("as shipped", template), ("query-first", _query_first(template))):
                groups = [
                    [backend._prompt_ids(render_request(
                        tpl, q.text, cands[q.query_id], order,
                        identifiers=positional_identifiers(k), temperature=0.0,
                        max_tokens=1, query_id=q.query_id))
                     for order in orders]
                    for q in queries
                ]
                row = _measure(backend, groups, _common)
                if header is None:
                    header = ["k", "template", "layout", *row]
                    print(" | ".join(header))
                cells = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in row.values()]
                print(" | ".join([str(k), tname, layout, *cells]))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
