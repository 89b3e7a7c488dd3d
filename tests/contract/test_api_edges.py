"""The API's edges (issue 33): oversized auth and precondition headers get the status of the
check that owns them, the memory routes check the operator's token before the body, HEAD is
GET without a body, path parameters are percent-decoded, a stored name too long for a view
never makes a 500, and every answer says `X-Content-Type-Options: nosniff`. Through the API
Lambda's handler over moto DynamoDB (the memory routes over the in-memory store)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from api_fixtures import ApiClient, FakeContext, api_event

from horcrux.api.app import build_app
from horcrux.echo.ops import ENV_READONLY, ENV_TOKEN
from horcrux.service import GameService
from horcrux.settings import OperatorSettings
from horcrux.store import DynamoDbStore, MemoryStore
from horcrux.store.port import hash_token

pytestmark = pytest.mark.moto

HUMANS = {"seats": {"harry": {"kind": "human", "name": "Ron"}, "voldemort": {"kind": "human"}}}
OPERATOR = "operator-secret-token-of-at-least-some-length"
READER = "read-only-operator-token-of-some-length-too"


def header(reply: Any, name: str) -> str | None:
    for key, value in reply.headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def created(api: ApiClient) -> tuple[str, str]:
    """A two-person game: its id and Harry's token."""
    reply = api.call("POST", "/games", body=HUMANS)
    assert reply.status == 201, reply.body
    return reply.body["game_id"], reply.body["token"]


def event_count(dynamo: DynamoDbStore) -> int:
    return int(dynamo.client.scan(TableName=dynamo.settings.events_table)["Count"])


# ---------------------------------------------------------------- oversized headers
def test_an_authorization_header_over_512_characters_is_a_401(api: ApiClient) -> None:
    game_id, _ = created(api)
    long_auth = {"authorization": "Bearer " + "t" * 600}
    for method, path, body in (
        ("GET", f"/games/{game_id}", None),
        ("GET", f"/games/{game_id}/events", None),
        ("POST", f"/games/{game_id}/moves", {"type": "attack", "location": "x"}),
    ):
        reply = api.call(method, path, body=body, headers=long_auth)
        assert reply.status == 401, (path, reply.body)
        assert reply.body["error"] == "unauthorized"
        assert "607 characters" in reply.body["message"] and "512" in reply.body["message"]
        assert header(reply, "WWW-Authenticate") == "Bearer"


def test_if_match_and_if_none_match_over_512_characters_are_a_400(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    game_id, token = created(api)
    before = event_count(dynamo)
    long_tag = ", ".join(['"1"'] * 200)  # well-formed, but 998 characters
    reply = api.call(
        "POST",
        f"/games/{game_id}/moves",
        body={"type": "attack", "location": "x"},
        token=token,
        headers={"if-match": long_tag},
    )
    assert reply.status == 400, reply.body
    assert reply.body["error"] == "bad_request"
    assert "If-Match is 998 characters" in reply.body["message"]
    assert event_count(dynamo) == before  # nothing written
    reply = api.call("GET", f"/games/{game_id}", headers={"if-none-match": long_tag})
    assert reply.status == 400, reply.body
    assert "If-None-Match is 998 characters" in reply.body["message"]
    # 512 characters exactly is read as before
    at_limit = '"1", ' + " " * (512 - 8) + '"2"'
    assert len(at_limit) == 512
    assert api.call("GET", f"/games/{game_id}", headers={"if-none-match": at_limit}).status == 200


# ---------------------------------------------------------------- memory routes: token first
@pytest.fixture
def memory_app() -> Any:
    settings = OperatorSettings.from_env(
        {ENV_TOKEN: hash_token(OPERATOR), ENV_READONLY: hash_token(READER)}
    )
    return build_app(GameService(MemoryStore()), operator=settings)


def resolve(app: Any, event: dict[str, Any]) -> tuple[int, Any, dict[str, Any]]:
    response = app.resolve(event, FakeContext())
    raw = response.get("body") or ""
    return response["statusCode"], json.loads(raw) if raw else None, response["headers"]


BAD_CORRECTION = {"agent": 7, "surprise": True}


def test_memory_routes_check_the_token_before_the_body(memory_app: Any) -> None:
    for token, status, code in (
        (None, 401, "unauthorized"),
        ("not-the-operator", 403, "forbidden"),
    ):
        event = api_event("POST", "/memory/corrections", body=BAD_CORRECTION, token=token)
        got, body, headers = resolve(memory_app, event)
        assert (got, body["error"]) == (status, code), body
        assert "detail" not in body and "agent" not in body["message"]  # no schema told
        if status == 401:
            assert headers["WWW-Authenticate"] == "Bearer"
    # the read-only token cannot write, whatever the body
    event = api_event("POST", "/memory/corrections", body=BAD_CORRECTION, token=READER)
    got, body, _ = resolve(memory_app, event)
    assert (got, body["error"]) == (403, "forbidden") and "read-only" in body["message"]
    # the operator's token: now the body is read and refused, naming what is wrong
    event = api_event("POST", "/memory/corrections", body=BAD_CORRECTION, token=OPERATOR)
    got, body, _ = resolve(memory_app, event)
    assert (got, body["error"]) == (422, "validation_error"), body
    assert "agent" in body["message"]


def test_memory_reads_check_the_token_before_the_query(memory_app: Any) -> None:
    # no ?opponent= (required): 401 without a token, 422 with the operator's
    got, body, _ = resolve(memory_app, api_event("GET", "/memory/planner"))
    assert (got, body["error"]) == (401, "unauthorized"), body
    got, body, _ = resolve(memory_app, api_event("GET", "/memory/planner", token=READER))
    assert (got, body["error"]) == (422, "validation_error"), body
    assert "opponent" in body["message"]


# ---------------------------------------------------------------- HEAD
def test_head_answers_like_get_without_a_body(api: ApiClient) -> None:
    game_id, token = created(api)
    for path in (f"/games/{game_id}", "/games", f"/games/{game_id}/events", "/openapi.json"):
        got = api.call("GET", path, token=token)
        head = api.call("HEAD", path, token=token)
        assert got.status == 200 and head.status == 200, (path, head.raw)
        assert head.raw == ""
        for name in ("Content-Type", "ETag", "Cache-Control"):
            assert header(head, name) == header(got, name), (path, name)
        assert header(head, "Content-Length") == str(len(got.raw.encode())), path
    missing = api.call("HEAD", "/games/no-such-game")
    assert missing.status == 404 and missing.raw == ""
    assert header(missing, "Cache-Control") == "no-store"
    # a conditional HEAD is a 304 like a conditional GET
    etag = header(api.call("GET", f"/games/{game_id}"), "ETag")
    assert etag is not None
    assert api.call("HEAD", f"/games/{game_id}", headers={"if-none-match": etag}).status == 304
    # HEAD where no GET is: a 405 naming what is allowed
    refused = api.call("HEAD", f"/games/{game_id}/moves")
    assert refused.status == 405 and header(refused, "Allow") == "POST"


# ---------------------------------------------------------------- percent-encoded paths
def test_path_parameters_are_percent_decoded(api: ApiClient, memory_app: Any) -> None:
    game_id, _ = created(api)
    encoded = "".join(f"%{b:02X}" for b in game_id.encode())
    reply = api.call("GET", f"/games/{encoded}")
    assert reply.status == 200, reply.body
    assert reply.body["game_id"] == game_id
    # a brain spec with a colon, URL-encoded as docs/API.md says: read as `planner:robust`
    event = api_event(
        "GET", "/memory/planner%3Arobust", token=OPERATOR, query={"opponent": "reference"}
    )
    got, body, _ = resolve(memory_app, event)
    assert (got, body["error"]) == (422, "unknown_scope"), body
    assert "'planner:robust'" in body["message"] and "%3A" not in body["message"]


def test_a_path_that_is_not_percent_encoded_utf8_is_a_400(api: ApiClient) -> None:
    reply = api.call("GET", "/games/abc%FF%FE")
    assert reply.status == 400, reply.body
    assert reply.body["error"] == "bad_request"
    assert "percent-encoded UTF-8" in reply.body["message"]


# ---------------------------------------------------------------- stored names
def test_a_stored_name_over_32_characters_is_shown_cut_never_a_500(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    reply = api.call("POST", "/games", body={**HUMANS, "seats": {**HUMANS["seats"]}})
    game_id = reply.body["game_id"]
    long_name = "Hermione Jean Granger of Gryffindor House"  # 41 characters
    key = {"pk": {"S": f"GAME#{game_id}"}, "sk": {"S": "SNAPSHOT"}}
    item = dynamo.client.get_item(TableName=dynamo.settings.games_table, Key=key)["Item"]
    assert item["pk"] == key["pk"]
    dynamo.client.update_item(  # as another version, or a hand edit, might have written it
        TableName=dynamo.settings.games_table,
        Key=key,
        UpdateExpression="SET seats.harry.#n = :n, #names.harry = :n",
        ExpressionAttributeNames={"#n": "name", "#names": "names"},
        ExpressionAttributeValues={":n": {"S": long_name}},
    )
    reply = api.call("GET", f"/games/{game_id}")
    assert reply.status == 200, reply.body
    assert reply.body["seats"]["harry"]["name"] == long_name[:32].strip()
    lobby = api.call("GET", "/games", query={"status": "open"})
    assert lobby.status == 200, lobby.body
    entry = next(g for g in lobby.body["games"] if g["game_id"] == game_id)
    assert long_name[:32].strip() in json.dumps(entry)
    assert long_name not in lobby.raw


# ---------------------------------------------------------------- nosniff
def test_every_answer_says_nosniff(api: ApiClient) -> None:
    game_id, _ = created(api)
    replies = [
        api.call("GET", f"/games/{game_id}"),  # 200
        api.call("GET", "/games/no-such-game"),  # 404 from a route
        api.call("TRACE", "/games"),  # 405 before routing
        api.call("POST", "/games", body="x" * 5000),  # 413 before routing
        api.call("HEAD", "/games"),
    ]
    for reply in replies:
        assert header(reply, "X-Content-Type-Options") == "nosniff", reply.status
