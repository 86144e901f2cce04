"""No secret reaches any output through ANY config field.

A unique key is exported in the variable the config's ``api_key_env`` names, then
planted, one run at a time, in every string setting of a config that is otherwise
valid (every table and every kind of model): each run is refused with exit code 2
and one line naming the setting, and the key is found in no file written and no
stream. Keys in URLs (``user:KEY@host``, ``?api_key=KEY``) and a key pasted into
``api_key_env`` are refused without being echoed. Then the key is used for real (the
server echoes it in error bodies and answers): the run folder (journal, WAL,
tables, config.resolved.json, run.json), the report's HTML and JSON, stdout, stderr
and the log records are searched. Figure asserted: 0 secret leaks.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path

import pytest
from aiohttp import web
from typer.testing import CliRunner

from helpers import prepared_run, write_catalog
from recaudit.audit._config import load_audit_config
from recaudit.cli import app

SECRET = f"sk-PLANTED-{uuid.uuid4().hex}"
OTHER = f"sk-OTHER-{uuid.uuid4().hex}"  # a key that is in no variable
ENV = "RECAUDIT_SWEEP_KEY"
runner = CliRunner()

#: Every string setting of the audit config, with a valid value ({dir}: the folder,
#: {url}: the endpoint). The config below uses all of them.
FIELDS = {
    "catalog.path": "catalog.csv",
    "catalog.columns.id": "id",
    "catalog.columns.title": "title",
    "catalog.columns.description": "description",
    "catalog.columns.brand": "brand",
    "catalog.columns.colour": "colour",
    "catalog.columns.category": "colour",
    "catalog.columns.gender": "brand",
    "catalog.columns.price": "price",
    "queries.file": "queries.csv",
    "retrieval.model": "embedder",
    "retrieval.cache_dir": "cache",
    "prompt.template": "template.toml",
    "prompt.identifiers": "positional",
    "design.kind": "sampled",
    "conditions[0]": "permutation",
    "models[0].name": "remote",
    "models[0].backend": "openai",
    "models[0].base_url": "{url}",
    "models[0].model": "tiny",
    "models[0].api_key_env": ENV,
    "models[1].name": "here",
    "models[1].backend": "local",
    "models[1].model": "model.gguf",
    "models[2].name": "sim",
    "models[2].backend": "simulated",
}

CONFIG = """seed = 3
conditions = [@conditions[0]@]
[catalog]
path = @catalog.path@
[catalog.columns]
id = @catalog.columns.id@
title = @catalog.columns.title@
description = @catalog.columns.description@
brand = @catalog.columns.brand@
colour = @catalog.columns.colour@
category = @catalog.columns.category@
gender = @catalog.columns.gender@
price = @catalog.columns.price@
[queries]
file = @queries.file@
[retrieval]
k = [4]
model = @retrieval.model@
cache_dir = @retrieval.cache_dir@
[prompt]
template = @prompt.template@
identifiers = @prompt.identifiers@
[design]
kind = @design.kind@
n_perms = 2
[[models]]
name = @models[0].name@
backend = @models[0].backend@
base_url = @models[0].base_url@
model = @models[0].model@
api_key_env = @models[0].api_key_env@
max_retries = 1
[[models]]
name = @models[1].name@
backend = @models[1].backend@
model = @models[1].model@
[[models]]
name = @models[2].name@
backend = @models[2].backend@
"""


def config_text(values: dict[str, str]) -> str:
    text = CONFIG
    for name, value in values.items():
        text = text.replace(f"@{name}@", json.dumps(value))
    assert not re.search(r"@[a-z\[\]0-9._]+@", text), text  # every setting filled
    return text


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """Every file the full config names (the catalog with a price column)."""
    write_catalog(tmp_path / "catalog.csv")
    lines = (tmp_path / "catalog.csv").read_text().splitlines()
    (tmp_path / "catalog.csv").write_text("\n".join(
        [lines[0] + ",price"] + [f"{ln},{10 + i}" for i, ln in enumerate(lines[1:])]) + "\n")
    (tmp_path / "queries.csv").write_text("query_id,text\nq1,red jeans\nq2,blue kurta\n")
    (tmp_path / "template.toml").write_text(
        'system = "Shop assistant."\nuser = "{candidates}\\n{query}"\n')
    (tmp_path / "embedder").mkdir()
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    return tmp_path


def valid(url: str) -> dict[str, str]:
    return {k: v.replace("{url}", url) for k, v in FIELDS.items()}


def planted(value: str, name: str) -> str:
    """``value`` with the key in it, still looking like that setting."""
    if name.endswith(("path", "file", "template", "model", "cache_dir")) and "." in value:
        return value.replace(".", f"-{SECRET}.", 1)
    return f"{value}-{SECRET}"


def spellings(name: str, values: dict[str, str]) -> list[str]:
    """A setting as messages may name it: ``models[0].base_url`` or, once the model's
    name is known, ``models.remote.base_url``."""
    if not name.startswith("models["):
        return [name]
    index = name.split("]")[0] + "]"
    return [name, name.replace(index, f"models.{values[index + '.name']}")]


def leaks(root: Path, *texts: str, keys: tuple[str, ...] = (SECRET,),
          skip: tuple[Path, ...] = ()) -> list[str]:
    found = [str(p) for p in root.rglob("*") if p.is_file() and p not in skip
             and any(k.encode() in p.read_bytes() for k in keys)]
    found += [f"stream {i}" for i, t in enumerate(texts) if any(k in t for k in keys)]
    return found


def run_cli(config: Path, out: Path) -> object:
    return runner.invoke(app, ["positional", "run", str(config), "--out", str(out),
                               "--quiet", "--no-analyze"], env={"COLUMNS": "10000"})


def test_the_full_config_is_valid(folder: Path, fault_server, monkeypatch) -> None:
    """The sweep plants keys in a config that is otherwise valid: every refusal below
    is about the planted key."""
    monkeypatch.setenv(ENV, SECRET)
    path = folder / "audit.toml"
    path.write_text(config_text(valid(fault_server.base_url)))
    cfg = load_audit_config(path)
    assert {m.backend for m in cfg.models} == {"openai", "local", "simulated"}
    assert cfg.catalog.columns and cfg.queries.file and cfg.prompt.template


@pytest.mark.parametrize("name", list(FIELDS))
def test_a_key_in_any_setting_is_refused_unseen(folder: Path, name: str, fault_server,
                                                monkeypatch, caplog) -> None:
    monkeypatch.setenv(ENV, SECRET)
    caplog.set_level(logging.DEBUG)
    values = valid(fault_server.base_url)
    values[name] = SECRET if name.endswith("api_key_env") else planted(values[name], name)
    path = folder / "audit.toml"
    path.write_text(config_text(values))
    result = run_cli(path, folder / "run")
    assert result.exit_code == 2, (name, result.output)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert any(f"`{n}`" in lines[0] for n in spellings(name, values)), (name, lines[0])
    assert not (folder / "run").exists()
    assert leaks(folder, result.output, caplog.text, skip=(path,)) == []


@pytest.mark.parametrize(("url", "needle"), [
    ("http://user:{key}@{host}/v1", "holds credentials"),
    ("http://{key}@{host}/v1", "holds credentials"),
    ("http://{host}/v1?api_key={key}", "has a query string"),
    ("http://{host}/v1#{key}", "has a query string"),
    ("{key}", "must start with http"),
])
@pytest.mark.parametrize("key", [SECRET, OTHER])
def test_keys_in_urls_are_refused_unseen(folder: Path, fault_server, monkeypatch, caplog,
                                         url: str, needle: str, key: str) -> None:
    monkeypatch.setenv(ENV, SECRET)
    caplog.set_level(logging.DEBUG)
    host = fault_server.base_url.split("//")[1].split("/")[0]
    values = valid(fault_server.base_url)
    values["models[0].base_url"] = url.format(key=key, host=host)
    path = folder / "audit.toml"
    path.write_text(config_text(values))
    result = run_cli(path, folder / "run")
    assert result.exit_code == 2, result.output
    assert any(f"`{n}`" in result.output
               for n in spellings("models[0].base_url", values)), result.output
    if key == OTHER:  # in no variable: refused by the URL rule itself
        assert needle in result.output, result.output
        assert "api_key_env" in result.output  # the fix
    assert leaks(folder, result.output, caplog.text, keys=(SECRET, OTHER), skip=(path,)) == []
    assert fault_server.n_requests == 0


@pytest.mark.parametrize("pasted", [SECRET, "sk_live_51HxYzAbCdEf0123456789", "a1b2c3d4e5f6"])
def test_a_key_pasted_into_api_key_env_is_not_echoed(folder: Path, fault_server,
                                                     monkeypatch, pasted: str) -> None:
    monkeypatch.delenv(ENV, raising=False)
    values = valid(fault_server.base_url)
    values["models[0].api_key_env"] = pasted
    path = folder / "audit.toml"
    path.write_text(config_text(values))
    result = run_cli(path, folder / "run")
    assert result.exit_code == 2, result.output
    assert pasted not in result.output, result.output
    assert "api_key_env" in result.output and "OPENAI_API_KEY" in result.output


def test_the_key_in_use_reaches_no_output(tmp_path: Path, retriever, emb_cache, fault_server,
                                          monkeypatch, caplog) -> None:
    """The key is sent (Authorization) and echoed back by the server in error pages
    and answers; nothing written or printed holds it: run folder, report, streams."""
    from helpers import write_config

    monkeypatch.setenv(ENV, SECRET)
    caplog.set_level(logging.DEBUG)
    model = (f'[[models]]\nname = "remote"\nbackend = "openai"\nbase_url = '
             f'"{fault_server.base_url}"\napi_key_env = "{ENV}"\nmax_retries = 2\n')
    config = write_config(tmp_path, cache_dir=emb_cache, n_queries=3, n_perms=4, models=model)
    run = prepared_run(config, tmp_path / "run", retriever)
    seen: set[bytes] = set()

    def echo(n, request):
        auth = request.headers.get("Authorization", "")
        if request.body not in seen:  # the first attempt: a 500 echoing the header
            seen.add(request.body)
            return web.Response(status=500, text=f"internal error for {auth}")
        if n % 5 == 0:  # a discard whose text holds the key
            return web.json_response({"choices": [{"message": {"content": f"no: {auth}"}}]})
        return web.json_response({"choices": [{"message": {
            "content": '{"article_number": 1, "note": "' + auth + '"}'}}]})

    fault_server.reset()
    fault_server.serve(echo)
    result = runner.invoke(app, ["positional", "run", str(config), "--out", str(run),
                                 "--resume", "--json"])
    assert result.exit_code == 0, result.output
    assert all(s.headers["Authorization"] == f"Bearer {SECRET}"
               for s in fault_server.requests)  # the key is used
    report = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "report.html")])
    assert report.exit_code == 0, report.output
    assert (tmp_path / "report.html").is_file() and (tmp_path / "report.json").is_file()
    # a run whose endpoint rejects the key and echoes it: journal error messages
    fault_server.reset()
    run2 = prepared_run(config, tmp_path / "run2", retriever)
    fault_server.serve(lambda n, request: web.Response(
        status=401, text=f"bad key {request.headers['Authorization']}"))
    failed = runner.invoke(app, ["positional", "run", str(config), "--out", str(run2),
                                 "--resume"])
    assert failed.exit_code == 2 and "HTTP 401" in failed.output
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "journal.sqlite-wal" or p.name == "journal.sqlite" for p in files)
    assert leaks(tmp_path, result.output, report.output, failed.output, caplog.text) == []
