"""The positional run a joint audit makes: inputs written from the MovieLens testbed and
the audit config (one model, constrained answers at temperature 0, sampled orders)."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

from ..llm import MovieLensTestbed
from ._options import JointOptions

__all__ = ["run_config"]

#: The MovieLens prompt (liked history as the request, numbered candidates).
PROMPT = importlib.resources.files("recaudit.llm").joinpath("configs", "movielens_prompt.toml")


def _write_inputs(testbed: MovieLensTestbed, inputs: Path) -> tuple[Path, Path]:
    """The catalog (CSV) and the requests (JSONL) the run reads, in ``inputs``."""
    inputs.mkdir(parents=True, exist_ok=True)
    catalog, queries = inputs / "catalog.csv", inputs / "queries.jsonl"
    testbed.catalog.items[["item_id", "title", "description", "category"]].to_csv(
        catalog, index=False)
    with queries.open("w", encoding="utf-8") as fh:
        for q in testbed.queries:
            fh.write(json.dumps({"query_id": q.query_id, "text": q.text}) + "\n")
    return catalog, queries


def run_config(testbed: MovieLensTestbed, options: JointOptions, inputs: Path) -> dict[str, Any]:
    """The audit config (as :func:`recaudit.audit.parse_audit_config` takes it) of the joint
    audit's positional run, after writing its inputs into ``inputs``."""
    catalog, queries = _write_inputs(testbed, inputs)
    return {
        "seed": options.seed, "concurrency": 8, "temperatures": [0.0],
        "conditions": ["permutation"],
        "catalog": {"path": str(catalog),
                    "columns": {"id": "item_id", "title": "title",
                                "description": "description", "category": "category"}},
        "queries": {"file": str(queries)},
        "retrieval": {"k": [options.k]},
        "prompt": {"template": str(PROMPT), "identifiers": "positional",
                   "max_tokens": 40, "constrained": True},
        "design": {"kind": "sampled", "n_perms": options.orders, "samples_per_order": 1},
        "models": [{"name": Path(options.model).stem if options.model.endswith(".gguf")
                    else options.model, "backend": "local", "model": options.model,
                    "n_threads": options.n_threads, "batch_size": 4}],
    }
