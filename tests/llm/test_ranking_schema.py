"""The ranking answer's JSON schema agrees with the strict ranking parser: every
answer the schema admits parses to the same permutation, and the schema refuses the
answers the parser discards (checked with the independent ``jsonschema`` validator)."""

import itertools
import json

import pytest

from recaudit.exceptions import InputError
from recaudit.llm import parse_ranking, ranking_schema


def test_schema_shape() -> None:
    schema = ranking_schema(["3", "1", "2"])
    ranking = schema["properties"]["ranking"]  # type: ignore[index]
    assert ranking["minItems"] == ranking["maxItems"] == 3
    assert ranking["items"]["enum"] == [3, 1, 2]  # digit identifiers as numbers
    assert schema["required"] == ["ranking"]
    assert ranking_schema(["b", "a"])["properties"]["ranking"]["items"]["enum"] == ["b", "a"]  # type: ignore[index]


@pytest.mark.parametrize("ids", [["1", "2", "3"], ["Q", "K", "Z"]])
def test_every_admitted_answer_parses(ids: list[str]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = ranking_schema(ids)
    values = schema["properties"]["ranking"]["items"]["enum"]  # type: ignore[index]
    for perm in itertools.permutations(range(3)):
        answer = {"ranking": [values[i] for i in perm]}
        jsonschema.validate(answer, schema)
        assert parse_ranking(json.dumps(answer), ids).positions == tuple(i + 1 for i in perm)


@pytest.mark.parametrize("answer, reason", [
    ({"ranking": [3, 3, 2]}, "duplicate_identifier"),
    ({"ranking": [3, 1]}, "incomplete"),
    ({"ranking": [3, 1, 4]}, "unknown_identifier"),
    ({"order": [3, 1, 2]}, "missing_key"),
])
def test_schema_refuses_what_the_parser_discards(answer: dict[str, object], reason: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    ids = ["1", "2", "3"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(answer, ranking_schema(ids))
    assert parse_ranking(json.dumps(answer), ids).discard_reason == reason


@pytest.mark.parametrize("ids", [[], ["1", "1"], ["", "2"]])
def test_bad_identifiers(ids: list[str]) -> None:
    with pytest.raises(InputError, match="`identifiers`"):
        ranking_schema(ids)
