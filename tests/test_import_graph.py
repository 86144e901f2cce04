"""The module import graph of ``src/recaudit``: no cycles, and the layers import
downwards only.

Built with the standard library: every ``.py`` file under ``src/recaudit`` is parsed
with :mod:`ast`; every ``import`` and ``from ... import`` -- at module level or inside a
function -- is an edge, relative imports resolved against the importing module's
package, ``from package import name`` counted as importing ``package.name`` when that
is a module (else ``package``).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "recaudit"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(base: str, level: int, name: str | None) -> str:
    parts = base.split(".")
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def _targets(module: str, path: Path) -> set[str]:
    """The recaudit modules ``module`` imports anywhere in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(module, path)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(package, node.level, node.module) if node.level else node.module
            if base is None:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    out = set()
    for name in found:
        while name and name not in MODULES:  # `import recaudit.llm.x.y` -> nearest module
            name = name.rpartition(".")[0]
        if name.startswith(ROOT) and name != module:
            out.add(name)
    return out


GRAPH = {m: _targets(m, p) for m, p in MODULES.items()}


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        components.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def test_graph_is_built_from_every_module():
    assert "recaudit.audit._run" in GRAPH and "recaudit.llm" in GRAPH
    # a function-level import counts: the factory's lazy import of the local backend
    assert "recaudit.llm.backends._local" in GRAPH["recaudit.llm.backends._factory"]


def test_no_import_cycle():
    assert _cycles(GRAPH) == []


def _offending(packages: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{m} -> {t}" for m, targets in GRAPH.items()
                  if any(_in(m, p) for p in packages)
                  for t in targets if any(_in(t, f) for f in forbidden))


def test_system_under_test_imports_no_orchestration_or_statistics():
    forbidden = ("recaudit.positional", "recaudit.audit", "recaudit.fairness",
                 "recaudit.report", "recaudit.cli")
    assert _offending(("recaudit.llm",), forbidden) == []


def test_statistics_import_no_system_under_test_orchestration_report_or_cli():
    forbidden = ("recaudit.llm", "recaudit.audit", "recaudit.report", "recaudit.cli",
                 "recaudit.joint")
    assert _offending(("recaudit.positional", "recaudit.fairness"), forbidden) == []


def test_only_the_command_line_and_the_report_import_the_fairness_study():
    """``recaudit.fairness.study`` is the inter-bias study's runner (config, loaders,
    RecBole models, ``results.json``): the statistics beside it never import it, as
    ``recaudit.positional`` never imports ``recaudit.audit``."""
    users = sorted(m for m, targets in GRAPH.items() if not _in(m, "recaudit.fairness.study")
                   and any(_in(t, "recaudit.fairness.study") for t in targets))
    assert users and all(_in(m, "recaudit.cli") or _in(m, "recaudit.report") for m in users), users


def test_the_fairness_study_uses_the_statistics_through_their_face():
    """The study runner sits above the statistics as the audit above
    ``recaudit.positional``: it imports ``recaudit.fairness`` (its ``__all__``), never
    the statistics' private modules."""
    private = sorted(f"{m} -> {t}" for m, targets in GRAPH.items()
                     if _in(m, "recaudit.fairness.study") for t in targets
                     if _in(t, "recaudit.fairness") and not _in(t, "recaudit.fairness.study")
                     and any(part.startswith("_") for part in t.split(".")[2:]))
    assert private == []


def test_nothing_in_the_package_imports_the_known_truth_generators():
    """``recaudit.fairness.simulation`` judges the statistics (benchmarks, tests): no
    module of the package computes with it."""
    users = sorted(m for m, targets in GRAPH.items()
                   if not _in(m, "recaudit.fairness.simulation")
                   and any(_in(t, "recaudit.fairness.simulation") for t in targets))
    assert users == []


def test_only_the_command_line_imports_the_joint_audit():
    """``recaudit.joint`` sits above both studies and the runner: it imports their
    faces, and only the CLI imports it."""
    users = sorted(m for m, targets in GRAPH.items() if not _in(m, "recaudit.joint")
                   and any(_in(t, "recaudit.joint") for t in targets))
    assert all(_in(m, "recaudit.cli") for m in users), users
    private = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if _in(m, "recaudit.joint")
                     for t in targets if not _in(t, "recaudit.joint")
                     and any(part.startswith("_") for part in t.split(".")[1:])
                     and t not in ("recaudit._io", "recaudit._records", "recaudit._stats",
                                   "recaudit._limits"))
    assert private == []


def _top(module: str) -> str:
    """The top package of a module (``recaudit.audit._run`` -> ``recaudit.audit``); the
    shared root modules (``recaudit._stats``, ``recaudit._io``, ...) are their own."""
    return ".".join(module.split(".")[:2])


def test_packages_meet_at_their_faces():
    """No module imports another package's private module (issue 36, item 4): the
    packages meet at their ``__init__`` faces; the shared root modules are allowed."""
    doors = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                   if t.count(".") >= 2 and not t.split(".")[1].startswith("_")
                   and _top(t) != _top(m)
                   and any(part.startswith("_") for part in t.split(".")[2:]))
    assert doors == []
