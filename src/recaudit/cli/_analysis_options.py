"""The positional analysis options of the command line, declared once.

Every command that analyses (``analyze``, ``run``, ``study``, ``mitigate``) takes its
options from the aliases below, so an option has one name, one help text and one
meaning everywhere; :func:`analysis_options` turns them into the library's
:class:`~recaudit.positional.AnalysisOptions`, which validates them once.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from .._stats import DEFAULT_N_BOOT
from ..exceptions import InputError

if TYPE_CHECKING:
    from ..positional import AnalysisOptions

__all__ = [
    "Alpha",
    "Epsilon",
    "NBoot",
    "NResamples",
    "SPB_REPEATS_DEFAULT",
    "Seed",
    "SpbRepeats",
    "Tau",
    "analysis_options",
    "parse_tau",
]

MSG_TAU_OPTION = (
    "`--tau` must be 'auto' (the threshold rule calibrated across queries) or a "
    "cumulative share in (0, 1], e.g. --tau 0.8; got {value!r}"
)
TAU_HELP = (
    "sPB's relevance-set threshold: 'auto' (grows with the set size, calibrated by PB) "
    "or a fixed cumulative share in (0, 1], e.g. 0.8."
)
MSG_SPB_REPEATS_OPTION = (
    "`--spb-repeats` must be an integer >= 1 (random fold assignments sPB's "
    "cross-validation averages over), e.g. --spb-repeats 20; got {value!r}"
)
SPB_REPEATS_HELP = (
    "Random fold assignments sPB's 5-fold cross-validation averages over (repeated CV; "
    "1 = one split)."
)
#: Shown in --help (the CLI imports the library lazily); tested equal to SPB_REPEATS.
SPB_REPEATS_DEFAULT = "20"

Alpha = Annotated[float, typer.Option(
    "--alpha", help="Level of every test: POB-ICM, POB-UNBP, the study's comparisons and "
    "the family-wise level of --sequential.")]
Epsilon = Annotated[float, typer.Option(
    "--epsilon", help="Tolerated TV drift for POB-UNBP.")]
Tau = Annotated[str, typer.Option("--tau", help=TAU_HELP)]
SpbRepeats = Annotated[int | None, typer.Option(
    "--spb-repeats", help=SPB_REPEATS_HELP, show_default=SPB_REPEATS_DEFAULT)]
NResamples = Annotated[int, typer.Option(
    "--n-resamples", help="POB-ICM within-query shuffles.")]
NBoot = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples of each CI.")]
Seed = Annotated[int | None, typer.Option(
    "--seed", help="Analysis seed (default: the config's seed; random without a config).")]


def parse_tau(value: str) -> float | Literal["auto"]:
    """Parse `--tau`: 'auto' or a number in (0, 1]."""
    text = value.strip().lower()
    if text == "auto":
        return "auto"
    try:
        number = float(text)
    except ValueError:
        raise InputError(MSG_TAU_OPTION.format(value=value)) from None
    if not math.isfinite(number) or not 0.0 < number <= 1.0:
        raise InputError(MSG_TAU_OPTION.format(value=value))
    return number


def _spb_repeats(value: int | None) -> int:
    """`--spb-repeats`: an integer >= 1, or the library's default."""
    from ..positional import SPB_REPEATS

    if value is None:
        return SPB_REPEATS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(MSG_SPB_REPEATS_OPTION.format(value=value))
    return value


def analysis_options(*, alpha: float = 0.05, epsilon: float = 0.0, tau: str = "auto",
                     spb_repeats: int | None = None, n_resamples: int = 9999,
                     n_boot: int = DEFAULT_N_BOOT) -> AnalysisOptions:
    """The command line's analysis options as one validated
    :class:`~recaudit.positional.AnalysisOptions` (messages name the option)."""
    from ..positional import AnalysisOptions

    return AnalysisOptions(alpha=alpha, epsilon=epsilon, tau=parse_tau(tau),
                           spb_repeats=_spb_repeats(spb_repeats), n_resamples=n_resamples,
                           n_boot=n_boot)
