from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit.exceptions import InputError
from recaudit.llm import DISCARD_REASONS, ParsedAnswer, parse_answer

IDS = ("1", "2", "3", "4", "5")


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ('{"article_number": 3, "article_title": "x", "recommendation": "y"}', 3),
        ('  \n{"article_number": "5"}\n ', 5),
        ('```json\n{"article_number": 1}\n```', 1),
        ('```\n{"article_number": 2}\n```', 2),
        ('```json {"article_number": 4} ```', 4),
        ('{"article_number": " 2 "}', 2),
        ('{"recommendation": {"nested": 1}, "article_number": 1}', 1),
    ],
)
def test_accepted(text, position):
    assert parse_answer(text, IDS) == ParsedAnswer(position, None)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("I recommend article 3.", "no_json"),
        ('{"article_number": 3, "article_title": "Red', "invalid_json"),
        ("{article_number: 3}", "invalid_json"),
        ('{"article_number": 1} {"article_number": 2}', "multiple_json"),
        ('JSON:\n{"article_number": 1}', "extra_text"),
        ('{"article_number": 1}\nThanks!', "extra_text"),
        ('{"article_number": 1, "article_number": 2}', "duplicate_key"),
        ('{"title": "x"}', "missing_key"),
        ('{"article_number": 2.0}', "invalid_identifier"),
        ('{"article_number": true}', "invalid_identifier"),
        ('{"article_number": [1]}', "invalid_identifier"),
        ('{"article_number": null}', "invalid_identifier"),
        ('{"article_number": 6}', "unknown_identifier"),
        ('{"article_number": "Article 1"}', "unknown_identifier"),
        ('{"article_number": 0}', "unknown_identifier"),
    ],
)
def test_discards(text, reason):
    assert parse_answer(text, IDS) == ParsedAnswer(None, reason)


def test_random_labels_map_to_positions():
    labels = ("K7Q", "B2M", "Z9A")
    assert parse_answer('{"article_number": "B2M"}', labels).position == 2
    assert parse_answer('{"article_number": "b2m"}', labels).discard_reason == "unknown_identifier"


def test_bad_identifiers_raise():
    with pytest.raises(InputError, match="`identifiers` must be distinct non-empty strings"):
        parse_answer("{}", ["1", "1"])


def _check(result: ParsedAnswer) -> None:
    assert (result.position is None) != (result.discard_reason is None)
    if result.position is not None:
        assert 1 <= result.position <= len(IDS)
    else:
        assert result.discard_reason in DISCARD_REASONS


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text):
    _check(parse_answer(text, IDS))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["article_number", "article_title", "x"]), json_values, max_size=3
    ),
    st.text(max_size=3),
    st.text(max_size=3),
    st.booleans(),
)
def test_never_raises_on_json_like_text(obj, before, after, fence):
    body = json.dumps(obj)
    text = f"```json\n{body}\n```" if fence else before + body + after
    result = parse_answer(text, IDS)
    _check(result)
    value = obj.get("article_number")
    if fence and isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5:
        assert result.position == value
