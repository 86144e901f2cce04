from __future__ import annotations

import re

import numpy as np
import pytest

from recaudit.exceptions import ConfigError, InputError
from recaudit.llm import (
    Candidate,
    PromptTemplate,
    positional_identifiers,
    random_labels,
    render_request,
)

CANDS = tuple(
    Candidate(i, f"id{i}", f"Title of item {i}", f"Description of item {i}", 1 - i / 10)
    for i in range(1, 6)
)


def test_default_template_is_the_papers():
    t = PromptTemplate.default()
    req = render_request(
        t, "red shirt", CANDS, [1, 2, 3, 4, 5], identifiers=positional_identifiers(5), temperature=0
    )
    user = req.messages[1].content
    assert req.messages[0].role == "system" and "shop assistant" in req.messages[0].content
    for key in ("article_number", "article_title", "recommendation"):
        assert f'"{key}"' in user
    assert "Title 1: Title of item 1\nDescription 1: Description of item 1" in user
    assert user.index("Title 5:") < user.index("Customer request: red shirt")


def test_order_puts_original_index_at_position():
    order = [3, 1, 5, 2, 4]
    req = render_request(
        PromptTemplate.default(),
        "q",
        CANDS,
        np.array(order),
        identifiers=positional_identifiers(5),
        temperature=0.4,
        seed=11,
        max_tokens=50,
        choice_probabilities=True,
        query_id="q0007",
    )
    shown = re.findall(r"Title (\d): Title of item (\d)", req.messages[1].content)
    assert shown == [(str(p), str(i)) for p, i in enumerate(order, start=1)]
    assert req.order == tuple(order) and req.identifiers == ("1", "2", "3", "4", "5")
    assert (req.temperature, req.seed, req.max_tokens, req.choice_probabilities, req.query_id) == (
        0.4,
        11,
        50,
        True,
        "q0007",
    )


def test_random_labels_shown_in_position_order():
    labels = random_labels(5, rng=3)
    assert len(set(labels)) == 5 and all(re.fullmatch(r"[A-Z][2-9][A-Z]", s) for s in labels)
    assert labels == random_labels(5, rng=3) and labels != random_labels(5, rng=4)
    req = render_request(
        PromptTemplate.default(), "q", CANDS, [5, 4, 3, 2, 1], identifiers=labels, temperature=0
    )
    assert req.identifiers == labels
    assert f"Title {labels[0]}: Title of item 5" in req.messages[1].content


def test_render_validation():
    t, ids = PromptTemplate.default(), positional_identifiers(5)
    with pytest.raises(InputError, match=r"`order` must be a permutation of 1..5"):
        render_request(t, "q", CANDS, [1, 2, 3, 4, 4], identifiers=ids, temperature=0)
    with pytest.raises(InputError, match=r"`identifiers` must be 5 distinct"):
        render_request(t, "q", CANDS, [1, 2, 3, 4, 5], identifiers=ids[:4], temperature=0)
    with pytest.raises(InputError, match=r"candidates\[0\].original_index is 2"):
        render_request(
            t, "q", CANDS[1:] + CANDS[:1], [1, 2, 3, 4, 5], identifiers=ids, temperature=0
        )
    with pytest.raises(InputError, match=r"`temperature` must be a finite number >= 0"):
        render_request(t, "q", CANDS, [1, 2, 3, 4, 5], identifiers=ids, temperature=-1)


def test_template_from_toml(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text(
        'system = "Be brief."\n'
        "user = '''Items:\n{candidates}\nRequest: {query}\nAnswer {{\"article_number\": n}}.'''\n"
        'candidate = "[{id}] {title}"\nseparator = "\\n"\n'
    )
    t = PromptTemplate.from_file(p)
    req = render_request(t, "hat", CANDS[:2], [2, 1], identifiers=("1", "2"), temperature=0)
    assert req.messages[1].content == (
        "Items:\n[1] Title of item 2\n[2] Title of item 1\nRequest: hat\n"
        'Answer {"article_number": n}.'
    )


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            'system = "s"\nuser = "{candidates} {query} {budget}"\n',
            r"unknown placeholder\(s\) \{budget\}",
        ),
        ('system = "s"\nuser = "{candidates}"\n', r"must contain the placeholder\(s\) \{query\}"),
        (
            'system = "s"\nuser = "{candidates} {query}"\ncolour = "x"\n',
            r"unknown key\(s\) 'colour'",
        ),
        ('user = "{candidates} {query}"\n', "must define `system` and `user`"),
        (
            'system = "s"\nuser = "{candidates} {query}"\ncandidate = "{title}"\n',
            r"placeholder\(s\) \{id\}",
        ),
        ("system = \n", "cannot read prompt template"),
    ],
)
def test_template_file_errors(tmp_path, body, match):
    p = tmp_path / "t.toml"
    p.write_text(body)
    with pytest.raises(ConfigError, match=match):
        PromptTemplate.from_file(p)
