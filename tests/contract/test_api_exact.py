"""The contract exact: what the OpenAPI document says is what the server enforces, and
the small cases an outside probe found each answer as the document says. Through the API
Lambda's handler over moto DynamoDB."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from api_fixtures import ApiClient, two_person_game

from horcrux.api.http import ETAGS_PATTERN

pytestmark = pytest.mark.moto

MOVE = {"type": "search", "location": "azkaban"}


def _doc(api: ApiClient) -> Any:
    reply = api.call("GET", "/openapi.json")
    assert reply.status == 200
    return reply.body


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/memory/corrections", "POST"),  # never /memory/{agent} with "corrections"
        ("DELETE", "/memory/corrections", "POST"),
        ("OPTIONS", "/memory/corrections", "POST"),
        ("POST", "/memory/0/items/0/history", "GET, HEAD"),  # never the {verdict} route
        ("OPTIONS", "/memory/0/items/0/history", "GET, HEAD"),
        ("PATCH", "/games", "GET, HEAD, POST"),
        ("OPTIONS", "/games/g1/moves", "POST"),
    ],
)
def test_a_wrong_method_is_405_with_the_paths_own_methods(
    api: ApiClient, method: str, path: str, allow: str
) -> None:
    reply = api.call(method, path)
    assert reply.status == 405, reply.body
    assert reply.body["error"] == "method_not_allowed"
    assert reply.headers["Allow"] == allow
    # the document's operations on that path are exactly the methods allowed (HEAD aside)
    template = {
        "/memory/corrections": "/memory/corrections",
        "/memory/0/items/0/history": "/memory/{agent}/items/{item_id}/history",
        "/games": "/games",
        "/games/g1/moves": "/games/{game_id}/moves",
    }[path]
    documented = {m.upper() for m in _doc(api)["paths"][template]}
    assert documented == set(allow.split(", ")) - {"HEAD"}


def test_a_precondition_naming_no_issued_version_says_so(api: ApiClient) -> None:
    game_id, token = two_person_game(api)
    path = f"/games/{game_id}/moves"
    for tag, named in (
        ('"abc"', "names no version the API issued"),
        ('"9"', "names version 9;"),
        ('"8", "9"', "names versions 8, 9;"),
    ):
        reply = api.call("POST", path, body=MOVE, token=token, headers={"if-match": tag})
        assert reply.status == 412, reply.body
        assert named in reply.body["message"], reply.body["message"]
        assert "version ;" not in reply.body["message"]


@pytest.mark.parametrize("value", ["1.0", "1e0", " 1", "+1", "0x1", ""])
def test_integer_query_parameters_are_decimal_digits(api: ApiClient, value: str) -> None:
    game_id, token = two_person_game(api)
    for path, query in (
        (f"/games/{game_id}/moves", {"expected_version": value}),
        (f"/games/{game_id}/events", {"after": value}),
        (f"/games/{game_id}/events", {"limit": value}),
        ("/games", {"limit": value}),
        (f"/games/{game_id}/belief", {"turn": value}),
    ):
        method = "POST" if path.endswith("/moves") else "GET"
        body = MOVE if method == "POST" else None
        reply = api.call(method, path, body=body, token=token, query=query)
        assert reply.status == 422, (path, query, reply.body)
        assert reply.body["error"] == "validation_error"
    # the digits themselves are accepted, and nothing was moved by the refusals
    assert api.call("GET", f"/games/{game_id}/events", query={"after": "-1"}).status == 200
    moved = api.call(
        "POST",
        f"/games/{game_id}/moves",
        body=MOVE,
        token=token,
        query={"expected_version": "1"},
    )
    assert moved.status == 200, moved.body


def test_the_documents_etag_headers_are_what_the_server_accepts(api: ApiClient) -> None:
    doc = _doc(api)
    headers = {
        p["name"]: p["schema"]
        for path in doc["paths"].values()
        for op in path.values()
        for p in op.get("parameters", [])
        if p["in"] == "header" and p["name"] in ("if-match", "if-none-match")
    }
    assert set(headers) == {"if-match", "if-none-match"}
    game_id, token = two_person_game(api)
    for name, schema in headers.items():
        pattern = schema.get("pattern") or schema["anyOf"][0]["pattern"]
        assert pattern == ETAGS_PATTERN
        for value in ("`", '"7",', '"a,b"', "7", '*, "1"'):
            assert re.search(pattern, value) is None
            method, path = (
                ("GET", f"/games/{game_id}")
                if name == "if-none-match"
                else ("POST", f"/games/{game_id}/moves")
            )
            body = MOVE if method == "POST" else None
            reply = api.call(method, path, body=body, token=token, headers={name: value})
            assert reply.status == 400, (name, value, reply.body)
        for value in ("*", ' W/"1" , "2"', '"x"', "", " "):
            assert re.search(pattern, value) is not None
    # an empty value is an empty list: no condition, as if the header were absent
    read = api.call("GET", f"/games/{game_id}", token=token, headers={"if-none-match": ""})
    assert read.status == 200, read.body
    moved = api.call(
        "POST", f"/games/{game_id}/moves", body=MOVE, token=token, headers={"if-match": " "}
    )
    assert moved.status == 200, moved.body
    json.dumps(doc)  # the document stays plain JSON


def test_the_documents_seat_brains_are_the_registries_seat_brains() -> None:
    """The brain names the document lists per seat are those a seat may name (the LLM
    brains aside: they need a key the deployment may not have)."""
    from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
    from horcrux.api.schemas import HARRY_SEAT_BRAINS, VOLDEMORT_SEAT_BRAINS

    assert list(HARRY_SEAT_BRAINS) == [n for n in HARRY_BRAINS.names(seat_only=True) if n != "llm"]
    assert list(VOLDEMORT_SEAT_BRAINS) == [
        n for n in VOLDEMORT_BRAINS.names(seat_only=True) if n != "llm"
    ]


@pytest.mark.parametrize(
    ("seats", "refused"),
    [
        ({"harry": {"kind": "ai", "name": "Ann"}, "voldemort": {"kind": "human"}}, "no name"),
        ({"harry": {"kind": "human", "brain": "planner"}, "voldemort": {"kind": "ai"}}, "brain"),
        (
            {"harry": {"kind": "human"}, "voldemort": {"kind": "human", "name": "Bo"}},
            "is free",
        ),
    ],
)
def test_seat_combinations_the_document_excludes_are_refused(
    api: ApiClient, seats: dict[str, Any], refused: str
) -> None:
    import jsonschema  # schemathesis's own dependency

    doc = _doc(api)
    schema = {**doc["components"]["schemas"]["CreateGameRequest"], "components": doc["components"]}
    validator = jsonschema.Draft202012Validator(schema)
    body = {"seats": seats}
    assert not validator.is_valid(body)  # the document refuses it, and so does the server
    reply = api.call("POST", "/games", body=body)
    assert reply.status == 422 and refused in reply.body["message"], reply.body
    allowed = {"seats": {"harry": {"kind": "human", "name": "Ann"}, "voldemort": {"kind": "ai"}}}
    assert validator.is_valid(allowed)
    assert api.call("POST", "/games", body=allowed).status == 201


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"type": "search", "location": "Hogwarts"}, "unknown_location"),
        ({"type": "ally", "ally": "ron", "locations": ["hogwarts"]}, "validation_error"),
        ({"type": "ally", "ally": "ron", "locations": ["azkaban", "azkaban"]}, None),
        ({"type": "ally", "ally": "hermione", "locations": ["azkaban", "hogwarts"]}, None),
    ],
)
def test_moves_the_document_refuses_the_server_refuses(
    api: ApiClient, body: dict[str, Any], code: str | None
) -> None:
    import jsonschema

    doc = _doc(api)
    operation = doc["paths"]["/games/{game_id}/moves"]["post"]
    schema = {
        **operation["requestBody"]["content"]["application/json"]["schema"],
        "components": doc["components"],
    }
    validator = jsonschema.Draft202012Validator(schema)
    assert not validator.is_valid(body)
    assert validator.is_valid({"type": "search", "location": "hogwarts"})
    game_id, token = two_person_game(api)
    reply = api.call("POST", f"/games/{game_id}/moves", body=body, token=token)
    assert reply.status == 422, reply.body
    if code is not None:
        assert reply.body["error"] == code


def test_a_name_the_document_refuses_the_server_refuses(api: ApiClient) -> None:
    from horcrux.service.models import NAME_PATTERN

    doc = _doc(api)
    assert json.dumps(NAME_PATTERN) in json.dumps(doc)
    for name in ("", "   ", "<b>", "a\tb", "x" * 33):
        assert re.search(NAME_PATTERN, name) is None
        seats = {"harry": {"kind": "human", "name": name}, "voldemort": {"kind": "ai"}}
        reply = api.call("POST", "/games", body={"seats": seats})
        assert reply.status == 422 and "body.seats.harry.name" in reply.body["message"]
    for name in ("Ann", " O'Neil-2 ", "Zoë 漢"):
        assert re.search(NAME_PATTERN, name) is not None
        seats = {"harry": {"kind": "human", "name": name}, "voldemort": {"kind": "ai"}}
        assert api.call("POST", "/games", body={"seats": seats}).status == 201
