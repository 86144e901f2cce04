"""SmolLM2 evaluations/s on a study-shaped grid: the constrained-probability memo
before/after, and where an evaluation's time goes (cProfile of a real ``run_audit``).

Usage::

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src python benchmarks/bench_study_grid.py \
        [--queries 2] [--perms 4] [--k 5] [--temperatures 0 0.6]

One audit config in the shape of ``recaudit positional study``: every condition
(permutation, decoding, labels, labels_permutation) x the temperatures, constrained
answers with choice probabilities, the packaged SmolLM2 in-process (1 thread). The
same config runs twice through ``run_audit`` in this process, into fresh run folders:

- ``before``: the memo disabled (every evaluation pays its prompt pass);
- ``after``: the memo on (the default): a prompt seen before -- the same order at
  another temperature, the decoding condition's repeated identity order -- costs only
  the seeded draw.

The two journals must hold identical answers (the memo is exact). The ``after`` run
is profiled in both of its threads (the event loop with runner + journal, and the
model's worker thread); its own-time is split into prompt pass (torch), chat template +
tokenisation, journal (SQLite), and the rest. ``--profile-only`` skips ``before``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pandas as pd  # noqa: E402

from recaudit.llm import (  # noqa: E402
    _audit,  # noqa: E402
    parse_fairness_config,
    run_audit,
)
from recaudit.llm.backends import _local  # noqa: E402

DEFAULT_CATALOG = "/work/shared/data/myntra/myntra_products_catalog.csv"
PROMPT = Path(__file__).resolve().parents[1] / "src/recaudit/llm/configs/demo_prompt.toml"


def _config(args: argparse.Namespace) -> object:
    return parse_fairness_config(
        {
            "seed": 7,
            "concurrency": 8,
            "temperatures": args.temperatures,
            "conditions": ["permutation", "decoding", "labels", "labels_permutation"],
            "catalog": {"path": args.catalog, "columns": "myntra"},
            "queries": {"n": args.queries},
            "retrieval": {"k": [args.k]},
            "prompt": {"template": str(PROMPT), "max_tokens": 40, "constrained": True,
                       "choice_probabilities": True},
            "design": {"kind": "sampled", "n_perms": args.perms},
            "models": [{"name": "smollm2", "backend": "local", "n_threads": 1,
                        "batch_size": 8}],
        },
        base_dir=Path.cwd(),
    )


def _timed(cfg: object, out: Path, profiles: tuple[cProfile.Profile, cProfile.Profile] | None
           ) -> tuple[float, pd.DataFrame]:
    original = _local.LocalBackend.complete_batch
    original_run = _audit._run
    if profiles is not None:
        main, worker = profiles

        async def run(*args: object, **kwargs: object) -> object:
            main.enable()  # the event loop: runner + journal, not the setup
            try:
                return await original_run(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                main.disable()

        def complete_batch(self: _local.LocalBackend, requests: list) -> list:  # type: ignore[type-arg]
            worker.enable()
            try:
                return original(self, requests)
            finally:
                worker.disable()

        _local.LocalBackend.complete_batch = complete_batch  # type: ignore[method-assign]
        _audit._run = run  # type: ignore[assignment]
    started = time.perf_counter()
    try:
        result = run_audit(cfg, out_dir=out)  # type: ignore[arg-type]
    finally:
        if profiles is not None:
            _audit._run = original_run
            _local.LocalBackend.complete_batch = original  # type: ignore[method-assign]
    wall = time.perf_counter() - started
    return wall, pd.read_parquet(result.evaluations_path)


def _split(profiles: tuple[cProfile.Profile, cProfile.Profile]) -> dict[str, float]:
    stats = pstats.Stats(profiles[0])
    stats.add(profiles[1])
    buckets = {"prompt pass (model forward)": 0.0, "chat template + tokenise": 0.0,
               "journal (sqlite)": 0.0}
    total = 0.0
    for (file, _line, name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tt
        if ("torch" in file or "torch" in name or "transformers/models" in file
                or "transformers/integrations" in file):
            buckets["prompt pass (model forward)"] += tt
        elif "tokeniz" in file or "jinja" in file or name in ("apply_chat_template",):
            buckets["chat template + tokenise"] += tt
        elif "sqlite" in file or "sqlite3" in name or "_journal" in file:
            buckets["journal (sqlite)"] += tt
    buckets["other (asyncio, runner, parse, threads)"] = total - sum(buckets.values())
    shares = {k: v / total for k, v in buckets.items()}
    shares["total CPU seconds in the audit loop"] = total
    return shares


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=2)
    ap.add_argument("--perms", type=int, default=4)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.6])
    ap.add_argument("--catalog", default=DEFAULT_CATALOG)
    ap.add_argument("--profile-only", action="store_true")
    args = ap.parse_args()
    cfg = _config(args)
    root = Path(tempfile.mkdtemp(prefix="bench-study-"))
    # per-thread CPU time, so the event loop's idle waits do not count
    profiles = (cProfile.Profile(time.thread_time), cProfile.Profile(time.thread_time))
    wall_after, after = _timed(cfg, root / "after", profiles)
    n = len(after)
    print(f"evaluations: {n} (k = {args.k}, {args.queries} queries x {args.perms} orders, "
          f"temperatures {args.temperatures}, 4 conditions)")
    print(f"memo on: {wall_after:7.1f} s  {n / wall_after:6.3f} evaluations/s")
    print("own-time split of the memo-on run, both threads:")
    for name, share in _split(profiles).items():
        print(f"  {name:42s} {share:6.1%}" if share <= 1 else f"  {name:42s} {share:6.1f}")
    print(f"load average: {os.getloadavg()}")
    if args.profile_only:
        return
    size = _local.PROBS_MEMO_SIZE
    _local.PROBS_MEMO_SIZE = 0  # memo off: each entry is evicted as soon as stored
    try:
        wall_before, before = _timed(cfg, root / "before", None)
    finally:
        _local.PROBS_MEMO_SIZE = size
    key = ["condition", "temperature", "query_id", "perm_index", "sample_index"]
    cols = [*key, "selected_position", "choice_probs"]
    same = before[cols].sort_values(key).reset_index(drop=True).equals(
        after[cols].sort_values(key).reset_index(drop=True))
    print(f"before (no memo): {wall_before:7.1f} s  {n / wall_before:6.3f} evaluations/s")
    print(f"after  (memo)   : {wall_after:7.1f} s  {n / wall_after:6.3f} evaluations/s  "
          f"({wall_before / wall_after:.2f}x)")
    print(f"identical answers and probabilities: {same}")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
