"""Abandoned games at the HTTP API, over both stores (in memory and DynamoDB on moto, the
same clock moved by the test): a running game nobody has moved in for 30 minutes says
`abandoned` in `GET /games/{id}`, leaves `GET /games?status=active` for
`?status=abandoned`, and a seated player's move makes it active again; a move is still one
read and one transaction, and the lobby key of a game moves at most once per 5 minutes.
The terminal client resuming an abandoned game says so in the players' words, and plays."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from api_fixtures import FakeContext, Reply, api_event, as_reply
from conftest import Clock, set_aws_env
from moto import mock_aws
from test_preconditions import through_handler

from horcrux.api.app import build_app
from horcrux.api.idempotency import IdempotentMoves
from horcrux.api.idempotency_memory import MemoryPersistenceLayer
from horcrux.service import GameService
from horcrux.settings import ABANDONED_AFTER_S, HEARTBEAT_S
from horcrux.store import DynamoDbStore, MemoryStore, mapping
from horcrux_tools.local.client import HorcruxClient
from horcrux_tools.local.play import Session
from horcrux_tools.local.tables import create_tables
from horcrux_tools.web.words import left_sentence

TWO_PEOPLE = {"harry": {"kind": "human"}, "voldemort": {"kind": "human"}}
SEARCH = {"type": "search", "location": "hogwarts"}
PASS = {"type": "pass"}
MINUTE = 60


class Api:
    """The API's resolver over one store, both on the test's clock."""

    def __init__(self, store: MemoryStore | DynamoDbStore, clock: Clock) -> None:
        self.store, self.clock = store, clock
        layer = MemoryPersistenceLayer()  # the terminal client sends an Idempotency-Key
        self.app = build_app(
            GameService(store, clock=clock), idempotency=IdempotentMoves(lambda: layer)
        )

    def call(self, method: str, path: str, **kw: Any) -> tuple[int, Any]:
        reply = self.reply(method, path, **kw)
        return reply.status, reply.body

    def reply(self, method: str, path: str, **kw: Any) -> Reply:
        """The answer as `api_fixtures.ApiClient.call` gives it (`through_handler`'s)."""
        return as_reply(self.app.resolve(api_event(method, path, **kw), FakeContext()))

    def game(self, name: str = "Ginny", other: str = "Tom") -> dict[str, str]:
        """A game of two people, both seated, Harry to move: its id and both tokens."""
        status, made = self.call(
            "POST", "/games", body={"seats": TWO_PEOPLE, "rules": "classic", "seed": 5}
        )
        assert status == 201, made
        gid = made["game_id"]
        status, joined = self.call("POST", f"/games/{gid}/seats/voldemort", body={"name": other})
        assert status == 200 and joined["game"]["status"] == "active", joined
        return {"id": gid, "harry": made["token"], "voldemort": joined["token"]}

    def move(self, game: dict[str, str], seat: str) -> tuple[int, Any]:
        body = SEARCH if seat == "harry" else PASS
        return self.call("POST", f"/games/{game['id']}/moves", token=game[seat], body=body)

    def listed(self, status: str, limit: int = 100) -> list[str]:
        """Every game id `GET /games?status=` lists, page after page; each says `status`."""
        ids: list[str] = []
        cursor: str | None = None
        while True:
            query = {"status": status, "limit": str(limit)}
            if cursor is not None:
                query["cursor"] = cursor
            code, page = self.call("GET", "/games", query=query)
            assert code == 200, page
            assert all(g["status"] == status for g in page["games"]), page
            ids += [g["game_id"] for g in page["games"]]
            cursor = page["cursor"]
            if cursor is None:
                return ids

    def status(self, game: dict[str, str], token: str | None = None) -> str:
        code, body = self.call("GET", f"/games/{game['id']}", token=token)
        assert code == 200, body
        return str(body["status"])


@pytest.fixture(params=["memory", "dynamodb"])
def api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    clock = Clock()
    if request.param == "memory":
        yield Api(MemoryStore(clock=clock), clock)
        return
    set_aws_env(monkeypatch)
    with mock_aws():
        store = DynamoDbStore(clock=clock)
        create_tables(store)
        yield Api(store, clock)


def test_a_game_nobody_moves_in_for_30_minutes_is_abandoned_and_leaves_the_lobby(
    api: Api,
) -> None:
    left, played = api.game(), api.game("Luna", "Bella")
    assert api.move(left, "harry")[0] == 200  # Voldemort to move; then nobody moves
    assert sorted(api.listed("active")) == sorted([left["id"], played["id"]])
    for turn in range(7):  # the other game goes on: a move every 5 minutes
        api.clock.now += 5 * MINUTE
        assert api.move(played, "voldemort" if turn % 2 else "harry")[0] == 200
    # 35 minutes since the last move of the first game
    assert api.clock.now - 1_700_000_000 == ABANDONED_AFTER_S + HEARTBEAT_S
    assert api.status(left) == "active"  # its heartbeat is exactly 35 minutes old
    api.clock.now += 1
    for token in (None, left["harry"], left["voldemort"]):  # a spectator and both seats
        assert api.status(left, token) == "abandoned"
    assert api.status(played) == "active"
    assert api.listed("active") == [played["id"]]
    assert api.listed("abandoned") == [left["id"]]
    assert api.listed("open") == [] and api.listed("over") == []
    _, seen = api.call("GET", f"/games/{left['id']}", token=left["voldemort"])
    assert seen["to_move"] == "voldemort" and seen["legal"]  # it may still be played


def test_a_seated_players_move_revives_an_abandoned_game(api: Api) -> None:
    game = api.game()
    assert api.move(game, "harry")[0] == 200
    api.clock.now += 2 * 3600  # two hours later
    assert api.status(game) == "abandoned"
    # out of turn, or not a seat: refused as in any running game, and nothing written
    code, refused = api.move(game, "harry")
    assert (code, refused["error"]) == (409, "not_your_turn")
    code, refused = api.call("POST", f"/games/{game['id']}/moves", body=PASS)
    assert code == 401
    assert api.listed("abandoned") == [game["id"]] and api.status(game) == "abandoned"
    # the seat to move plays: the game is active again, back in the lobby
    code, moved = api.move(game, "voldemort")
    assert code == 200 and moved["game"]["status"] == "active", moved
    assert api.listed("active") == [game["id"]] and api.listed("abandoned") == []
    assert api.status(game, game["harry"]) == "active"
    # and 30 minutes after that move, still active; 35 and a second, abandoned again
    api.clock.now += ABANDONED_AFTER_S
    assert api.status(game) == "active"
    api.clock.now += HEARTBEAT_S + 1
    assert api.listed("abandoned") == [game["id"]]


def test_the_lobby_pages_through_the_active_and_the_abandoned_games(api: Api) -> None:
    games = [api.game(f"p{i}", f"q{i}") for i in range(5)]
    for i, game in enumerate(games):  # moves 0, 10, 20, 30, 40 minutes from now
        api.clock.now = 1_700_000_000 + 10 * MINUTE * i
        assert api.move(game, "harry")[0] == 200
    api.clock.now = 1_700_000_000 + 10 * MINUTE * 3 + ABANDONED_AFTER_S + HEARTBEAT_S
    # the last two games' heartbeats are at most 35 minutes old; the first three's older
    ids = [g["id"] for g in games]
    assert api.listed("active", limit=1) == ids[3:]  # oldest heartbeat first
    assert api.listed("abandoned", limit=2) == ids[:3]
    assert api.listed("abandoned", limit=1) == ids[:3]


def test_a_move_is_one_read_and_one_transaction_and_moves_the_lobby_key_once_per_5_minutes(
    api: Api,
) -> None:
    game = api.game()
    store = api.store
    keys: list[str] = []
    for turn in range(20):  # a move a minute for 20 minutes
        api.clock.now += MINUTE
        to_move = "harry" if turn % 2 == 0 else "voldemort"
        before = dict(store.op_counts)
        assert api.move(game, to_move)[0] == 200
        spent = {op: n - before.get(op, 0) for op, n in store.op_counts.items()}
        assert {op: n for op, n in spent.items() if n} == {"GetItem": 1, "TransactWriteItems": 1}
        keys.append(mapping.lobby_sort_key(store.load(game["id"])))
    # the lobby key (the index entry) changed at minutes 5, 10, 15 and 20 only: 4 index
    # moves in 20 turns
    changes = [i + 1 for i in range(1, len(keys)) if keys[i] != keys[i - 1]]
    assert changes == [5, 10, 15, 20]
    assert keys[0] == f"{1_700_000_000_000:015d}#{game['id']}"  # the creation's, until then
    assert keys[-1] == f"{1_700_001_200_000:015d}#{game['id']}"


def test_the_terminal_resuming_an_abandoned_game_says_so_and_its_move_revives_it(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Transport:  # `through_handler` calls `call`: this resolver's replies
        call = staticmethod(api.reply)

    through_handler(monkeypatch, Transport())  # type: ignore[arg-type]
    game = api.game()
    assert api.move(game, "harry")[0] == 200
    api.clock.now += 3600
    client = HorcruxClient("http://api.test")
    out = io.StringIO()
    resumed = Session(client, game["id"], game["voldemort"], "voldemort", out=out)
    resumed.inp = io.StringIO("quit\n")
    assert resumed.run() == 0
    said = out.getvalue()
    assert left_sentence("player") in said and "30 minutes" in said, said
    assert "abandoned" not in said  # the API's word, not the players'
    assert resumed._command("pass") is True, out.getvalue()[len(said) :]
    assert api.status(game) == "active" and api.listed("active") == [game["id"]]
