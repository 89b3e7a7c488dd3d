"""A double click never plays two turns: `ETag` on the game and on every move, `If-Match`
(412) and `?expected_version=` (409) on a move, `If-None-Match` (304) on a read, and the
Idempotency-Key winning over If-Match on a replay. Through the real API Lambda handler
over moto DynamoDB; AI turns from the turn Lambdas fed by the events table's stream."""

from __future__ import annotations

import io
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from email.message import Message
from typing import Any

import pytest
from api_fixtures import ApiClient, Reply, StreamPump, load_handler

from horcrux.store import DynamoDbStore
from horcrux_tools.local import client as client_module
from horcrux_tools.local.client import ApiError, HorcruxClient
from horcrux_tools.local.play import Session

pytestmark = pytest.mark.moto

HUMAN = {"kind": "human"}
SEARCH = {"type": "search", "location": "hogwarts"}


@pytest.fixture
def pump(dynamo: DynamoDbStore) -> StreamPump:
    return StreamPump(dynamo, {"voldemort": load_handler("voldemort_turn")})


class ResolverClient(ApiClient):
    """Calls the handler module's app (`app.resolve`, what `lambda_handler` calls) without
    the Powertools logger/metrics decorators: their state is per process (one request at
    a time in a Lambda environment), so 40 threads in one process cannot share it."""

    def send(self, event: dict[str, Any], *, who: str | None = None) -> Reply:
        response = self.handler.app.resolve(event, self.context)
        raw = response.get("body") or ""
        return Reply(
            response["statusCode"], json.loads(raw) if raw else None, response["headers"], raw
        )


def header(reply: Reply, name: str) -> str | None:
    for key, value in reply.headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def stored(dynamo: DynamoDbStore, game_id: str) -> tuple[int, int]:
    """(events stored, game_started included; snapshot version)."""
    items = dynamo.raw_items(game_id)
    return len(items) - 1, int(items[0]["v"]["N"])


def vs_ai(api: ApiClient, seed: int = 4) -> tuple[str, str]:
    reply = api.call(
        "POST",
        "/games",
        body={
            "seats": {"harry": HUMAN, "voldemort": {"kind": "ai"}},
            "rules": "classic",
            "seed": seed,
        },
    )
    assert reply.status == 201, reply.body
    return reply.body["game_id"], reply.body["token"]


def move(
    api: ApiClient,
    gid: str,
    token: str,
    body: dict[str, Any] = SEARCH,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
) -> Reply:
    return api.call(
        "POST", f"/games/{gid}/moves", token=token, body=body, headers=headers, query=query
    )


# ---------------------------------------------------------------- ETag
def test_the_game_and_every_move_carry_the_version_as_etag(
    api: ApiClient, pump: StreamPump
) -> None:
    gid, token = vs_ai(api)
    game = api.call("GET", f"/games/{gid}", token=token)
    assert game.status == 200 and header(game, "ETag") == f'"{game.body["version"]}"' == '"0"'
    moved = move(api, gid, token, headers={"If-Match": '"0"'})
    assert moved.status == 200, moved.body
    assert header(moved, "ETag") == '"1"' == f'"{moved.body["game"]["version"]}"'
    pump.pump()  # AI Voldemort answers: version 2
    assert header(api.call("GET", f"/games/{gid}"), "ETag") == '"2"'


# ---------------------------------------------------------------- the double click
def test_a_second_click_after_the_ai_answered_is_a_412_and_writes_nothing(
    api: ApiClient, dynamo: DynamoDbStore, pump: StreamPump
) -> None:
    gid, token = vs_ai(api)
    first = move(api, gid, token, headers={"If-Match": '"0"'})
    assert first.status == 200, first.body
    pump.pump()  # the AI has answered: it is Harry's turn again, version 2
    before = stored(dynamo, gid)
    assert before == (3, 2)  # game_started, two moves
    second = move(api, gid, token, headers={"If-Match": '"0"'})  # the same click, again
    assert second.status == 412, second.body
    assert second.body["error"] == "precondition_failed"
    assert (second.body["version"], second.body["turn"], second.body["to_move"]) == (
        2,
        2,
        "harry",
    )
    assert "version 2" in second.body["message"] and "turn 2" in second.body["message"]
    assert stored(dynamo, gid) == before  # nothing written
    assert header(second, "Cache-Control") == "no-store"


def test_forty_simultaneous_identical_clicks_apply_exactly_one_turn(
    dynamo: DynamoDbStore,
) -> None:
    """40 handlers (one per click, as 40 Lambda environments) all read version 0 before any
    writes, then all commit: the store's conditional write lets one through, and every
    other click, having failed its If-Match there, is a 412 naming version 1.

    moto's in-process backend is not thread-safe (a real DynamoDB transaction is atomic),
    so each DynamoDB call is made under one lock: the calls are atomic, the handlers'
    logic runs concurrently."""
    n = 40
    gid, token = vs_ai(ApiClient(load_handler("api")))
    db_lock = threading.Lock()
    barrier = threading.Barrier(n)
    clients = [ResolverClient(load_handler("api")) for _ in range(n)]
    for client in clients:
        store = client.handler.store
        boto = store.client  # built here, not in 40 threads at once
        real_call: Callable[..., Any] = boto._make_api_call

        def atomic(*args: Any, _real: Callable[..., Any] = real_call) -> Any:
            with db_lock:
                return _real(*args)

        boto._make_api_call = atomic
        real_load = store.load
        waited: list[bool] = []

        def load(game_id: str, _real: Any = real_load, _waited: list[bool] = waited) -> Any:
            snapshot = _real(game_id)
            if not _waited:  # the click's first read: wait until all 40 have read
                _waited.append(True)
                barrier.wait(timeout=30)
            return snapshot

        store.load = load
    replies: list[Reply] = []
    lock = threading.Lock()

    def click(client: ApiClient) -> None:
        reply = move(client, gid, token, headers={"If-Match": '"0"'})
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=click, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(replies) == n
    statuses = sorted(r.status for r in replies)
    assert statuses == [200] + [412] * (n - 1), [r.body for r in replies if r.status != 412]
    for lost in (r for r in replies if r.status == 412):
        assert lost.body["error"] == "precondition_failed"
        assert (lost.body["version"], lost.body["to_move"]) == (1, "voldemort")
    assert stored(dynamo, gid) == (2, 1)  # game_started + one move
    seqs = [int(i["seq"]["N"]) for i in dynamo.raw_items(gid)[1:]]
    assert seqs == [0, 1]


# ---------------------------------------------------------------- If-Match forms
@pytest.mark.parametrize(
    ("value", "status"),
    [
        ('"0"', 200),
        ("*", 200),
        ('W/"0"', 200),
        ('"7", "0"', 200),
        ('"1"', 412),
        ('"abc"', 412),
        ('W/"3"', 412),
    ],
)
def test_if_match_forms(api: ApiClient, dynamo: DynamoDbStore, value: str, status: int) -> None:
    gid, token = vs_ai(api)
    reply = move(api, gid, token, headers={"If-Match": value})
    assert reply.status == status, reply.body
    assert stored(dynamo, gid) == ((2, 1) if status == 200 else (1, 0))
    if status == 412:
        assert reply.body["version"] == 0 and reply.body["to_move"] == "harry"


# (an empty value is an empty list, no precondition: tests/contract/test_api_exact.py)
@pytest.mark.parametrize("value", ["0", "abc", '"0', '"0",,"1"', ","])
def test_a_malformed_if_match_is_a_400_naming_the_form(
    api: ApiClient, dynamo: DynamoDbStore, value: str
) -> None:
    gid, token = vs_ai(api)
    reply = move(api, gid, token, headers={"If-Match": value})
    assert reply.status == 400 and reply.body["error"] == "bad_request", reply.body
    assert "If-Match" in reply.body["message"] and '"7"' in reply.body["message"]
    assert stored(dynamo, gid) == (1, 0)


def test_a_bad_token_is_a_401_before_any_precondition(api: ApiClient) -> None:
    gid, _ = vs_ai(api)
    reply = move(api, gid, "not-a-token", headers={"If-Match": '"9"'})
    assert reply.status == 401 and reply.body["error"] == "unauthorized"


# ---------------------------------------------------------------- ?expected_version=
def test_expected_version_in_the_query_is_a_409_stale_version(
    api: ApiClient, dynamo: DynamoDbStore, pump: StreamPump
) -> None:
    gid, token = vs_ai(api)
    assert move(api, gid, token, query={"expected_version": "0"}).status == 200
    pump.pump()
    stale = move(api, gid, token, query={"expected_version": "0"})
    assert stale.status == 409 and stale.body["error"] == "stale_version", stale.body
    assert (stale.body["version"], stale.body["turn"], stale.body["to_move"]) == (2, 2, "harry")
    assert stored(dynamo, gid) == (3, 2)
    fresh = move(api, gid, token, query={"expected_version": "2"})
    assert fresh.status == 200 and header(fresh, "ETag") == '"3"'
    for bad in ("-1", "x", "true", str(10**6 + 1)):
        reply = move(api, gid, token, query={"expected_version": bad})
        assert reply.status == 422 and "query.expected_version" in reply.body["message"]


# ---------------------------------------------------------------- If-None-Match
def test_if_none_match_with_the_current_etag_is_a_304_without_body(
    api: ApiClient, pump: StreamPump
) -> None:
    gid, token = vs_ai(api)
    same = api.call("GET", f"/games/{gid}", token=token, headers={"If-None-Match": '"0"'})
    assert same.status == 304 and same.raw == ""
    assert header(same, "ETag") == '"0"'
    assert header(same, "Cache-Control") == "no-cache, private"
    assert header(same, "Vary") == "Authorization"
    assert api.call("GET", f"/games/{gid}", headers={"If-None-Match": "*"}).status == 304
    move(api, gid, token)
    pump.pump()
    changed = api.call("GET", f"/games/{gid}", token=token, headers={"If-None-Match": '"0"'})
    assert changed.status == 200 and changed.body["version"] == 2
    assert header(changed, "ETag") == '"2"'
    # a bad token is still a 401, never a 304
    wrong = api.call("GET", f"/games/{gid}", token="nope", headers={"If-None-Match": '"2"'})
    assert wrong.status == 401


# ---------------------------------------------------------------- idempotency wins
def test_a_replayed_idempotency_key_returns_the_first_response_whatever_if_match_says(
    api: ApiClient, dynamo: DynamoDbStore, pump: StreamPump
) -> None:
    gid, token = vs_ai(api)
    keyed = {"If-Match": '"0"', "Idempotency-Key": "click-1"}
    first = move(api, gid, token, headers=keyed)
    assert first.status == 200
    pump.pump()  # the game moved on: If-Match "0" no longer holds
    after = stored(dynamo, gid)
    replay = move(api, gid, token, headers=keyed)
    assert replay.status == 200 and replay.raw == first.raw
    assert header(replay, "ETag") == header(first, "ETag") == '"1"'
    assert stored(dynamo, gid) == after
    # a new key with the stale If-Match is refused
    other = move(api, gid, token, headers={"If-Match": '"0"', "Idempotency-Key": "click-2"})
    assert other.status == 412 and stored(dynamo, gid) == after


# ---------------------------------------------------------------- the terminal client
class _Answer(io.BytesIO):
    def __enter__(self) -> _Answer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def through_handler(
    monkeypatch: pytest.MonkeyPatch, api: ApiClient
) -> list[urllib.request.Request]:
    """`HorcruxClient`'s urllib transport replaced by the API handler itself (in process):
    each request becomes an API Gateway event; every request sent is kept."""
    sent: list[urllib.request.Request] = []

    def urlopen(request: urllib.request.Request, timeout: float = 0) -> _Answer:
        sent.append(request)
        url = urllib.parse.urlsplit(request.full_url)
        query = dict(urllib.parse.parse_qsl(url.query)) or None
        headers = {k.lower(): v for k, v in request.header_items()}
        token = headers.pop("authorization", "")[len("Bearer ") :] or None
        data = request.data
        body = data.decode() if isinstance(data, bytes) else None
        reply = api.call(
            request.get_method(), url.path, body=body, token=token, headers=headers, query=query
        )
        if reply.status >= 400:
            raise urllib.error.HTTPError(
                request.full_url, reply.status, "", Message(), io.BytesIO(reply.raw.encode())
            )
        return _Answer(reply.raw.encode())

    monkeypatch.setattr(client_module.urllib.request, "urlopen", urlopen)
    return sent


def test_the_terminal_client_sends_if_match_and_rereads_on_412(
    monkeypatch: pytest.MonkeyPatch, api: ApiClient, dynamo: DynamoDbStore, pump: StreamPump
) -> None:
    sent = through_handler(monkeypatch, api)
    client = HorcruxClient("http://api.test")
    gid, token = vs_ai(api)
    out = io.StringIO()
    session = Session(client, gid, token, "harry", out=out)
    session.game = client.game(gid, token)
    assert session._command("search hog") is True
    assert sent[-1].get_header("If-match") == '"0"'
    assert session.game["version"] == 1
    pump.pump()  # the AI answered: version 2, but this session still shows version 1
    before = stored(dynamo, gid)
    assert session._command("search azk") is False  # a stale click
    assert sent[-2].get_header("If-match") == '"1"'
    assert "412 precondition_failed" in out.getvalue()
    assert stored(dynamo, gid) == before
    assert session.game["version"] == 2  # read again after the 412
    assert session._command("search azk") is True
    assert sent[-1].get_header("If-match") == '"2"'


def test_the_client_creates_and_joins_a_private_game(
    monkeypatch: pytest.MonkeyPatch, api: ApiClient
) -> None:
    through_handler(monkeypatch, api)
    client = HorcruxClient("http://api.test")
    created = client.create_game(HUMAN, HUMAN, private=True)
    gid, invite = created["game_id"], created["invite"]
    with pytest.raises(ApiError) as refused:
        client.join(gid, "voldemort")
    assert (refused.value.status, refused.value.code) == (403, "invite_required")
    joined = client.join(gid, "voldemort", invite=invite)
    assert joined["seat"] == "voldemort" and joined["game"]["private"] is True
