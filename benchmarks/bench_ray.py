"""The Ray executor against the local executor, in one process, on this machine.

1. CPU-bound: the demo audit's model (packaged SmolLM2-135M, constrained answers at
   T=0, one prompt pass per evaluation, ``n_threads=1``) on ``--perms`` orders of as
   many queries as each size in ``--sizes`` needs (size = queries x perms evaluations
   of the Myntra catalog). Per size: local executor (one process) vs Ray executor on
   a local loopback 2-CPU cluster (2 actors, one model each), whole ``run_audit`` wall
   time (catalog, plan, model load(s), evaluations; the retriever is shared and warm)
   and the ratio local / ray; then, for the Ray run, each actor's start-up phases
   (from the pool's request to Ray: worker process, recaudit imported and config
   unpickled, torch + transformers imported, model loaded) and each actor's busy wall
   and CPU per evaluation; for the local run, the process CPU and the model thread's
   CPU per evaluation (``time.thread_time`` inside ``complete_batch``) and
   ``torch.get_num_threads()`` there. Finally a least-squares line ``wall = a + b N``
   per executor over the sizes: ``a`` is the fixed cost, ``b_local / b_ray`` the
   asymptotic speed-up. Both tables must be identical (deterministic backend).
2. HTTP: an ``openai`` model against a loopback chat-completions server with a fixed
   latency (a separate process, from ``bench_runner.py``) at ``concurrency`` 8:
   the per-evaluation overhead of the Ray executor, ``(ray wall - local wall) / N``,
   and both executors' fraction of the server's limit ``concurrency / latency``.

The machine is shared: the load average is printed before and after each run. The
Ray cluster start (``ray.init``) is timed separately: a long-lived cluster pays it once.

Usage::

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src python benchmarks/bench_ray.py \
        [--sizes 80,160] [--perms 8] [--http-calls 400] [--latency-ms 50] \
        [--skip-model] [--skip-http]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import bench_runner  # noqa: E402 -- this folder (the script's) is on sys.path
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import recaudit.audit._ray_executor as audit_mod  # noqa: E402
from recaudit._ray_session import init_local  # noqa: E402
from recaudit.audit import RunOptions
from recaudit.audit import demo_config as _demo_config  # noqa: E402
from recaudit.audit._ray_executor import RayPool  # noqa: E402
from recaudit.audit._run import run_audit  # noqa: E402
from recaudit.llm import EndpointConfig, OpenAIParams  # noqa: E402
from recaudit.llm._retrieval import Retriever  # noqa: E402
from recaudit.llm.backends._local import LocalBackend  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / ".." / "shared" / "data" / "myntra" / "myntra_products_catalog.csv"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Clock:
    """A RunProgress that timestamps every record count and the process CPU."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, int]] = []
        self.t0 = 0.0
        self.cpu0 = self.cpu1 = 0.0

    def start(self, total: int) -> None:
        self.t0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def update(self, *, done: int, discarded: int, failed: int, retries: int) -> None:
        self.marks.append((time.perf_counter(), done))
        self.cpu1 = time.process_time()

    def first_s(self) -> float:
        """Seconds from the runner's start to the first record."""
        return self.marks[0][0] - self.t0

    def steady(self) -> float:
        """Records per second between the first and the last record (HTTP part)."""
        (t1, n1), (t2, n2) = self.marks[0], self.marks[-1]
        return (n2 - n1) / (t2 - t1) if t2 > t1 else float("nan")

    def runner_cpu_s(self) -> float:
        """This process's CPU seconds from the runner's start to its last record."""
        return self.cpu1 - self.cpu0


class RecordingPool(RayPool):
    """The executor's RayPool, keeping the actors' start-up and stats before closing."""

    last: RecordingPool | None = None

    def close(self) -> None:
        if self.actors:
            self.startup_info = self.startup(timeout=60)
            self.stats_info = self.stats()
        RecordingPool.last = self
        super().close()


class ModelThread:
    """Wraps LocalBackend.complete_batch in this process: the model thread's CPU and
    torch's thread count there."""

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self.wall_s = 0.0
        self.threads: set[int] = set()
        self._orig = LocalBackend.complete_batch

    def __enter__(self) -> ModelThread:
        orig, me = self._orig, self

        def complete_batch(backend, requests):
            import torch

            c0, t0 = time.thread_time(), time.perf_counter()
            try:
                return orig(backend, requests)
            finally:
                me.cpu_s += time.thread_time() - c0
                me.wall_s += time.perf_counter() - t0
                me.threads.add(torch.get_num_threads())

        LocalBackend.complete_batch = complete_batch  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        LocalBackend.complete_batch = self._orig  # type: ignore[method-assign]


def _timed_audit(cfg, out: Path, retriever: Retriever, executor: str):
    clock = Clock()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    res = run_audit(cfg, out_dir=out, retriever=retriever,
                    run=RunOptions(executor=executor), progress=clock)
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


def _model_s(res) -> float:
    """Seconds inside the model summed over records (latency_s = batch wall / size)."""
    return float(pd.read_parquet(res.evaluations_path)["latency_s"].sum())


def bench_local_model(tmp: Path, retriever: Retriever, n: int, perms: int
                      ) -> tuple[float, float]:
    queries = max(1, n // perms)
    n = queries * perms
    cfg = _demo_config(CATALOG.resolve(), queries, perms, 5)
    print(f"\n== CPU-bound: constrained SmolLM2-135M, {n} evaluations "
          f"({queries} queries x {perms} orders), load {_load()}", flush=True)
    with ModelThread() as thread:
        local, t_local = _timed_audit(cfg, tmp / f"local-{n}", retriever, "local")
    print(f"local : wall {t_local:6.1f} s   runner {local.summary.elapsed_s:6.1f} s "
          f"({n / local.summary.elapsed_s:.3f} eval/s)   per evaluation: model "
          f"{_model_s(local) / n:.3f} s wall, model thread CPU {thread.cpu_s / n:.3f} s, "
          f"process CPU {local.clock.runner_cpu_s() / n:.3f} s; torch threads in the "
          f"model thread {sorted(thread.threads)}; load {_load()}", flush=True)
    audit_mod.RayPool = RecordingPool  # type: ignore[misc]
    try:
        dist, t_ray = _timed_audit(cfg, tmp / f"ray-{n}", retriever, "ray")
    finally:
        audit_mod.RayPool = RayPool  # type: ignore[misc]
    pool = RecordingPool.last
    assert pool is not None
    print(f"ray   : wall {t_ray:6.1f} s   runner {dist.summary.elapsed_s:6.1f} s   "
          f"first record after {dist.clock.first_s():.0f} s; per evaluation: model "
          f"{_model_s(dist) / n:.3f} s wall (summed over actors); driver CPU in the "
          f"runner {dist.clock.runner_cpu_s():.1f} s; load {_load()}", flush=True)
    for st in pool.startup_info:
        spawn = "n/a" if st.process_start is None else f"{st.process_start - pool.created:+.1f}"
        loads = ", ".join(f"{m} {s:.1f} s cache={'hit' if hit else 'MISS'}"
                          for m, s, hit in st.loads)
        print(f"  actor {st.pid}: since the pool's request: process {spawn} s, "
              f"__init__ {st.init - pool.created:.1f} s, torch+transformers imported "
              f"{st.imports_done - pool.created:.1f} s, ready {st.ready - pool.created:.1f} s "
              f"({loads}); CPU at ready {st.cpu_s:.1f} s")
    for a in pool.stats_info:
        per = a.evaluations or 1
        print(f"  actor {a.pid}: {a.evaluations} evaluations in {a.batches} batches, "
              f"busy {a.busy_s:.1f} s = {a.busy_s / per:.3f} s wall and "
              f"{a.busy_cpu_s / per:.3f} s CPU per evaluation; torch threads {a.torch_threads}")
    same = _table(local).equals(_table(dist))
    print(f"speed-up local/ray: wall {t_local / t_ray:.2f}x, runner "
          f"{local.summary.elapsed_s / dist.summary.elapsed_s:.2f}x; identical tables: {same}",
          flush=True)
    return t_local, t_ray


def _fit(sizes: list[int], local: list[float], ray: list[float]) -> None:
    if len(sizes) < 2:
        return
    bl, al = np.polyfit(sizes, local, 1)
    br, ar = np.polyfit(sizes, ray, 1)
    print(f"\n== wall = a + b N over N = {sizes}: local a {al:.1f} s, b {bl:.3f} s/eval; "
          f"ray a {ar:.1f} s, b {br:.3f} s/eval; asymptotic speed-up b_local/b_ray "
          f"{bl / br:.2f}x; fixed cost of Ray over local {ar - al:+.1f} s")
def bench_http(tmp: Path, retriever: Retriever, calls: int, latency_ms: float) -> None:
    perms = 20
    queries = max(1, calls // perms)
    n = queries * perms
    server, url = bench_runner.start_server(latency_ms)
    try:
        base = _demo_config(CATALOG.resolve(), queries, perms, 5)
        model = EndpointConfig(name="http", backend="openai",
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
    ap.add_argument("--sizes", default="80,160",
                    help="comma-separated evaluation counts (multiples of --perms)")
    ap.add_argument("--perms", type=int, default=8)
    ap.add_argument("--http-calls", type=int, default=400)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--skip-model", action="store_true")
    ap.add_argument("--skip-http", action="store_true")
    args = ap.parse_args()
    if not CATALOG.is_file():
        sys.exit(f"the Myntra catalog is not at {CATALOG}")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    t0 = time.perf_counter()
    ray = init_local(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     object_store_memory=200 * 1024**2)
    print(f"ray.init (local 2-CPU loopback cluster): {time.perf_counter() - t0:.1f} s; "
          f"load {_load()}")
    retriever = Retriever()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if not args.skip_model:
                walls = [bench_local_model(Path(tmp), retriever, n, args.perms)
                         for n in sizes]
                _fit(sizes, [w[0] for w in walls], [w[1] for w in walls])
            if not args.skip_http:
                bench_http(Path(tmp), retriever, args.http_calls, args.latency_ms)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
