"""run.json: which backend answered, named without secrets."""

from __future__ import annotations

import json

import pytest

from recaudit.audit._runner import describe_backends, write_manifest
from recaudit.exceptions import ConfigError
from recaudit.llm import BatchingBackend
from recaudit.llm.backends._openai import OpenAIBackend
from recaudit.llm.backends._simulated import SimulatedBackend, SimulationProfile


def test_openai_description_drops_credentials_query_and_key(monkeypatch):
    monkeypatch.setenv("RECAUDIT_TEST_KEY", "sk-very-secret")
    # a key in the URL is refused (issue 16), the message naming the field, not the key
    with pytest.raises(ConfigError, match="`base_url` holds credentials") as info:
        OpenAIBackend("https://user:pw@api.example.com:8443/v1/?api-key=sk-very-secret",
                      "gpt-x", api_key_env="RECAUDIT_TEST_KEY", name="hosted")
    assert "secret" not in str(info.value) and "pw" not in str(info.value)
    assert "https://api.example.com:8443/v1" in str(info.value)
    backend = OpenAIBackend("https://api.example.com:8443/v1/", "gpt-x",
                            api_key_env="RECAUDIT_TEST_KEY", name="hosted")
    desc = backend.describe()
    assert desc == {"backend": "openai", "name": "hosted", "model_id": "gpt-x",
                    "base_url": "https://api.example.com:8443/v1"}
    assert "secret" not in json.dumps(desc) and "pw" not in json.dumps(desc)
    v6 = OpenAIBackend("http://[::1]:8080/v1", "m").describe()["base_url"]
    assert v6 == "http://[::1]:8080/v1"


class _Batch:
    name = "local:model.gguf+constrained"

    def complete_batch(self, requests):  # pragma: no cover - never called
        raise AssertionError

    async def aclose(self):  # pragma: no cover
        pass


def test_manifest_lists_every_model_and_k_and_appends_resumes(tmp_path):
    sim = SimulatedBackend(SimulationProfile.primacy(0.5), k=3, seed=1, name="sim")
    backends = {("sim", 3): sim, ("local", 3): BatchingBackend(_Batch(), max_batch=4),
                ("remote", 3): OpenAIBackend("http://127.0.0.1:9/v1", "tiny", name="remote")}
    assert describe_backends(backends) == [
        {"model": "local", "k": 3, "backend": "_Batch",
         "name": "local:model.gguf+constrained", "max_batch": 4},
        {"model": "remote", "k": 3, "backend": "openai", "name": "remote",
         "model_id": "tiny", "base_url": "http://127.0.0.1:9/v1"},
        {"model": "sim", "k": 3, "backend": "SimulatedBackend", "name": "sim"},
    ]
    path = tmp_path / "run.json"
    write_manifest(path, backends, resume=False)
    write_manifest(path, {("sim", 3): sim}, resume=True)
    manifest = json.loads(path.read_text())
    assert manifest["recaudit_version"]
    assert [s["resume"] for s in manifest["sessions"]] == [False, True]
    assert [len(s["backends"]) for s in manifest["sessions"]] == [3, 1]
    write_manifest(path, {("sim", 3): sim}, resume=False)  # a new run starts over
    assert len(json.loads(path.read_text())["sessions"]) == 1


def test_unreadable_manifest_does_not_stop_a_resume(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("{not json", encoding="utf-8")
    sim = SimulatedBackend(SimulationProfile.primacy(0.5), k=3, seed=1, name="sim")
    write_manifest(path, {("sim", 3): sim}, resume=True)
    assert [s["resume"] for s in json.loads(path.read_text())["sessions"]] == [True]
