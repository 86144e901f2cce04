"""Sequential tests on exact choice vectors and against alternatives beyond one favoured
position (docs/exact-and-sequential.md, docs/validation-positional.md).

    PYTHONPATH=src nice -n 10 python benchmarks/sequential_exact_study.py \
        --part typeone|power|calls [--reps N] [--seed S] [--out FILE.jsonl]

- ``typeone``: rejection rate under the null with the e-value looked at after EVERY
  evaluation (200 queries x 20 orders = 4,000 evaluations), sampled and exact, every
  e-process, k = 5 and 10, two null models (crisp sets, graded preferences).
- ``power``: rejection within 200 queries x 16 orders (3,200 evaluations) for the
  sequential tests and fixed-sample POB-UNBP, sampled and exact, against a
  first-position pull, a middle-position pull, a diffuse aversion and graded
  preferences (``recaudit.positional._alternatives``).
- ``calls``: calls to a verdict at the paper's effect sizes (p_bias 0.03, 0.05, 0.08;
  section 8 model, 20 orders per query): fixed POB-UNBP's evaluations for 80 % power
  (sampled, exact) vs the sequential tests' budget for 80 % power and expected
  evaluations (a crossing paid to the end of its query block of 20), as shares of the
  paper's fixed design (2,000 queries x 20 orders = 40,000 evaluations per cell).

Each result is one JSON line (appended to ``--out``) and a Markdown row on stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from recaudit._stats import binomial_interval
from recaudit.positional._alternatives import (
    alternative_pb,
    sample_positions,
    simulate_choice_vectors,
)
from recaudit.positional._sequential_exact import EXACT_SEQUENTIAL_METHODS, log_e_vectors
from recaudit.positional._unbp import _reject_many

ALPHA = 0.05
ORDERS = 20
PAPER_EVALUATIONS = 2000 * 20
CHUNK = 50


def _emit(out: Path | None, row: dict[str, Any]) -> None:
    if out is not None:
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")


def _rate(hits: int, reps: int) -> dict[str, Any]:
    ci = binomial_interval(hits, reps)
    se = math.sqrt(max(hits / reps * (1 - hits / reps), 1e-12) / reps)
    return {"hits": hits, "reps": reps, "rate": hits / reps, "se": se,
            "wilson_low": ci.low, "wilson_high": ci.high}


def _first_crossing(log_e: np.ndarray) -> np.ndarray:
    """1-based index of the first crossing of log(1/alpha) per path, inf if none."""
    crossed = log_e >= math.log(1.0 / ALPHA)
    return np.where(crossed.any(axis=1), crossed.argmax(axis=1) + 1.0, np.inf)


def _data(model: str, reps: int, n_q: int, k: int, orders: int, strength: float,
          gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(exact vectors, one-hot sampled vectors), each (reps, n_q * orders, k)."""
    v = simulate_choice_vectors(model, reps, n_q, k=k, orders=orders, strength=strength,
                                gen=gen)
    return v, np.eye(k)[sample_positions(v, gen)]


def type_one(args: argparse.Namespace, gen: np.random.Generator) -> None:
    n_q = 200
    print("| model | k | answers | method | rejection rate [Wilson 95%] |")
    print("|---|---|---|---|---|")
    for model in ("first", "graded"):
        for k in (5, 10):
            hits: dict[tuple[str, str], int] = {}
            for start in range(0, args.reps, CHUNK):
                n = min(CHUNK, args.reps - start)
                v, oh = _data(model, n, n_q, k, ORDERS, 0.0, gen)
                for answers, x in (("sampled", oh), ("exact", v)):
                    for m in EXACT_SEQUENTIAL_METHODS:
                        le = log_e_vectors(x, method=m)  # type: ignore[arg-type]
                        key = (answers, m)
                        hits[key] = hits.get(key, 0) + int(np.isfinite(
                            _first_crossing(le)).sum())
                # exact, one factor per query block (the per-query mean vector)
                block = v.reshape(n, n_q, ORDERS, k).mean(axis=2)
                for m in ("favoured", "omnibus"):
                    key = ("exact-block", m)
                    le = log_e_vectors(block, method=m)  # type: ignore[arg-type]
                    hits[key] = hits.get(key, 0) + int(np.isfinite(
                        _first_crossing(le)).sum())
            for (answers, m), h in hits.items():
                r = _rate(h, args.reps)
                print(f"| {model} | {k} | {answers} | {m} | {r['rate']:.4f} "
                      f"[{r['wilson_low']:.4f}, {r['wilson_high']:.4f}] |", flush=True)
                _emit(args.out, {"part": "typeone", "model": model, "k": k,
                                 "answers": answers, "method": m,
                                 "evaluations": n_q * ORDERS, **r})


def power(args: argparse.Namespace, gen: np.random.Generator) -> None:
    n_q, orders = 200, 16
    cases = [("first", 0.05), ("first", 0.1), ("middle", 0.1), ("diffuse", 0.1),
             ("graded", 0.1)]
    print(f"Rejection within {n_q} queries x {orders} orders; sequential looked at after "
          "every evaluation.\n")
    print("| model | strength | k | PB | answers | test | power [Wilson 95%] | "
          "mean evaluations to rejection |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (5, 10):
        for model, s in cases:
            hits: dict[tuple[str, str], int] = {}
            taus: dict[tuple[str, str], list[float]] = {}
            for start in range(0, args.reps, CHUNK):
                n = min(CHUNK, args.reps - start)
                v, oh = _data(model, n, n_q, k, orders, s, gen)
                for answers, x in (("sampled", oh), ("exact", v)):
                    shares = x.reshape(n, n_q, orders, k).mean(axis=2)
                    key = (answers, "fixed POB-UNBP")
                    hits[key] = hits.get(key, 0) + int(_reject_many(shares, ALPHA).sum())
                    for m in EXACT_SEQUENTIAL_METHODS:
                        tau = _first_crossing(log_e_vectors(x, method=m))  # type: ignore[arg-type]
                        key = (answers, m)
                        hits[key] = hits.get(key, 0) + int(np.isfinite(tau).sum())
                        taus.setdefault(key, []).extend(tau[np.isfinite(tau)].tolist())
            pb = alternative_pb(model, k, s)
            for (answers, test), h in hits.items():
                r = _rate(h, args.reps)
                t = taus.get((answers, test))
                mean_tau = float(np.mean(t)) if t else None
                print(f"| {model} | {s} | {k} | {pb:.4f} | {answers} | {test} | "
                      f"{r['rate']:.3f} [{r['wilson_low']:.3f}, {r['wilson_high']:.3f}] | "
                      f"{'' if mean_tau is None else f'{mean_tau:.0f}'} |", flush=True)
                _emit(args.out, {"part": "power", "model": model, "strength": s, "k": k,
                                 "pb": pb, "answers": answers, "test": test,
                                 "queries": n_q, "orders": orders,
                                 "mean_evaluations_to_rejection": mean_tau, **r})


def _fixed_n80(k: int, pb: float, reps: int, gen: np.random.Generator) -> dict[str, int | None]:
    """Smallest number of queries (x ORDERS) at which POB-UNBP rejects in >= 80%."""
    grid = [*range(2, 40), *range(40, 100, 5), *range(100, 400, 20), *range(400, 1201, 50)]
    need: dict[str, int | None] = {"sampled": None, "exact": None}
    for n_q in grid:
        hits = {"sampled": 0, "exact": 0}
        chunk = max(1, min(reps, 200_000 // (n_q * ORDERS)))
        for start in range(0, reps, chunk):
            n = min(chunk, reps - start)
            v, oh = _data("first", n, n_q, k, ORDERS, pb, gen)
            for answers, x in (("sampled", oh), ("exact", v)):
                if need[answers] is None:
                    shares = x.reshape(n, n_q, ORDERS, k).mean(axis=2)
                    hits[answers] += int(_reject_many(shares, ALPHA).sum())
        for answers in hits:
            if need[answers] is None and hits[answers] >= 0.8 * reps:
                need[answers] = n_q
        if all(v is not None for v in need.values()):
            break
    return need


def _budget(paid: np.ndarray, level: float) -> tuple[float, float, float]:
    """(budget for power `level`, expected evaluations min(paid, budget), its
    Monte-Carlo SE)."""
    budget = float(np.quantile(paid, level, method="higher"))
    if not math.isfinite(budget):
        return math.inf, math.inf, math.inf
    spent = np.minimum(paid, budget)
    return budget, float(spent.mean()), float(spent.std(ddof=1) / math.sqrt(spent.size))


def calls(args: argparse.Namespace, gen: np.random.Generator) -> None:
    print(f"Paper's fixed design: {PAPER_EVALUATIONS} evaluations per cell.\n")
    print("| k | p_bias | PB | design | evaluations for 80% | expected evaluations ± SE | "
          "share of paper | budget for 95% | power at 2,000 evaluations |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in (5, 10):
        for p in (0.03, 0.05, 0.08):
            t0 = time.time()
            pb = alternative_pb("first", k, p)
            need = _fixed_n80(k, p, args.reps, gen)
            for answers, n80 in need.items():
                ev = None if n80 is None else n80 * ORDERS
                _calls_row(args, k, p, pb, f"fixed {answers}", ev, ev, None, None, None)
            horizon = 600 * ORDERS
            taus: dict[str, list[np.ndarray]] = {}
            for start in range(0, args.reps, CHUNK // 2):
                n = min(CHUNK // 2, args.reps - start)
                v, oh = _data("first", n, 600, k, ORDERS, p, gen)
                for answers, x in (("sampled", oh), ("exact", v)):
                    for m in ("favoured", "omnibus"):
                        tau = _first_crossing(log_e_vectors(x, method=m))  # type: ignore[arg-type]
                        taus.setdefault(f"sequential {answers} {m}", []).append(tau)
                block = v.reshape(n, 600, ORDERS, k).mean(axis=2)
                for m in ("favoured", "omnibus"):
                    tau = _first_crossing(log_e_vectors(block, method=m)) * ORDERS  # type: ignore[arg-type]
                    taus.setdefault(f"sequential exact-block {m}", []).append(tau)
            for design, parts in taus.items():
                tau = np.concatenate(parts)
                paid = np.ceil(tau / ORDERS) * ORDERS  # to the end of the query block
                b80, e80, se80 = _budget(paid, 0.8)
                b95, _, _ = _budget(paid, 0.95)
                p2000 = float(np.mean(paid <= 2000))
                _calls_row(args, k, p, pb, design, b80, e80, se80, b95, p2000,
                           horizon=horizon)
            print(f"<!-- k={k} p={p}: {time.time() - t0:.0f} s -->", flush=True)


def _calls_row(args: argparse.Namespace, k: int, p: float, pb: float, design: str,
               budget: float | None, expected: float | None, se: float | None,
               b95: float | None, p2000: float | None, horizon: int | None = None) -> None:
    def fmt(x: float | None) -> str:
        if x is None:
            return ""
        return f"> {horizon}" if not math.isfinite(x) else f"{x:.0f}"

    share = None if expected is None or not math.isfinite(expected) else (
        expected / PAPER_EVALUATIONS)
    se_text = "" if se is None or not math.isfinite(se) else f" ± {se:.0f}"
    print(f"| {k} | {p} | {pb:.4f} | {design} | {fmt(budget)} | {fmt(expected)}{se_text} | "
          f"{'' if share is None else f'{share:.2%}'} | {fmt(b95)} | "
          f"{'' if p2000 is None else f'{p2000:.3f}'} |", flush=True)

    def num(x: float | None) -> float | None:
        return None if x is None or not math.isfinite(x) else x

    _emit(args.out, {"part": "calls", "k": k, "p_bias": p, "pb": pb, "design": design,
                     "reps": args.reps, "evaluations_for_80": num(budget),
                     "expected_evaluations": num(expected), "expected_se": num(se),
                     "share_of_paper": share,
                     "budget_for_95": num(b95), "power_at_2000": p2000,
                     "horizon": horizon})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("typeone", "power", "calls"), required=True)
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    gen = np.random.default_rng(args.seed)
    t0 = time.time()
    {"typeone": type_one, "power": power, "calls": calls}[args.part](args, gen)
    print(f"\n(wall time {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
