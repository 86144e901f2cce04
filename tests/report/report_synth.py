"""Realistic synthetic inputs for the report: the shapes of the two studies' outputs.

Positional groups follow the spec's generative model (section 8): each evaluation
picks the first prompt position with probability ``p_bias``, otherwise a candidate by
relevance, so the position distribution, the selection-rate matrix, PB, sPB and the
test outcomes hang together. Fairness results follow the inter-bias definitions
(NRD = (RD + 1) / 2, IB = sqrt(NRD (1 - IC))). Used to write the committed fixtures
(``python tests/report/synth.py``) and by the benchmark.
"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit._stats import holm

# Imported by the report tests (a uniquely named module: other test folders have a
# conftest too, so `from conftest import ...` would be ambiguous).
FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT_PAYLOAD = '<script>window.__pwned=1;document.title="pwned"</script>'
IMG_PAYLOAD = "<img src=x onerror=\"window.__pwned=2;document.title='pwned'\">"
PAYLOADS = (SCRIPT_PAYLOAD, IMG_PAYLOAD)

__all__ = [
    "MODELS",
    "SAMPLED_WARNING",
    "fairness_results",
    "fairness_study",
    "popularity_bias",
    "long_tail_frame",
    "positional_run",
    "simulation_rows",
    "write_fairness_run",
    "write_positional_run",
]

MODELS = {
    "llama-3.1-8b-instruct": 0.18,
    "mistral-7b-instruct": 0.32,
    "qwen2.5-7b-instruct": 0.06,
    "gpt-4o-mini": 0.01,
    "gemma-2-9b-it": 0.12,
    "phi-3.5-mini": 0.25,
    "smollm2-1.7b": 0.45,
    "olmo-2-7b": 0.09,
}
REASONS = ("no_json", "invalid_identifier", "several_identifiers")
GOOD = (
    '{{"article_number": {p}, "article_title": "Wireless earbuds, model {p}", '
    '"recommendation": "Best match for the request."}}'
)
BAD = (  # one per reason, in the order of REASONS
    "Sorry, none of these products match your request.",
    '{"article_number": 17, "article_title": "Unknown"}',
    "I would recommend both option 2 and option 4, depending on your budget.",
)


def _interval(value: float, se: float, lo: float = 0.0, hi: float = 1.0) -> dict[str, float]:
    return {
        "value": round(value, 6),
        "ci_low": round(max(lo, value - 1.96 * se), 6),
        "ci_high": round(min(hi, value + 1.96 * se), 6),
    }


def _group(
    rng: np.random.Generator,
    *,
    model: str,
    p_bias: float,
    k: int,
    temperature: float,
    condition: str,
    n_queries: int,
    perms: int,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """One analysed group and its evaluations table."""
    if condition == "decoding":
        p_bias = 0.0
    total = n_queries * perms
    discarded = rng.random(total) < 0.02 + 0.05 * temperature + (0.04 if "smollm" in model else 0)
    relevance = 1 / np.arange(1, k + 1)
    relevance /= relevance.sum()
    orders = np.array([rng.permutation(k) for _ in range(total)])  # orders[e, p] = index shown at p
    first = rng.random(total) < p_bias
    chosen_index = np.where(first, orders[:, 0], rng.choice(k, size=total, p=relevance))
    position = np.argmax(orders == chosen_index[:, None], axis=1)
    valid = ~discarded
    q = np.bincount(position[valid], minlength=k) / valid.sum()
    n_valid = int(valid.sum())
    se = np.sqrt(q * (1 - q) / max(n_valid / perms, 1) / 2)
    pb = 0.5 * np.abs(q - 1 / k).sum()
    pb_se = 0.18 / math.sqrt(n_queries)
    lower = max(0.0, pb - 0.012 - 2.2 * pb_se)
    shown = np.zeros((k, k))
    picked = np.zeros((k, k))
    for p in range(k):
        np.add.at(shown[:, p], orders[valid, p], 1)
    np.add.at(picked, (chosen_index[valid], position[valid]), 1)
    rates = np.divide(picked, shown, out=np.full((k, k), np.nan), where=shown > 0)
    z = pb / (pb_se + 1e-9)
    unbp_p = float(
        min(1.0, math.exp(-max(0.0, z - 1.5)) if lower > 0 else 0.3 + 0.7 * rng.random())
    )
    icm_p = float(min(1.0, math.exp(-max(0.0, 0.5 * z - 1.0)) * (0.5 + rng.random())))
    noise = 0.03 + 0.25 * temperature
    ps = min(0.95, 0.6 * p_bias + noise + 0.08 * (k / 5))
    spb = min(0.9, 0.45 * p_bias + 0.02 + 0.1 * temperature)
    shares = [_interval(float(v), float(s)) for v, s in zip(q, se, strict=True)]
    result = {
        "model": model,
        "k": k,
        "temperature": temperature,
        "condition": condition,
        "n_queries": n_queries,
        "n_evaluations": n_valid,
        "n_discarded": int(discarded.sum()),
        "pob_icm": {
            "statistic": round(float(k * perms * (1 + z)), 3),
            "pvalue": round(icm_p, 5),
            "pvalue_asymptotic": round(icm_p * 0.6, 5),
        },
        "pob_unbp": {"L": round(lower, 6), "pvalue": round(unbp_p, 5), "reject": bool(lower > 0)},
        "ps": _interval(ps, 0.02),
        "pb": _interval(float(pb), pb_se),
        "spb": _interval(spb, 0.015),
        "position_distribution": [s["value"] for s in shares],
        "position_distribution_ci_low": [s["ci_low"] for s in shares],
        "position_distribution_ci_high": [s["ci_high"] for s in shares],
        "selection_rate_matrix": [
            [None if math.isnan(x) else round(float(x), 5) for x in row] for row in rates
        ],
    }
    reasons = np.where(discarded, rng.choice(REASONS, size=total), None)
    raw = [
        BAD[REASONS.index(r)] if r is not None else GOOD.format(p=int(p) + 1)
        for r, p in zip(reasons, position, strict=True)
    ]
    frame = pd.DataFrame(
        {
            "query_id": np.repeat(np.arange(n_queries), perms),
            "order": [" ".join(map(str, o + 1)) for o in orders],
            "selected_position": np.where(discarded, -1, position + 1),
            "model": model,
            "k": k,
            "temperature": temperature,
            "condition": condition,
            "raw_response": raw,
            "discard_reason": reasons,
        }
    )
    return result, frame


def positional_run(
    *,
    models: dict[str, float],
    ks: tuple[int, ...],
    temperatures: tuple[float, ...],
    n_queries: int,
    perms: int,
    decoding: bool = True,
    seed: int = 7,
) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """Analysed groups (with Holm across groups) and the evaluations table."""
    rng = np.random.default_rng(seed)
    results, frames = [], []
    for model, p_bias in models.items():
        for k in ks:
            for t in temperatures:
                conditions = ["both"] + (["decoding"] if decoding and t > 0 else [])
                for condition in conditions:
                    r, f = _group(
                        rng,
                        model=model,
                        p_bias=p_bias,
                        k=k,
                        temperature=t,
                        condition=condition,
                        n_queries=n_queries,
                        perms=perms,
                    )
                    results.append(r)
                    frames.append(f)
    for test in ("pob_icm", "pob_unbp"):
        adjusted = holm([r[test]["pvalue"] for r in results])
        for r, p in zip(results, adjusted, strict=True):
            r[test]["pvalue_holm"] = round(float(p), 5)
    return results, pd.concat(frames, ignore_index=True)


def simulation_rows(
    *, ks: tuple[int, ...] = (5, 10, 15, 20), seed: int = 3
) -> list[dict[str, Any]]:
    """Power/type-I error rows shaped like ``recaudit positional simulate --json``."""
    rng = np.random.default_rng(seed)
    rows = []
    for test, efficiency in (("pob_icm", 0.35), ("pob_unbp", 1.0)):
        for k in ks:
            for queries in (100, 400):
                for p_bias in (0.0, 0.02, 0.05, 0.1, 0.2):
                    signal = efficiency * p_bias * math.sqrt(queries) * (1 + k / 20) * 1.6
                    rate = (
                        0.05 + 0.95 / (1 + math.exp(-3 * (signal - 1.2)))
                        if p_bias
                        else 0.04 + 0.02 * rng.random()
                    )
                    rate = min(rate, 1.0)
                    se = math.sqrt(rate * (1 - rate) / 500)
                    rows.append(
                        {
                            "test": test,
                            "k": k,
                            "queries": queries,
                            "perms": 20,
                            "p_bias": p_bias,
                            "reps": 500,
                            "rejection_rate": round(rate, 4),
                            "ci_low": round(max(0, rate - 1.96 * se), 4),
                            "ci_high": round(min(1, rate + 1.96 * se), 4),
                        }
                    )
    return rows


def write_positional_run(folder: Path, **kw: Any) -> list[dict[str, Any]]:
    """Write analysis.json, evaluations.parquet, simulation.json, config.resolved.toml."""
    folder.mkdir(parents=True, exist_ok=True)
    results, frame = positional_run(**kw)
    (folder / "analysis.json").write_text(json.dumps(results, indent=1))
    frame.to_parquet(folder / "evaluations.parquet", index=False)
    (folder / "simulation.json").write_text(json.dumps(simulation_rows(ks=kw["ks"]), indent=1))
    ks = ", ".join(map(str, kw["ks"]))
    temps = ", ".join(map(str, kw["temperatures"]))
    (folder / "config.resolved.toml").write_text(
        f"seed = 20261129\n\n[design]\nks = [{ks}]\ntemperatures = [{temps}]\n"
        f"permutations = {kw['perms']}\nn_queries = {kw['n_queries']}\n"
        'conditions = ["both", "decoding"]\n\n[backend]\nkind = "openai"\n'
        'base_url = "http://localhost:8080/v1"\n'
    )
    return results


# ----------------------------------------------------------------------- fairness
FAIRNESS_MODELS = {  # name: (accuracy level, popularity bias, group gap)
    "ItemKNN": (0.20, 0.55, 0.02),
    "MF": (0.26, 0.70, 0.05),
    "DMF": (0.22, 0.60, 0.01),
    "NeuMF": (0.25, 0.72, 0.06),
    "NNCF": (0.24, 0.68, 0.03),
    "NGCF": (0.28, 0.80, 0.07),
    "SGL": (0.30, 0.62, 0.04),
    "LightGCN": (0.31, 0.78, 0.05),
    "DGCF": (0.29, 0.75, 0.02),
}


def fairness_results(
    *, models: dict[str, tuple[float, float, float]] = FAIRNESS_MODELS, seed: int = 11
) -> dict[str, Any]:
    """``{model: fairness evaluate output}`` with two groups, N = 5, 10, 15."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (acc, pop, gap) in models.items():
        groups: dict[str, dict[str, Any]] = {"M": {"n_users": 1412}, "F": {"n_users": 531}}
        overall: dict[str, Any] = {}
        rd, nrd, ib = {}, {}, {}
        cov, avg_pop = {}, {}
        for n in (5, 10, 15):
            coverage = min(0.9, (1 - pop) * 0.35 * (1 + n / 15) + 0.02 * rng.random())
            cov[f"item_coverage@{n}"] = round(coverage, 5)
            avg_pop[f"avg_popularity@{n}"] = _interval(420 * pop * (1.1 - n / 60), 6.0, 0, 1e9)
            for metric, scale in (
                ("ndcg", 1.0),
                ("precision", 0.45),
                ("recall", 0.9),
                ("hit", 2.2),
                ("mrr", 0.85),
            ):
                base = min(0.95, acc * scale * (1 + n / 30) + 0.01 * rng.standard_normal())
                g = gap * (0.5 + rng.random()) * (1.4 if metric in ("precision", "hit") else 1.0)
                m_val, f_val = base * (1 + g / 2), base * (1 - g / 2)
                groups["M"][f"{metric}@{n}"] = _interval(m_val, 0.012)
                groups["F"][f"{metric}@{n}"] = _interval(f_val, 0.02)
                overall[f"{metric}@{n}"] = _interval(base, 0.01)
                r = (m_val - f_val) / (m_val + f_val)
                pvalue = round(float(min(1.0, math.exp(-abs(r) * 400) * (0.6 + rng.random()))), 6)
                rd[f"{metric}@{n}"] = {**_interval(r, 0.006, -1, 1), "pvalue": pvalue}
                nrd[f"{metric}@{n}"] = _interval((r + 1) / 2, 0.015)
                ib[f"{metric}@{n}"] = _interval(math.sqrt((r + 1) / 2 * (1 - coverage)), 0.012)
        out[name] = {
            "groups": groups,
            "overall": overall,
            **cov,
            **avg_pop,
            "rd": rd,
            "nrd": nrd,
            "ib": ib,
            "protected_group": "F",
            "alpha": 0.05,
        }
    keys = [(m, k) for m in out for k in out[m]["rd"]]
    adjusted = holm([out[m]["rd"][k]["pvalue"] for m, k in keys])
    for (m, k), p in zip(keys, adjusted, strict=True):
        out[m]["rd"][k]["pvalue_holm"] = round(float(p), 5)
    return out


def long_tail_frame(*, n_items: int = 1200, seed: int = 5) -> pd.DataFrame:
    """Interactions per item of a long-tailed dataset, with titles."""
    rng = np.random.default_rng(seed)
    counts = np.maximum(
        1, (2500 / np.arange(1, n_items + 1) ** 0.95 * rng.lognormal(0, 0.25, n_items))
    ).astype(int)
    return pd.DataFrame(
        {
            "item_id": [f"i{j:05d}" for j in range(n_items)],
            "title": [f"Track {j}" for j in range(n_items)],
            "n_interactions": counts,
        }
    )


# ------------------------------------------------- popularity bias and protocols
POPULARITY_GROUPS = {"niche": 0.2, "diverse": 0.6, "blockbuster": 0.2}  # share of users
SAMPLED_WARNING = (
    "protocol uni100 is sampled ranking: RD, NRD and IB of sampled metrics are not "
    "comparable with full ranking"
)


def _popularity_metrics(pop: float, lean: float, rng: np.random.Generator) -> dict[str, Any]:
    """``<metric>@<N>`` of the popularity-bias section; ``lean`` > 0: more popular lists."""
    out = {}
    for n in (5, 10, 15):
        aplt = max(0.01, (1 - pop) * 0.5 - 0.1 * lean + 0.01 * rng.standard_normal())
        out[f"arp@{n}"] = _interval(300 * pop * (1 + lean) * (1.1 - n / 60), 4.0, 0, 1e9)
        out[f"aplt@{n}"] = _interval(aplt, 0.01)
        out[f"aclt@{n}"] = _interval(aplt * n, 0.1, 0, n)
        out[f"poprsp@{n}"] = _interval(min(0.99, pop + 0.1 * lean), 0.01)
        out[f"popreo@{n}"] = _interval(0.3 * pop, 0.04)
        out[f"novelty@{n}"] = _interval(3 + 3 * (1 - pop), 0.05, 0, 50)
    return out


def _profile(lean: float) -> dict[str, Any]:
    return {
        "profile_popularity": _interval(150 * (1 + lean), 3.0, 0, 1e9),
        "profile_tail_share": _interval(max(0.02, 0.3 - 0.25 * lean), 0.01),
        "test_tail_share": _interval(max(0.02, 0.32 - 0.25 * lean), 0.012),
    }


def popularity_bias(
    pop: float, groups: dict[str, int], *, seed: int = 3
) -> dict[str, Any]:
    """The ``popularity_bias`` section of ``fairness evaluate --train --json`` (its
    ``to_dict`` shape): overall, per group, profiles and the popularity groups."""
    rng = np.random.default_rng(seed)
    n_users = sum(groups.values())
    return {
        "head": "ceil(20 %) most popular catalog items by distinct training users",
        "n_head_items": 240,
        "n_train_users": n_users,
        "overall": _popularity_metrics(pop, 0.0, rng),
        "groups": {g: _popularity_metrics(pop, 0.1 * j, rng) for j, g in enumerate(groups)},
        "profile": {"overall": _profile(0.0),
                    "groups": {g: _profile(0.1 * j) for j, g in enumerate(groups)}},
        "user_popularity_rule": "niche / diverse / blockbuster by head share",
        "user_popularity_groups": {
            g: {"n_users": round(share * n_users), **_profile(lean),
                **_popularity_metrics(pop, lean, rng)}
            for (g, share), lean in zip(POPULARITY_GROUPS.items(), (-0.6, 0.0, 0.6),
                                        strict=True)
        },
    }


def fairness_study(*, sampled_gain: float = 2.5, seed: int = 11) -> dict[str, Any]:
    """A ``fairness run`` ``results.json``: one dataset, every model of
    :func:`fairness_results` with its popularity bias, evaluated under ``full`` and
    ``uni100`` (sampled metrics ``sampled_gain`` times higher, with the warning)."""
    full = fairness_results(seed=seed)
    models = {}
    for j, (name, ev) in enumerate(full.items()):
        n_users = {g: v["n_users"] for g, v in ev["groups"].items()}
        ev["popularity_bias"] = popularity_bias(FAIRNESS_MODELS[name][1], n_users, seed=j)
        ev["popularity_bias_reason"] = None
        ev["n_items"] = 1682
        ev["protocol"] = "full"
        sampled = json.loads(json.dumps(ev))
        sampled["protocol"] = "uni100"
        sampled["warnings"] = [SAMPLED_WARNING]
        for key, est in sampled["overall"].items():
            sampled["overall"][key] = {k: min(1.0, v * sampled_gain) for k, v in est.items()}
        for key, est in sampled["rd"].items():  # a smaller gap under sampled metrics
            sampled["rd"][key] = {k: v * 0.6 if k.startswith(("value", "ci_")) else v
                                  for k, v in est.items()}
        models[name] = {"train_seconds": 1.0, "evaluation": ev,
                        "evaluations": {"full": ev, "uni100": sampled}}
    return {"config": {"seed": 1}, "datasets": {"ml-100k": {"models": models}}}


def write_fairness_run(folder: Path, **kw: Any) -> dict[str, Any]:
    """Write results.json and long_tail.parquet."""
    folder.mkdir(parents=True, exist_ok=True)
    results = fairness_results(**kw)
    (folder / "results.json").write_text(json.dumps(results, indent=1))
    long_tail_frame().to_parquet(folder / "long_tail.parquet", index=False)
    return results


if __name__ == "__main__":
    here = Path(__file__).parent / "fixtures"
    write_positional_run(
        here / "positional_run",
        models=dict(list(MODELS.items())[:3]),
        ks=(5, 10),
        temperatures=(0.0, 0.4),
        n_queries=30,
        perms=10,
    )
    write_fairness_run(here / "fairness_run")


class _TaggedNumbers(HTMLParser):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix
        self.cells: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if (a.get("data-path") or "").startswith(self.prefix):
            self.cells.append((str(a["data-path"]), str(a["data-value"])))


def tagged_numbers(html: str, prefix: str) -> list[tuple[str, str]]:
    """Every ``(data-path, data-value)`` of the page whose path starts with ``prefix``."""
    parser = _TaggedNumbers(prefix)
    parser.feed(html)
    return parser.cells


def resolve(data: Any, path: str) -> Any:
    """The sidecar value at a ``data-path`` (``a/0/b``)."""
    for part in path.split("/"):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data
