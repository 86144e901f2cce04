"""The packaged demo audit (``recaudit positional demo``): ``recaudit/llm/configs/demo.toml``
with the options a user gave."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path

from ..exceptions import ConfigError
from ._config import AuditConfig, parse_audit_config

__all__ = ["MSG_DEMO_CATALOG", "demo_config"]

MSG_DEMO_CATALOG = (
    "demo catalog not found at {path}; pass `--catalog PATH` (the Myntra catalog "
    "myntra_products_catalog.csv, or any CSV with ProductID, ProductName and "
    "Description columns)"
)


def demo_config(catalog: Path | None = None, queries: int | None = None,
                perms: int | None = None, k: int | None = None) -> AuditConfig:
    """The packaged demo.toml, with the options that were given (None: demo.toml's).

    Its relative paths (the catalog) start at the working directory; its prompt
    template is the packaged file beside it.
    """
    configs = importlib.resources.files("recaudit.llm").joinpath("configs")
    data = tomllib.loads(configs.joinpath("demo.toml").read_text(encoding="utf-8"))
    data["prompt"]["template"] = str(configs.joinpath(data["prompt"]["template"]))
    if catalog is not None:
        data["catalog"]["path"] = str(catalog)
    if queries is not None:
        data["queries"]["n"] = queries
    if perms is not None:
        data["design"]["n_perms"] = perms
    if k is not None:
        data["retrieval"]["k"] = [k]
    path = Path(data["catalog"]["path"])
    if not path.is_file():
        raise ConfigError(MSG_DEMO_CATALOG.format(path=path))
    return parse_audit_config(data, base_dir=Path.cwd())
