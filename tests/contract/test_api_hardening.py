"""The API never answers 500 to a client's mistake: bodies in other encodings, too deep,
of another content type; methods no route has; loose types and unbounded numbers; caching
headers; private games joined with an invite code. Through the real API Lambda handler
over moto DynamoDB; every refusal is checked to write nothing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from api_fixtures import ApiClient, api_event

from horcrux.store import DynamoDbStore

pytestmark = pytest.mark.moto

HUMAN = {"kind": "human"}
AI = {"kind": "ai"}
CREATE = {"seats": {"harry": HUMAN, "voldemort": AI}, "rules": "classic", "seed": 3}
CREATE_TEXT = json.dumps(CREATE)
MAX_JSON_DEPTH = 32  # horcrux.api.http.MAX_JSON_DEPTH (checked below)


def stored_items(dynamo: DynamoDbStore) -> int:
    games = dynamo.client.scan(TableName=dynamo.settings.games_table)["Count"]
    events = dynamo.client.scan(TableName=dynamo.settings.events_table)["Count"]
    return int(games) + int(events)


def raw(
    api: ApiClient,
    method: str,
    path: str,
    body: bytes | str | None,
    content_type: str | None = "application/json",
) -> Any:
    """A request with exactly these body bytes (base64, as API Gateway sends binary)."""
    import base64

    event = api_event(method, path)
    event["headers"].pop("content-type", None)
    if content_type is not None:
        event["headers"]["content-type"] = content_type
    if body is not None:
        data = body.encode() if isinstance(body, str) else body
        event["body"] = base64.b64encode(data).decode()
        event["isBase64Encoded"] = True
    return api.send(event)


def header(reply: Any, name: str) -> str | None:
    for key, value in reply.headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


# ---------------------------------------------------------------- encodings
@pytest.mark.parametrize(
    ("data", "named"),
    [
        (CREATE_TEXT.encode("utf-16"), "UTF-16 (little-endian BOM)"),
        (CREATE_TEXT.encode("utf-16-le"), "UTF-16 (little-endian)"),
        (CREATE_TEXT.encode("utf-16-be"), "UTF-16 (big-endian)"),
        (b"\xfe\xff" + CREATE_TEXT.encode("utf-16-be"), "UTF-16 (big-endian BOM)"),
        (CREATE_TEXT.encode("utf-32"), "UTF-32 (little-endian BOM)"),
        (CREATE_TEXT.encode("utf-32-le"), "UTF-32 (little-endian)"),
        (CREATE_TEXT.encode("utf-32-be"), "UTF-32 (big-endian)"),
        (CREATE_TEXT.encode("utf-8-sig"), "UTF-8 with a byte order mark"),
        (b'{"seats": "\xe9"}', "not UTF-8 text (byte 11)"),
    ],
)
def test_a_body_not_in_utf8_is_a_400_naming_its_encoding(
    api: ApiClient, dynamo: DynamoDbStore, data: bytes, named: str
) -> None:
    reply = raw(api, "POST", "/games", data)
    assert reply.status == 400, reply.body
    assert reply.body["error"] == "invalid_body"
    assert named in reply.body["message"]
    assert stored_items(dynamo) == 0


# ---------------------------------------------------------------- depth
def test_json_nested_2000_deep_inside_4kb_is_a_400_not_a_500(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    for deep in ("[" * 2000 + "]" * 2000, '{"a":' * 600 + "1" + "}" * 600, "[" * 4000):
        assert len(deep) <= 4096
        reply = raw(api, "POST", "/games", deep)
        assert reply.status == 400, reply.body
        assert reply.body["error"] == "invalid_json"
        assert f"nested deeper than {MAX_JSON_DEPTH}" in reply.body["message"]
    assert stored_items(dynamo) == 0


def test_the_depth_limit_itself_and_brackets_inside_strings(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    from horcrux.api import http

    assert http.MAX_JSON_DEPTH == MAX_JSON_DEPTH
    json_depth = http.json_depth
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    over = "[" + at_limit + "]"
    assert json_depth(at_limit) == MAX_JSON_DEPTH
    assert json_depth(over) == MAX_JSON_DEPTH + 1
    # brackets in strings (with escaped quotes and backslashes) are not nesting
    quoted = json.dumps({"a": '\\"[[[[' + "[" * 100 + '\\\\"{{{{'})
    assert json_depth(quoted) == 1
    assert raw(api, "POST", "/games", at_limit).body["error"] == "validation_error"
    assert raw(api, "POST", "/games", over).body["error"] == "invalid_json"
    body = dict(CREATE, rules="[" * 300)
    reply = raw(api, "POST", "/games", json.dumps(body))
    assert reply.status == 422 and reply.body["error"] == "validation_error", reply.body
    assert stored_items(dynamo) == 0


# ---------------------------------------------------------------- content types
@pytest.mark.parametrize(
    "content_type",
    [
        "APPLICATION/JSON",
        "application/json; charset=utf-8",
        "Application/Json;Charset=UTF-8",
        'application/json; charset="utf-8"',
        "application/merge-patch+json",
        "application/vnd.horcrux+json; charset=utf-8",
        "application/x-www-form-urlencoded",
        "text/plain;charset=UTF-8",
        None,
    ],
)
def test_json_is_accepted_under_every_json_content_type(
    api: ApiClient, content_type: str | None
) -> None:
    reply = raw(api, "POST", "/games", CREATE_TEXT, content_type)
    assert reply.status == 201, reply.body
    assert reply.body["seat"] == "harry"


@pytest.mark.parametrize(
    ("content_type", "named"),
    [
        ("multipart/form-data; boundary=xyz", "'multipart/form-data'"),
        ("application/xml", "'application/xml'"),
        ("text/html", "'text/html'"),
        ("application/+json", "'application/+json'"),
        ("application/json; charset=iso-8859-1", "charset 'iso-8859-1'"),
        ("text/plain; charset=utf-16", "charset 'utf-16'"),
    ],
)
def test_another_content_type_is_a_415_naming_it_and_what_is_accepted(
    api: ApiClient, dynamo: DynamoDbStore, content_type: str, named: str
) -> None:
    reply = raw(api, "POST", "/games", CREATE_TEXT, content_type)
    assert reply.status == 415, reply.body
    assert reply.body["error"] == "unsupported_media_type"
    assert named in reply.body["message"]
    if "charset" not in named:
        assert "application/json" in reply.body["message"]
    assert stored_items(dynamo) == 0


# ---------------------------------------------------------------- methods
@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("TRACE", "/games", "GET, HEAD, POST"),
        ("CONNECT", "/games/abc", "GET, HEAD"),
        ("PUT", "/games/abc/moves", "POST"),
        ("DELETE", "/games/abc/seats/harry", "POST"),
        ("POST", "/openapi.json", "GET, HEAD"),
        ("POST", "/memory/planner", "DELETE, GET, HEAD"),
    ],
)
def test_a_method_the_path_lacks_is_a_json_405_with_allow(
    api: ApiClient, dynamo: DynamoDbStore, method: str, path: str, allow: str
) -> None:
    reply = raw(api, method, path, CREATE_TEXT)
    assert reply.status == 405, reply.body
    assert reply.body["error"] == "method_not_allowed"
    assert header(reply, "Allow") == allow
    assert method in reply.body["message"] and allow in reply.body["message"]
    assert stored_items(dynamo) == 0


@pytest.mark.parametrize("method", ["TRACE", "GET", "POST"])
def test_a_path_no_route_has_is_a_json_404(api: ApiClient, method: str) -> None:
    reply = raw(api, method, "/nowhere/at/all", None)
    assert reply.status == 404 and reply.body["error"] == "route_not_found", reply.body
    assert f"{method} /nowhere/at/all" in reply.body["message"]
    assert header(reply, "Content-Type") == "application/json"


# ---------------------------------------------------------------- strict types and bounds
@pytest.mark.parametrize("seed", [True, "5", 1.5, -1.0, -1, 2**53, 2**63 - 1, 1e300])
def test_a_seed_that_is_not_a_small_enough_integer_is_refused(
    api: ApiClient, dynamo: DynamoDbStore, seed: Any
) -> None:
    reply = api.call("POST", "/games", body=dict(CREATE, seed=seed))
    assert reply.status == 422, reply.body
    assert reply.body["error"] == "validation_error"
    assert "body.seed" in reply.body["message"]
    assert stored_items(dynamo) == 0


def test_a_seed_with_no_fraction_is_the_integer_it_is(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    """JSON Schema's `integer` is a number with no fraction: 7.0 is the seed 7."""
    whole = api.call("POST", "/games", body=dict(CREATE, seed=7.0))
    plain = api.call("POST", "/games", body=dict(CREATE, seed=7))
    assert whole.status == plain.status == 201, whole.body
    seeds = {dynamo.load(r.body["game_id"]).state.seed for r in (whole, plain)}
    assert seeds == {7}


def test_the_largest_seed_plays_and_the_schema_shows_it_exactly(api: ApiClient) -> None:
    reply = api.call("POST", "/games", body=dict(CREATE, seed=2**53 - 1))
    assert reply.status == 201, reply.body
    doc = api.call("GET", "/openapi.json")
    seed = doc.body["components"]["schemas"]["CreateGameRequest"]["properties"]["seed"]
    assert seed["anyOf"][0] == {"type": "integer", "maximum": 9007199254740991, "minimum": 0}
    assert '"maximum":9007199254740991,' in doc.raw
    assert "9.22" not in doc.raw and "9007199254740991.0" not in doc.raw


def test_events_after_and_expected_version_are_bounded(api: ApiClient) -> None:
    gid = api.call("POST", "/games", body=CREATE).body["game_id"]
    assert api.call("GET", f"/games/{gid}/events", query={"after": str(10**6)}).status == 200
    for after in (str(10**6 + 1), str(10**30)):
        reply = api.call("GET", f"/games/{gid}/events", query={"after": after})
        assert reply.status == 422 and "query.after" in reply.body["message"], reply.body
    doc = api.call("GET", "/openapi.json").body
    params = doc["paths"]["/games/{game_id}/events"]["get"]["parameters"]
    after_schema = next(p for p in params if p["name"] == "after")["schema"]
    assert after_schema["maximum"] == 10**6
    moves = doc["paths"]["/games/{game_id}/moves"]["post"]["parameters"]
    expected = next(p for p in moves if p["name"] == "expected_version")["schema"]
    # an optional parameter is documented as its type (left out, never sent as `null`)
    assert expected["type"] == "integer" and "anyOf" not in expected
    assert (expected["minimum"], expected["maximum"]) == (0, 10**6)


def test_the_move_schemas_require_their_type(api: ApiClient) -> None:
    doc = api.call("GET", "/openapi.json").body
    body = doc["paths"]["/games/{game_id}/moves"]["post"]["requestBody"]["content"]
    refs = body["application/json"]["schema"]["oneOf"]
    names = [r["$ref"].rsplit("/", 1)[1] for r in refs]
    assert len(names) == 6
    schemas = doc["components"]["schemas"]
    for name in names:
        assert "type" in schemas[name]["required"], name
    assert set(schemas["SearchMove"]["required"]) == {"type", "location"}


# ---------------------------------------------------------------- caching
def test_tokens_and_errors_are_no_store_and_views_are_private(api: ApiClient) -> None:
    created = api.call(
        "POST", "/games", body=dict(CREATE, seats={"harry": HUMAN, "voldemort": HUMAN})
    )
    assert created.status == 201
    assert header(created, "Cache-Control") == "no-store"
    gid = created.body["game_id"]
    joined = api.call("POST", f"/games/{gid}/seats/voldemort")
    assert joined.status == 200 and header(joined, "Cache-Control") == "no-store"
    for reply in (
        api.call("POST", f"/games/{gid}/seats/voldemort"),  # 409
        api.call("GET", "/games/nope"),  # 404
        api.call("GET", f"/games/{gid}", token="wrong"),  # 401
        raw(api, "POST", "/games", b"\xff"),  # 400 before routing
        raw(api, "TRACE", "/games", None),  # 405 before routing
    ):
        assert reply.status >= 400 and header(reply, "Cache-Control") == "no-store", reply
    moved = api.call(
        "POST",
        f"/games/{gid}/moves",
        token=created.body["token"],
        body={"type": "search", "location": "hogwarts"},
    )
    assert moved.status == 200 and header(moved, "Cache-Control") == "no-store"
    for path in (f"/games/{gid}", f"/games/{gid}/events"):
        view = api.call("GET", path, token=created.body["token"])
        assert view.status == 200
        assert header(view, "Cache-Control") == "no-cache, private"
        assert header(view, "Vary") == "Authorization"


# ---------------------------------------------------------------- private games
def test_a_private_game_is_unlisted_and_joined_with_its_invite_only(
    api: ApiClient, dynamo: DynamoDbStore
) -> None:
    public = api.call("POST", "/games", body={"seats": {"harry": HUMAN, "voldemort": HUMAN}})
    assert public.status == 201 and "invite" not in public.body
    created = api.call(
        "POST", "/games", body={"seats": {"harry": HUMAN, "voldemort": HUMAN}, "private": True}
    )
    assert created.status == 201, created.body
    gid, invite = created.body["game_id"], created.body["invite"]
    assert isinstance(invite, str) and len(invite) >= 22
    assert created.body["game"]["private"] is True
    assert public.body["game"]["private"] is False

    listed = api.call("GET", "/games", query={"status": "open"}).body["games"]
    assert [g["game_id"] for g in listed] == [public.body["game_id"]]

    before = dynamo.raw_items(gid)
    for query, code in (
        (None, "invite_required"),
        ({"invite": "not-the-code"}, "wrong_invite"),
        ({"invite": public.body["game_id"]}, "wrong_invite"),
    ):
        reply = api.call("POST", f"/games/{gid}/seats/voldemort", query=query)
        assert reply.status == 403 and reply.body["error"] == code, reply.body
        assert gid in reply.body["message"]
        assert "token" not in reply.body
    assert dynamo.raw_items(gid) == before  # nothing written

    joined = api.call("POST", f"/games/{gid}/seats/voldemort", query={"invite": invite})
    assert joined.status == 200, joined.body
    assert joined.body["seat"] == "voldemort" and joined.body["token"]
    # the code is stored only as its SHA-256, never in clear
    snapshot = dynamo.raw_items(gid)[0]
    assert snapshot["inv"]["S"] == hashlib.sha256(invite.encode()).hexdigest()
    assert invite not in json.dumps(snapshot, default=str)
    # still unlisted once active (the history lists public games only)
    for status in ("open", "active"):
        games = api.call("GET", "/games", query={"status": status}).body["games"]
        assert gid not in [g["game_id"] for g in games]
    # the invite is never shown again, and the seat is taken
    view = api.call("GET", f"/games/{gid}", token=joined.body["token"])
    assert invite not in view.raw and view.body["private"] is True
    again = api.call("POST", f"/games/{gid}/seats/voldemort", query={"invite": invite})
    assert again.status == 409 and again.body["error"] == "seat_taken"


def test_a_public_game_is_joined_as_before_whatever_invite_is_sent(api: ApiClient) -> None:
    created = api.call("POST", "/games", body={"seats": {"harry": HUMAN, "voldemort": HUMAN}})
    gid = created.body["game_id"]
    joined = api.call("POST", f"/games/{gid}/seats/voldemort", query={"invite": "anything"})
    assert joined.status == 200 and joined.body["seat"] == "voldemort"


@pytest.mark.parametrize("private", ["true", 1, "yes", None])
def test_private_must_be_a_boolean(api: ApiClient, dynamo: DynamoDbStore, private: Any) -> None:
    reply = api.call("POST", "/games", body=dict(CREATE, private=private))
    assert reply.status == 422 and "body.private" in reply.body["message"], reply.body
    assert stored_items(dynamo) == 0
