"""Benchmark: render the report of a large positional sweep and a nine-model fairness run.

Positional: 8 models x k in {5, 10, 15, 20} x T in {0, 0.2, 0.4, 0.6}, plus the
decoding-only noise-floor condition at T > 0 (224 groups), with a simulation study.
Fairness: 9 models, two groups, N in {5, 10, 15}, a 5,000-item long tail.

Run: ``PYTHONPATH=src:tests/report python benchmarks/bench_report.py``
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "report"))

from report_synth import (  # noqa: E402
    MODELS,
    fairness_results,
    long_tail_frame,
    positional_run,
    simulation_rows,
)

from recaudit.report import build_report  # noqa: E402


def _time(fn, repeat: int = 3) -> tuple[float, float]:  # noqa: ANN001
    """Median wall and CPU seconds of ``fn()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    """Print one line per case: groups, page size, median wall and CPU time."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "positional"
        folder.mkdir()
        results, frame = positional_run(
            models=MODELS,
            ks=(5, 10, 15, 20),
            temperatures=(0.0, 0.2, 0.4, 0.6),
            n_queries=20,
            perms=2,
        )
        (folder / "analysis.json").write_text(json.dumps(results))
        frame.to_parquet(folder / "evaluations.parquet", index=False)
        (folder / "simulation.json").write_text(json.dumps(simulation_rows()))
        fair = Path(tmp) / "fairness"
        fair.mkdir()
        (fair / "results.json").write_text(json.dumps(fairness_results()))
        long_tail_frame(n_items=5000).to_parquet(fair / "long_tail.parquet", index=False)
        for name, source, groups in (("positional", folder, len(results)), ("fairness", fair, 9)):
            report = build_report(source)
            wall, cpu = _time(lambda s=source: build_report(s))
            print(
                f"{name:<11} groups={groups:<4} html={len(report.html) / 1e6:.2f} MB "
                f"sidecar={len(report.sidecar) / 1e6:.2f} MB wall={wall:.2f} s cpu={cpu:.2f} s"
            )


if __name__ == "__main__":
    main()
