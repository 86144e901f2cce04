"""Upper bounds of every numeric option, written once: what a setting costs.

A number a user types (``--n-resamples``, ``--n-boot``, ``--spb-repeats``, ``simulate
--k/--queries/--perms/--reps``, ``fairness evaluate --n``) or writes in a config
(``design.n_perms``, ``design.samples_per_order``, ``queries.n``, ``retrieval.k``,
``delay_s``) sets the size of an allocation or the length of a loop. Before the
allocation, the bytes it needs are estimated from the sizes involved and compared with
the memory this machine has available (:func:`available_memory`); a loop whose memory
does not grow is compared with a time ceiling (:data:`MAX_SECONDS`) at a generous
speed (:data:`STEPS_PER_SECOND`). What cannot fit is refused with an
:class:`~recaudit.exceptions.InputError` (exit code 2) naming the setting, what it
would need and **the largest value this machine can do** -- never a numpy allocation
traceback, a swap storm or a hang.

Each bound is one function of this module (:func:`require_memory`,
:func:`require_time`) called with the per-unit cost of the allocation it guards; the
per-unit costs are the constants below, each with the array it stands for. Estimates
are lower bounds of the real need (the arrays named, not Python's overheads), so a
refusal is certain to be right; a value just under a bound may still be slow, and
every long resampling loop stops on Ctrl-C.

``RECAUDIT_MEMORY_BYTES`` (an integer) replaces the measured available memory: to
plan for another machine, or in tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from .exceptions import InputError

__all__ = [
    "DEFAULT_CONCURRENCY",
    "BOOT_STAT_BYTES",
    "FLOAT_BYTES",
    "MAX_SECONDS",
    "MSG_MEMORY",
    "MSG_TIME",
    "PLAN_BYTES_PER_CANDIDATE",
    "PLAN_BYTES_PER_EVALUATION",
    "N_BOOT",
    "N_RESAMPLES",
    "SIMULATION_BATCH",
    "SPB_REPEATS",
    "STEPS_PER_SECOND",
    "available_memory",
    "check_analysis_options",
    "check_analysis_sizes",
    "check_audit_plan",
    "check_delay",
    "check_rate",
    "check_fairness_options",
    "check_fairness_sizes",
    "check_fairness_study",
    "check_replicates",
    "check_simulation",
    "check_topn_sizes",
    "largest_within",
    "orders_per_query",
    "require_memory",
    "require_memory_jointly",
    "require_time",
]

MSG_MEMORY = (
    "{setting} = {value:,} needs about {need} of memory ({what}); this machine has "
    "{available} available, so the largest value it can do is {largest:,}"
)
MSG_TIME = (
    "{setting} = {value:,} would run for at least {need} ({what}); the longest run "
    "accepted is {limit}, so the largest value is {largest:,}"
)
MSG_NOTHING_FITS = (
    "{setting}: even the smallest value needs {need} of memory ({what}); this machine "
    "has {available} available"
)

#: One float64 / int64 value.
FLOAT_BYTES = 8
#: A bootstrap resample holds at least two statistics (a point and its complement, e.g.
#: PB and its CI's ends are computed from k shares): the least it can cost.
BOOT_STAT_BYTES = 2 * FLOAT_BYTES
#: One planned evaluation held in memory: its key, its request (the rendered prompt:
#: a template of ~1 KB), and its row of the journal and the evaluations table.
PLAN_BYTES_PER_EVALUATION = 2048
#: Per candidate of a planned evaluation: its line of the prompt (a Myntra title +
#: description averages 230 characters) and its place in the order.
PLAN_BYTES_PER_CANDIDATE = 256
#: A speed no loop of recaudit exceeds (elementary steps per second: one resampled
#: evaluation, one simulated draw); time estimates use it, so they are lower bounds.
STEPS_PER_SECOND = 1e9
#: The longest computation accepted: 30 days (a run is resumable, a statistic is not).
MAX_SECONDS = 30 * 24 * 3600.0

_ENV = "RECAUDIT_MEMORY_BYTES"

#: Upper bounds of a run config's per-model numbers, each with the reason the message
#: gives (issue 34: none had one; ``max_tokens = 10**9`` or ``max_retries = 10**9``
#: parsed and then hung or grew without limit).
MAX_TOKENS = (32_768, "an answer of one identifier is a few tokens; 32,768 is beyond "
                      "any local model's context")
MAX_RETRIES = (100, "a call retried 100 times with backoff already waits hours")
#: Requests in flight at once unless the config says otherwise (runner, backends, collectors).
DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = (4_096, "requests in flight at once, each holding an open connection")
MAX_TIMEOUT_S = 86_400.0  # one call waiting longer than a day is a hang, not a call
#: llama.cpp's KV cache: n_parallel slots x n_ctx tokens each (tens of kB per token even
#: for a 135M-parameter model: 262,144 tokens of SmolLM2 are ~18 GB).
MAX_CONTEXT_TOKENS = (262_144, "the KV cache holds n_parallel x n_ctx tokens, tens of kB "
                               "each; a prompt of k candidates needs a few hundred")
#: The fairness study's training epochs per model (RecBole stops early on its valid
#: metric; the paper's grid trains for at most a few hundred).
MAX_EPOCHS = (10_000, "each epoch passes over every training interaction; RecBole's "
                      "early stopping ends training long before")


def max_threads() -> tuple[int, str]:
    """``n_threads``' bound: 4 per core of this machine (llama.cpp and torch threads
    beyond the cores only wait for each other; 4 per core leaves room for a config
    written on a larger machine)."""
    cores = os.cpu_count() or 1
    return 4 * cores, f"this machine has {cores} cores; more threads only wait"


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now: ``RECAUDIT_MEMORY_BYTES``
    when set, else psutil's ``virtual_memory().available`` (free + reclaimable cache),
    else ``os.sysconf`` (available physical pages x page size); ``None`` when none of
    them can tell (then no memory bound is applied)."""
    override = os.environ.get(_ENV, "").strip()
    if override:
        try:
            return max(int(override), 0)
        except ValueError:
            raise InputError(f"{_ENV} must be a number of bytes, got {override!r}") from None
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 -- psutil missing or unable to read the system
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def _size(n: float) -> str:
    for unit, scale in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}" if n < 1e6 * scale else f"{n / scale:.2g} {unit}"
    return f"{n:.0f} bytes"


def _duration(seconds: float) -> str:
    for unit, scale in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600),
                        ("minutes", 60)):
        if seconds >= scale:
            n = seconds / scale
            return f"{n:,.1f} {unit}" if n < 1e6 else f"{n:.2g} {unit}"
    return f"{seconds:.0f} seconds"


def largest_within(cost: Callable[[int], float], budget: float, value: int) -> int:
    """The largest integer ``v <= value`` with ``cost(v) <= budget`` (``cost``
    non-decreasing; 0 when even ``cost(1)`` exceeds it), by doubling then bisection."""
    if cost(1) > budget:
        return 0
    low, high = 1, 2
    while high < value and cost(high) <= budget:
        low, high = high, high * 2
    high = min(high, value)
    while low < high:
        mid = (low + high + 1) // 2
        if cost(mid) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def require_memory(setting: str, value: int, cost: Callable[[int], float], *,
                   what: str, error: type[InputError] = InputError) -> int:
    """``value`` if the bytes ``cost(value)`` fit in :func:`available_memory`;
    otherwise an ``error`` (:data:`MSG_MEMORY`) naming ``setting``, the bytes, ``what``
    they hold and the largest value that fits.

    Parameters
    ----------
    setting : str
        How the user wrote it, e.g. ``"`--n-boot` (n_boot)"``.
    value : int
        The value given.
    cost : callable
        Bytes needed as a function of the value (non-decreasing), the other sizes
        involved fixed (e.g. ``lambda b: 8 * b * n_statistics``).
    what : str
        The allocation, in words (e.g. ``"the bootstrap replicates, 16 bytes each"``).
    """
    available = available_memory()
    if available is None:
        return value
    need = cost(value)
    if need <= available:
        return value
    largest = largest_within(cost, available, value)
    if largest == 0:
        raise error(MSG_NOTHING_FITS.format(setting=setting, need=_size(cost(1)),
                                            what=what, available=_size(available)))
    raise error(MSG_MEMORY.format(setting=setting, value=value, need=_size(need), what=what,
                                  available=_size(available), largest=largest))


def require_memory_jointly(settings: Sequence[tuple[str, int, Callable[[int], float]]], *,
                            what: str, error: type[InputError] = InputError) -> None:
    """Several settings that size one allocation together (``(setting, value,
    cost)``, each ``cost`` a function of that setting with the others as given, so
    every ``cost(value)`` is the same total): when the total does not fit, the
    setting named is the one furthest beyond the largest value it could take with
    the others unchanged (the largest ratio value / largest, among the settings that
    could fit at all)."""
    available = available_memory()
    if available is None or not settings or settings[0][2](settings[0][1]) <= available:
        return
    largest = [largest_within(cost, available, value) for _, value, cost in settings]
    # a setting that cannot fit even at 1 is not the culprit: the others are
    worst = max(range(len(settings)),
                key=lambda i: (largest[i] > 0, settings[i][1] / max(largest[i], 1)))
    require_memory(*settings[worst], what=what, error=error)


def require_time(setting: str, value: int, steps: Callable[[int], float], *,
                 what: str, error: type[InputError] = InputError) -> int:
    """``value`` if ``steps(value)`` elementary steps take at most :data:`MAX_SECONDS`
    at :data:`STEPS_PER_SECOND`; otherwise an ``error`` (:data:`MSG_TIME`) naming the
    setting, the least time it needs and the largest value within the ceiling."""
    budget = MAX_SECONDS * STEPS_PER_SECOND
    need = steps(value)
    if need <= budget:
        return value
    largest = largest_within(steps, budget, value)
    raise error(MSG_TIME.format(setting=setting, value=value,
                                need=_duration(need / STEPS_PER_SECOND), what=what,
                                limit=_duration(MAX_SECONDS), largest=max(largest, 0)))


# -- the settings ---------------------------------------------------------------------
# Each function below bounds the settings of one analysis or command. "Data-free"
# checks run when options are validated (the least any data can cost); "sized"
# checks run once the data's sizes are known.

N_RESAMPLES = "`--n-resamples` (n_resamples)"
N_BOOT = "`--n-boot` (n_boot)"
SPB_REPEATS = "`--spb-repeats` (spb_repeats)"


def check_analysis_options(*, n_resamples: int, n_boot: int, spb_repeats: int) -> None:
    """Data-free bounds of a positional analysis: POB-ICM's null holds ``n_resamples``
    floats, the bootstrap ``n_boot`` replicates of at least two statistics, sPB's
    repeated CV ``spb_repeats`` fold draws of at least two evaluations."""
    require_memory(N_RESAMPLES, n_resamples, lambda b: FLOAT_BYTES * b,
                   what="POB-ICM's null distribution, 8 bytes a resample")
    require_memory(N_BOOT, n_boot, lambda b: BOOT_STAT_BYTES * b,
                   what="the bootstrap replicates, at least 16 bytes a resample")
    require_memory(SPB_REPEATS, spb_repeats, lambda a: 2 * FLOAT_BYTES * a,
                   what="sPB's fold draws, at least 16 bytes a repeat")


def check_analysis_sizes(*, n_resamples: int, n_boot: int, spb_repeats: int,
                         n_evaluations: int, n_queries: int, k: int,
                         spb_block: bool = True) -> None:
    """Bounds of a positional analysis of ``n_evaluations`` evaluations of
    ``n_queries`` queries at ``k`` positions.

    Memory: the null (8 B x B); the bootstrap replicates (the k position shares held
    twice while their chunks are stacked, and two statistics: 8 B x (2k + 2) a
    resample); sPB's repeated CV, drawn as one block (``spb_block``) of A repeats, each
    holding six arrays over the N evaluations and three over the Q x 5 folds x k
    training counts (8 B x (6N + 15Qk) a repeat). Time: the shuffles (B x N steps),
    the resamples (B x Q x k) and the CV repeats (A x N x k). Measured on 72
    evaluations of 12 queries at k = 4 (peak RSS over a run with 19 shuffles and 10
    resamples): 89 MB for B = 10^7 (80 MB estimated), 84 MB for 10^6 resamples (80 MB),
    15.9 GB for A = 10^6 (9.4 GB): the estimates stay below what is needed.
    """
    n, q = max(n_evaluations, 1), max(n_queries, 1)
    per_boot = FLOAT_BYTES * (2 * k + 2)
    require_memory(N_BOOT, n_boot, lambda b: per_boot * b,
                   what=f"the bootstrap replicates at k = {k}, {per_boot} bytes a resample")
    if spb_block:
        per_repeat = FLOAT_BYTES * (6 * n + 15 * q * k)
        require_memory(SPB_REPEATS, spb_repeats, lambda a: per_repeat * a,
                       what=f"sPB's fold draws over {n:,} evaluations, {per_repeat:,} "
                            "bytes a repeat")
    require_time(N_RESAMPLES, n_resamples, lambda b: b * n,
                 what=f"{n:,} evaluations reshuffled per resample")
    require_time(N_BOOT, n_boot, lambda b: b * q * k,
                 what=f"{q:,} queries x {k} positions per resample")
    require_time(SPB_REPEATS, spb_repeats, lambda a: a * n * k,
                 what=f"{n:,} evaluations x {k} positions per repeat")


def check_topn_sizes(*, n_resamples: int, n_boot: int, n_evaluations: int,
                     n_queries: int, k: int) -> None:
    """Bounds of the top-N test: the null (8 B x B), the bootstrap replicates (k + 2
    statistics, twice), the shuffles (B x N x k steps) and resamples (B x Q x k)."""
    n, q = max(n_evaluations, 1), max(n_queries, 1)
    require_memory(N_RESAMPLES, n_resamples, lambda b: FLOAT_BYTES * b,
                   what="the permutation null, 8 bytes a resample")
    require_memory(N_BOOT, n_boot, lambda b: 2 * FLOAT_BYTES * (k + 2) * b,
                   what=f"the bootstrap replicates of {k + 2} statistics")
    require_time(N_RESAMPLES, n_resamples, lambda b: b * n * k,
                 what=f"{n:,} rankings of {k} positions reshuffled per resample")
    require_time(N_BOOT, n_boot, lambda b: b * q * k,
                 what=f"{q:,} queries x {k} positions per resample")


def check_fairness_options(*, n: Sequence[int], n_boot: int, n_resamples: int) -> None:
    """Data-free bounds of a fairness evaluation: the top-``n`` lists hold ``n`` item
    codes a user, each bootstrap or permutation replicate at least one float."""
    require_memory("`--n` (n)", max(n), lambda m: FLOAT_BYTES * m,
                   what="the top-n list of one user, 8 bytes an item")
    require_memory(N_BOOT, n_boot, lambda b: FLOAT_BYTES * b,
                   what="the bootstrap replicates, at least 8 bytes a resample")
    require_memory(N_RESAMPLES, n_resamples, lambda b: FLOAT_BYTES * b,
                   what="the permutation null, at least 8 bytes a resample")


def check_fairness_study(*, n: Sequence[int], list_length: int, n_boot: int,
                         n_resamples: int) -> None:
    """Data-free bounds of a fairness study's ``[study]`` table: the evaluation's
    (:func:`check_fairness_options`) and the top-``list_length`` lists every model
    writes (8 bytes an item a user)."""
    check_fairness_options(n=n, n_boot=n_boot, n_resamples=n_resamples)
    require_memory("`study.list_length`", list_length, lambda m: FLOAT_BYTES * m,
                   what="the top list of one user, 8 bytes an item")


def check_fairness_sizes(*, n_max: int, n_users: int) -> None:
    """The top-``n_max`` lists of ``n_users`` users: items, hits and ranks (3 arrays
    of 8-byte values)."""
    u = max(n_users, 1)
    require_memory("`--n` (n)", n_max, lambda m: 3 * FLOAT_BYTES * m * u,
                   what=f"the top-n lists of {u:,} users, 24 bytes an item")


def check_replicates(setting: str, value: int, *, per_replicate: int, what: str) -> None:
    """A resampling loop keeping ``per_replicate`` floats a replicate (held twice while
    the chunks are stacked)."""
    require_memory(setting, value, lambda b: 2 * FLOAT_BYTES * per_replicate * b,
                   what=f"{what}: {per_replicate:,} values a replicate")


#: Evaluations simulated per batch of replications (``positional._simulation``).
SIMULATION_BATCH = 1_000_000


def check_simulation(*, ks: Sequence[int], queries: Sequence[int], perms: int, reps: int,
                     n_resamples: int) -> None:
    """Bounds of the power study: a batch of data sets (``batch`` =
    max(1, 10^6 // (queries x perms)) of them) holds item, position and label per
    evaluation (24 B), the orders of k > 20 (8k B), the position shares (8 B x queries
    x k) and POB-ICM's null (8 B x n_resamples); the whole grid takes at least reps x
    sum(queries x perms x (k + n_resamples)) steps."""
    k_max, q_max = max(ks), max(queries)

    def batch_bytes(k: int, q: int, p: int, b: int) -> float:
        batch = max(1, SIMULATION_BATCH // (q * p))
        orders = FLOAT_BYTES * k if k > 20 else 0
        return batch * (q * p * (3 * FLOAT_BYTES + orders) + 2 * FLOAT_BYTES * q * k
                        + FLOAT_BYTES * b)

    require_memory_jointly([
        ("`--k`", k_max, lambda k: batch_bytes(k, q_max, perms, n_resamples)),
        ("`--queries`", q_max, lambda q: batch_bytes(k_max, q, perms, n_resamples)),
        ("`--perms`", perms, lambda p: batch_bytes(k_max, q_max, p, n_resamples)),
        ("`--n-resamples`", n_resamples, lambda b: batch_bytes(k_max, q_max, perms, b)),
    ], what="one batch of simulated data sets")
    per_rep = sum(q * perms * (k + n_resamples) for k in ks for q in queries)
    require_time("`--reps`", reps, lambda r: r * per_rep,
                 what=f"{per_rep:,} steps a replication over the grid")


def orders_per_query(kind: str, k: int, n_perms: int | None) -> int:
    """Orders a design shows each query: ``n_perms`` for the random designs, k! for
    ``exhaustive`` (k <= 8), about 2k for the Latin-square designs."""
    if n_perms is not None:
        return n_perms
    if kind == "exhaustive":
        out = 1
        for i in range(2, min(k, 12) + 1):
            out *= i
        return out
    return 2 * k


def check_audit_plan(*, n_queries: int, ks: Sequence[int], kind: str, n_perms: int | None,
                     samples_per_order: int, cells: int, error: type[InputError]) -> int:
    """Bounds of an audit's plan, held in memory while it runs: each planned evaluation
    costs :data:`PLAN_BYTES_PER_EVALUATION` + k x :data:`PLAN_BYTES_PER_CANDIDATE`.
    The settings multiply (``cells`` = models x temperatures x conditions); when the
    plan does not fit, the one furthest beyond what fits is named
    (:func:`require_memory_jointly`). Returns the number of planned evaluations."""
    def plan_bytes(q: int, k_values: Sequence[int], perms: int | None, s: int) -> float:
        return sum(q * orders_per_query(kind, k, perms) * s * cells
                   * (PLAN_BYTES_PER_EVALUATION + PLAN_BYTES_PER_CANDIDATE * k)
                   for k in k_values)

    k_max = max(ks)
    settings: list[tuple[str, int, Callable[[int], float]]] = [
        ("`retrieval.k` (demo: --k)", k_max,
         lambda k: plan_bytes(n_queries, [k if v == k_max else v for v in ks], n_perms,
                              samples_per_order)),
        ("`queries.n` (demo: --queries)", n_queries,
         lambda q: plan_bytes(q, ks, n_perms, samples_per_order)),
        ("`design.samples_per_order`", samples_per_order,
         lambda s: plan_bytes(n_queries, ks, n_perms, s)),
    ]
    if n_perms is not None:
        settings.insert(2, ("`design.n_perms` (demo: --perms)", n_perms,
                            lambda p: plan_bytes(n_queries, ks, p, samples_per_order)))
    require_memory_jointly(settings, what="the planned evaluations held while the run goes",
                           error=error)
    return sum(n_queries * orders_per_query(kind, k, n_perms) * samples_per_order * cells
               for k in ks)


MSG_DELAY = (
    "{setting} = {value:g} s makes the run last at least {need} ({n:,} evaluations, "
    "{concurrency} at a time); the longest run accepted is {limit}, so the largest "
    "delay is {largest:g} s"
)


MSG_RATE = (
    "{setting} = {value:g} requests a second makes the run last at least {need} ({n:,} "
    "evaluations); the longest run accepted is {limit}, so the smallest rate is "
    "{smallest:g}"
)


def check_rate(setting: str, rate_per_s: float, *, n_evaluations: int,
               error: type[InputError] = InputError) -> None:
    """A request rate limit: the run lasts at least N / rate seconds."""
    if rate_per_s > 0 and n_evaluations / rate_per_s > MAX_SECONDS:
        raise error(MSG_RATE.format(setting=setting, value=rate_per_s,
                                    need=_duration(n_evaluations / rate_per_s),
                                    n=n_evaluations, limit=_duration(MAX_SECONDS),
                                    smallest=n_evaluations / MAX_SECONDS))


def check_delay(setting: str, delay_s: float, *, n_evaluations: int, concurrency: int,
                error: type[InputError] = InputError) -> None:
    """A simulated answer delay: the run lasts at least delay x ceil(N / concurrency)."""
    rounds = max(1, -(-n_evaluations // max(concurrency, 1)))
    if delay_s * rounds > MAX_SECONDS:
        raise error(MSG_DELAY.format(setting=setting, value=delay_s,
                                     need=_duration(delay_s * rounds), n=n_evaluations,
                                     concurrency=concurrency, limit=_duration(MAX_SECONDS),
                                     largest=MAX_SECONDS / rounds))
