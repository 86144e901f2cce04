"""The Ray executor against the local executor, in one process, on this machine.

1. CPU-bound: the demo audit's model (packaged SmolLM2-135M, constrained answers at
   T=0, one prompt pass per evaluation, ``n_threads=1``) on ``--queries`` x ``--perms``
   evaluations of the Myntra catalog. Local executor (one process, one core) vs Ray
   executor on a local 2-CPU cluster (2 actors, one model each). Reported: whole
   ``run_audit`` wall time (the model load included: once in the local process, once
   per actor in parallel on Ray) and the runner phase (``summary.elapsed_s``: the Ray
   figure includes actor start and model load, the local one does not), and the
   speed-up ratios local / ray. The Ray cluster start (``ray.init``) is timed
   separately: a long-lived cluster pays it once. Both tables must be identical
   (deterministic backend).
2. HTTP: an ``openai`` model against a loopback chat-completions server with a fixed
   latency (a separate process, from ``bench_runner.py``) at ``concurrency`` 8:
   the per-evaluation overhead of the Ray executor, ``(ray wall - local wall) / N``,
   and both executors' fraction of the server's limit ``concurrency / latency``.

The machine is shared: the load average is printed before and after.

Usage::

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src python benchmarks/bench_ray.py \
        [--queries 5] [--perms 8] [--http-calls 400] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pandas as pd  # noqa: E402

from recaudit.cli.positional import _demo_config  # noqa: E402
from recaudit.llm._audit import run_audit  # noqa: E402
from recaudit.llm._config import ModelConfig, OpenAIParams  # noqa: E402
from recaudit.llm._retrieval import Retriever  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / ".." / "shared" / "data" / "myntra" / "myntra_products_catalog.csv"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Clock:
    """A RunProgress that timestamps every record count (steady-state rate)."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, int]] = []
        self.t0 = 0.0

    def start(self, total: int) -> None:
        self.t0 = time.perf_counter()

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        self.marks.append((time.perf_counter(), done))

    def first_s(self) -> float:
        """Seconds from the runner's start to the first record (start-up cost)."""
        return self.marks[0][0] - self.t0

    def steady(self) -> float:
        """Records per second between the first and the last record."""
        (t1, n1), (t2, n2) = self.marks[0], self.marks[-1]
        return (n2 - n1) / (t2 - t1) if t2 > t1 else float("nan")


def _timed_audit(cfg, out: Path, retriever: Retriever, executor: str):
    clock = Clock()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    res = run_audit(cfg, out_dir=out, retriever=retriever, executor=executor, progress=clock)
    return Timed(res, clock, time.process_time() - cpu0), time.perf_counter() - t0


@dataclass(frozen=True)
class Timed:
    """An AuditResult with its record timestamps and the driver's CPU seconds."""

    res: Any
    clock: Clock
    driver_cpu_s: float

    @property
    def summary(self) -> Any:
        return self.res.summary

    @property
    def evaluations_path(self) -> Path:
        return Path(self.res.evaluations_path)


def _table(res) -> pd.DataFrame:
    return pd.read_parquet(res.evaluations_path).drop(columns="latency_s")


def bench_local_model(tmp: Path, retriever: Retriever, queries: int, perms: int) -> None:
    cfg = _demo_config(CATALOG.resolve(), queries, perms, 5)
    n = queries * perms
    print(f"\n== CPU-bound: constrained SmolLM2-135M, {n} evaluations, load {_load()}")
    local, t_local = _timed_audit(cfg, tmp / "local", retriever, "local")
    print(f"local : wall {t_local:6.1f} s   runner {local.summary.elapsed_s:6.1f} s   "
          f"steady {local.clock.steady():.3f} eval/s   "
          f"driver CPU {local.driver_cpu_s:.0f} s; load {_load()}")
    dist, t_ray = _timed_audit(cfg, tmp / "ray", retriever, "ray")
    print(f"ray   : wall {t_ray:6.1f} s   runner {dist.summary.elapsed_s:6.1f} s   "
          f"steady {dist.clock.steady():.3f} eval/s   first record after "
          f"{dist.clock.first_s():.0f} s (actor start + model load); load {_load()}")
    same = _table(local).equals(_table(dist))
    print(f"speed-up local/ray: wall {t_local / t_ray:.2f}x, runner "
          f"{local.summary.elapsed_s / dist.summary.elapsed_s:.2f}x, steady state "
          f"{dist.clock.steady() / local.clock.steady():.2f}x; identical tables: {same}")


def _serve(latency_ms: float) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "bench_runner.py"),
                               "--serve", str(port), "--latency-ms", str(latency_ms)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return server, f"http://127.0.0.1:{port}/v1"


def bench_http(tmp: Path, retriever: Retriever, calls: int, latency_ms: float) -> None:
    perms = 20
    queries = max(1, calls // perms)
    n = queries * perms
    server, url = _serve(latency_ms)
    try:
        base = _demo_config(CATALOG.resolve(), queries, perms, 5)
        model = ModelConfig(name="http", backend="openai",
                            params=OpenAIParams(base_url=url, model="fake", concurrency=8,
                                                max_retries=1))
        cfg = replace(base, models=(model,), concurrency=8,
                      prompt=replace(base.prompt, constrained=False))
        limit = 8 / (latency_ms / 1000)
        print(f"\n== HTTP: {n} evaluations, server latency {latency_ms:.0f} ms, "
              f"concurrency 8 (limit {limit:.0f}/s), load {_load()}")
        local, t_local = _timed_audit(cfg, tmp / "http-local", retriever, "local")
        dist, t_ray = _timed_audit(cfg, tmp / "http-ray", retriever, "ray")
        for name, res in (("local", local), ("ray", dist)):
            rate = n / res.summary.elapsed_s
            print(f"{name:6}: runner {res.summary.elapsed_s:6.2f} s  {rate:6.1f} eval/s "
                  f"({rate / limit:.2f} of the limit)")
        over = (dist.summary.elapsed_s - local.summary.elapsed_s) / n * 1000
        steady = (1 / dist.clock.steady() - 1 / local.clock.steady()) * 1000
        print(f"Ray start-up (runner start -> first record): {dist.clock.first_s():.1f} s "
              f"(local {local.clock.first_s():.2f} s)")
        print(f"Ray overhead per evaluation: steady state {steady:.2f} ms "
              f"(local {local.clock.steady():.1f}/s, ray {dist.clock.steady():.1f}/s); "
              f"runner phase incl. start-up {over:.2f} ms; whole run "
              f"{(t_ray - t_local) / n * 1000:.2f} ms; load {_load()}")
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--perms", type=int, default=8)
    ap.add_argument("--http-calls", type=int, default=400)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--skip-model", action="store_true")
    args = ap.parse_args()
    if not CATALOG.is_file():
        sys.exit(f"the Myntra catalog is not at {CATALOG}")
    import ray

    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=200 * 1024**2)
    print(f"ray.init (local 2-CPU cluster): {time.perf_counter() - t0:.1f} s")
    retriever = Retriever()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if not args.skip_model:
                bench_local_model(Path(tmp), retriever, args.queries, args.perms)
            bench_http(Path(tmp), retriever, args.http_calls, args.latency_ms)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
