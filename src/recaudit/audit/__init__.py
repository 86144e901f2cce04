"""recaudit.audit: running audits of the system under test (:mod:`recaudit.llm`).

Config (one TOML file, :func:`load_audit_config`) -> plan (every evaluation key with its
rendered request, :func:`build_tasks`) -> run on an executor (``local`` asyncio runner,
``sequential`` anytime-valid rounds, ``ray`` actors) with every result journaled in
SQLite (:class:`Journal`; resumable, exactly-once) -> the evaluations table -> the
statistics (:func:`run_and_analyze`, the one place the audit hands its table to
:mod:`recaudit.positional`). Also the study driver (:func:`run_positional_study`) and the
mitigation driver (:func:`mitigate`), and the permutation designs the plan draws
orders from.
"""

from ._analysis import (
    GROUP_BY,
    AnalysedRun,
    RunAnalysis,
    analyze_run,
    run_and_analyze,
)
from ._batch import run_batch
from ._config import (
    AuditConfig,
    CatalogConfig,
    DesignConfig,
    PromptConfig,
    QueriesConfig,
    RetrievalConfig,
    config_hash,
    config_to_dict,
    load_audit_config,
    parse_audit_config,
)
from ._demo import demo_config
from ._designs import (
    Design,
    cyclic_orders,
    design_orders,
    exhaustive_orders,
    identity_orders,
    pob_icm_design_notes,
    sampled_orders,
    shared_orders,
    williams_orders,
)
from ._executor import Executor, LocalExecutor, RunContext, SequentialExecutor
from ._from_plan import apply_plan, choose_design
from ._journal import (
    EVALUATION_COLUMNS,
    EvalKey,
    EvalRecord,
    Journal,
    MemorySink,
    ResultSink,
    unescape_row,
)
from ._manifest import manifest_backends, read_manifest
from ._mitigation_compare import (
    ArmRun,
    MitigationArm,
    MitigationComparison,
    MitigationGroup,
    agreement,
    compare_arms,
    mitigation_comparison,
)
from ._mitigation_config import MitigationConfig, load_mitigation_config, parse_mitigation
from ._mitigation_driver import MitigationRun, mitigate, run_mitigation
from ._plan import answer_schema, build_tasks, design_notes
from ._run import AuditInterrupted, AuditResult, make_executor, run_audit
from ._run_options import RunOptions
from ._runner import EmbeddingProgress, EvalTask, RunProgress, RunSummary, run_tasks
from ._sequential_file import (
    MIN_QUERIES_WIDTH,
    SequentialAudit,
    SequentialCell,
    SequentialEvidence,
    SequentialOptions,
    SequentialPb,
)
from ._spend import BATCH_DISCOUNT, RunSpend, SpendCell, SpendTotal
from ._study_driver import StudyRun, run_positional_study

__all__ = [
    "BATCH_DISCOUNT",
    "MIN_QUERIES_WIDTH",
    "RunSpend",
    "SpendCell",
    "SpendTotal",
    "run_batch",
    # config
    "AuditConfig",
    "CatalogConfig",
    "DesignConfig",
    "PromptConfig",
    "QueriesConfig",
    "RetrievalConfig",
    "config_hash",
    "config_to_dict",
    "demo_config",
    "load_audit_config",
    "parse_audit_config",
    # plan: designs and tasks
    "Design",
    "answer_schema",
    "build_tasks",
    "design_notes",
    "cyclic_orders",
    "design_orders",
    "exhaustive_orders",
    "identity_orders",
    "pob_icm_design_notes",
    "sampled_orders",
    "shared_orders",
    "williams_orders",
    # run: executors, runner, journal
    "EVALUATION_COLUMNS",
    "AuditInterrupted",
    "AuditResult",
    "EvalKey",
    "EvalRecord",
    "EvalTask",
    "Executor",
    "Journal",
    "LocalExecutor",
    "MemorySink",
    "ResultSink",
    "RunContext",
    "EmbeddingProgress",
    "RunProgress",
    "RunSummary",
    "SequentialAudit",
    "SequentialCell",
    "SequentialEvidence",
    "SequentialExecutor",
    "SequentialOptions",
    "SequentialPb",
    "make_executor",
    "RunOptions",
    "run_audit",
    "run_tasks",
    "unescape_row",
    # run, then analyse; the study and mitigation drivers
    "GROUP_BY",
    "AnalysedRun",
    "ArmRun",
    "MitigationArm",
    "MitigationComparison",
    "MitigationConfig",
    "MitigationGroup",
    "MitigationRun",
    "RunAnalysis",
    "StudyRun",
    "agreement",
    "analyze_run",
    "compare_arms",
    "load_mitigation_config",
    "mitigate",
    "mitigation_comparison",
    "parse_mitigation",
    "run_and_analyze",
    "run_mitigation",
    "run_positional_study",
    "apply_plan",
    "choose_design",
    "manifest_backends",
    "read_manifest",
]
