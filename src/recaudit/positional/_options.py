"""The options of one positional analysis: one typed object, validated once.

:class:`AnalysisOptions` travels unchanged from the command line (or the caller) to
every statistic of :func:`~recaudit.positional.analyze`,
:func:`~recaudit.positional.analyze_groups`, exact mode and the study's analyses, so
each option is checked in one place and means the same thing in every command.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._limits import check_analysis_options
from .._stats import DEFAULT_N_BOOT
from ..exceptions import InputError
from ._bootstrap import check_bootstrap_args
from ._icm import MSG_N_RESAMPLES
from ._metrics import MSG_TAU, SPB_REPEATS, check_n_repeats
from ._unbp import MSG_ALPHA, MSG_EPSILON

__all__ = ["AnalysisOptions"]


@dataclass(frozen=True)
class AnalysisOptions:
    r"""Options of a positional analysis (validated on construction).

    Attributes
    ----------
    alpha : float, default 0.05
        Level of every test in the analysis: POB-ICM (reject when :math:`p \le
        \alpha`), POB-UNBP (its one-sided :math:`1-\alpha` lower bound :math:`L`), the
        study's comparisons, and the family-wise level of ``run --sequential``.
    epsilon : float, default 0.0
        Tolerated total-variation drift of POB-UNBP's null :math:`H_0(\epsilon)`:
        :math:`\mathrm{TV}(q, u) \le \epsilon`.
    tau : 'auto' or float in (0, 1], default 'auto'
        Relevance-set threshold of the paper's cross-validated sPB (``spb_paper``).
    spb_repeats : int, default 20
        Random fold assignments that ``spb_paper``'s 5-fold cross-validation averages
        over (repeated CV, Kim 2009).
    n_resamples : int, default 9999
        Within-query shuffles that calibrate POB-ICM's Monte-Carlo p-value
        :math:`(1 + \#\{T^{(b)} \ge T\}) / (1 + B)`.
    n_boot : int, default 2000
        Query-bootstrap resamples of each confidence interval.
    confidence_level : float, default 0.95
        Level of every confidence interval.

    References
    ----------
    Kim, J.-H. (2009). Estimating classification error rate: Repeated cross-validation,
    repeated hold-out and bootstrap. Comput. Statist. Data Anal. 53(11), 3735-3745.
    Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero.
    Stat. Appl. Genet. Mol. Biol. 9(1), Article 39.
    """

    alpha: float = 0.05
    epsilon: float = 0.0
    tau: float | Literal["auto"] = "auto"
    spb_repeats: int = SPB_REPEATS
    n_resamples: int = 9999
    n_boot: int = DEFAULT_N_BOOT
    confidence_level: float = 0.95

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "alpha", _open_unit(self.alpha, MSG_ALPHA))
        set_(self, "epsilon", _epsilon_iv(self.epsilon))
        set_(self, "tau", _tau_iv(self.tau))
        set_(self, "spb_repeats", check_n_repeats(self.spb_repeats))
        set_(self, "n_resamples", _n_resamples_iv(self.n_resamples))
        n_boot, level = check_bootstrap_args(self.n_boot, self.confidence_level)
        set_(self, "n_boot", n_boot)
        set_(self, "confidence_level", level)
        check_analysis_options(n_resamples=self.n_resamples, n_boot=self.n_boot,
                               spb_repeats=self.spb_repeats)

    def to_dict(self) -> dict[str, Any]:
        """The options as recorded in a study's ``settings``."""
        return {"alpha": self.alpha, "epsilon": self.epsilon, "tau": self.tau,
                "spb_repeats": self.spb_repeats, "n_resamples": self.n_resamples,
                "n_boot": self.n_boot, "confidence_level": self.confidence_level}


def _real(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _open_unit(value: Any, message: str) -> float:
    number = _real(value)
    if number is None or not 0.0 < number < 1.0:
        raise InputError(message.format(value=value))
    return number


def _epsilon_iv(value: Any) -> float:
    number = _real(value)
    if number is None or not 0.0 <= number < 1.0:
        raise InputError(MSG_EPSILON.format(value=value))
    return number


def _tau_iv(tau: Any) -> float | Literal["auto"]:
    if isinstance(tau, str):
        if tau != "auto":
            raise InputError(MSG_TAU.format(value=tau))
        return "auto"
    number = _real(tau)
    if number is None or not 0.0 < number <= 1.0:
        raise InputError(MSG_TAU.format(value=tau))
    return number


def _n_resamples_iv(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(MSG_N_RESAMPLES.format(value=value))
    return int(value)
