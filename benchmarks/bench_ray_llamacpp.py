"""The Ray executor with one in-process llama.cpp engine per worker: 1 vs 2 workers.

The demo audit's model (packaged SmolLM2-135M GGUF on the llama.cpp engine,
constrained answers at T=0) on ``--queries`` x ``--perms`` evaluations of the Myntra
catalog, run three ways in this process with the same warm retriever:

- ``local``: the local executor, one engine with ``--threads`` threads (the demo's
  setting: 2 threads, 4 slots);
- ``ray-1``: a loopback Ray cluster with 1 CPU: one actor, one engine of 1 thread;
- ``ray-2``: a loopback Ray cluster with 2 CPUs: two actors, one engine of 1 thread each.

For each: whole ``run_audit`` wall (catalog, plan, actor start-up, model loads,
evaluations) and the runner's evaluations per second; the ratio ray-2 / ray-1 is the
scale-out from a second worker, ray-2 / local the cost of processes over threads on
one machine. The load average is printed beside each run (the machine is shared).

Usage::

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src python benchmarks/bench_ray_llamacpp.py \
        [--queries 10] [--perms 8] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from recaudit._ray_session import init_local  # noqa: E402
from recaudit.audit import (
    RunOptions,
    demo_config,  # noqa: E402
)
from recaudit.audit._run import run_audit  # noqa: E402
from recaudit.llm._retrieval import Retriever  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / ".." / "shared" / "data" / "myntra" / "myntra_products_catalog.csv"
RESULTS = ROOT / "benchmarks" / "results" / "ray_llamacpp.jsonl"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _with_threads(cfg, threads: int, slots: int):
    models = tuple(replace(m, params=replace(m.params, n_threads=threads, batch_size=slots))
                   for m in cfg.models)
    return replace(cfg, models=models)


def _timed(cfg, out: Path, retriever: Retriever, executor: str) -> dict[str, float]:
    t0 = time.perf_counter()
    res = run_audit(cfg, out_dir=out, retriever=retriever, run=RunOptions(executor=executor))
    wall = time.perf_counter() - t0
    n = res.ran_now
    return {"wall_s": wall, "runner_s": res.summary.elapsed_s, "evaluations": n,
            "eval_per_s": n / res.summary.elapsed_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--perms", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    base = demo_config(CATALOG.resolve(), args.queries, args.perms, 5)
    retriever = Retriever()  # shared: the catalog is embedded once
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"load before: {_load()}", flush=True)
        row = {"run": "local", "threads": args.threads, "slots": 4,
               **_timed(_with_threads(base, args.threads, 4), Path(tmp) / "local", retriever,
                        "local"), "load": _load()}
        rows.append(row)
        print(row, flush=True)
        for n_cpus in (1, 2):
            ray = init_local(num_cpus=n_cpus, include_dashboard=False)
            try:
                row = {"run": f"ray-{n_cpus}", "threads": 1, "slots": 2,
                       **_timed(_with_threads(base, 1, 2), Path(tmp) / f"ray{n_cpus}",
                                retriever, "ray"), "load": _load()}
            finally:
                ray.shutdown()
            rows.append(row)
            print(row, flush=True)
    by = {r["run"]: r for r in rows}
    print(f"ray-2 / ray-1 evaluations per second: "
          f"{by['ray-2']['eval_per_s'] / by['ray-1']['eval_per_s']:.2f}x; "
          f"ray-2 / local: {by['ray-2']['eval_per_s'] / by['local']['eval_per_s']:.2f}x")
    with RESULTS.open("a", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({**r, "queries": args.queries, "perms": args.perms}) + "\n")


if __name__ == "__main__":
    main()
