"""`horcrux serve` in a subprocess (embedded moto, the API Lambda's handler, AI turns in
process) played over real HTTP: a scripted person through `horcrux play`, a person as
Voldemort through the client module, AI vs AI to the end, and bad input."""

from __future__ import annotations

import io
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from horcrux.rules import LOCATIONS, PRESETS
from horcrux_tools import sim
from horcrux_tools.local.client import ApiError, HorcruxClient
from horcrux_tools.local.play import InputError, parse_action, play, resolve_location, short_names

STARTUP_S = 40.0
GAME_S = 40.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "HORCRUX_DYNAMODB_ENDPOINT", "AWS_PROFILE"):
        env.pop(name, None)  # always the embedded moto: never a real endpoint
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _horcrux(*args: str) -> list[str]:
    return [sys.executable, "-m", "horcrux_tools.cli", *args]


class Served:
    def __init__(self, process: subprocess.Popen[str], url: str, lines: queue.Queue[str]) -> None:
        self.process = process
        self.url = url
        self.lines = lines
        self.client = HorcruxClient(url, timeout_s=20)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    process = subprocess.Popen(
        _horcrux("serve", "--port", "0", "--quiet"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    url = None
    seen: list[str] = []
    deadline = time.monotonic() + STARTUP_S
    try:
        while url is None:  # the port is chosen by the OS: read it from the banner
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no banner from horcrux serve: {seen}") from None
            seen.append(line)
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            url = found.group(1) if found else None
        served = Served(process, url, lines)
        for attempt in range(100):  # readiness: bounded polling of the health route
            try:
                if served.client.health()["ok"]:
                    break
            except Exception:
                time.sleep(min(0.02 * 1.5**attempt, 0.5))
        else:
            raise AssertionError("horcrux serve never became healthy")
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            process.kill()
            process.wait()
    assert process.returncode == 0, seen


# ---------------------------------------------------------------- a person as Harry
HARRY_SCRIPT = """\
help
board
search narnia
search gr
dumbledore gringotts
search hog
hermione grin
beliefs
ron dia kno
history
attack azk
attack hogwarts
attack gringotts
attack the-burrow
attack spinners
attack little
attack malfoy
attack ministry
attack shrieking
"""


def test_a_scripted_person_as_harry_plays_a_whole_game_over_http(served: Served) -> None:
    done = subprocess.run(
        _horcrux("play", "--api", served.url, "--seed", "11", "--rules", "standard"),
        input=HARRY_SCRIPT,
        check=False,
        capture_output=True,
        text=True,
        timeout=GAME_S,
        env=_env(),
    )
    out = done.stdout
    assert done.returncode == 0, (out, done.stderr)
    assert "You are Harry against the Easy AI Voldemort (The rules' own Voldemort" in out
    assert "422 unknown_location: unknown location 'narnia'" in out  # the API's message
    assert "'gr' is ambiguous" in out  # refused by the client, asked again
    assert "the AI Harry would play:" in out and "of the most uncertainty there can be" in out
    assert "t1   dumbledore gringotts -> gringotts:" in out  # the history command
    assert "Game over on turn" in out and "the Horcruxes started at" in out
    running, _, end = out.partition("Game over on turn")
    # while the game ran Harry saw nothing of the truth or of Voldemort's moves
    assert "HORCRUX" not in running and "decoy at " not in running
    assert "relocate " not in running.replace("relocate A B", "")
    game_id = re.search(r"game (\S+), standard rules", out)
    assert game_id is not None
    game = served.client.game(game_id.group(1))
    assert game["status"] == "over" and f"{game['winner'].capitalize()} wins" in end


# ---------------------------------------------------------------- a person as Voldemort
def test_a_person_as_voldemort_against_ai_harry_over_http(served: Served) -> None:
    c = served.client
    created = c.create_game(
        {"kind": "ai", "brain": "planner"}, {"kind": "human"}, rules="standard", seed=5
    )
    gid, token = created["game_id"], created["token"]
    assert created["seat"] == "voldemort"
    moves = 0
    while True:
        game = c.wait(gid, token, seat="voldemort", timeout_s=GAME_S)
        if game["status"] == "over":
            break
        spectator = c.game(gid)  # the truth stays hidden from everyone but Voldemort
        assert "horcrux_locations" not in spectator["view"]
        legal = game["legal"]
        assert legal is not None and game["view"]["horcrux_locations"]
        if legal["decoy_at"] and game["view"]["decoys_left"] and moves % 2 == 0:
            action: dict[str, Any] = {"type": "plant_decoy", "location": legal["decoy_at"][-1]}
        else:
            action = {"type": "pass"}
        reply = c.move(gid, token, action, idempotency_key=f"move-{moves}")
        assert reply["seat"] == "voldemort"
        moves += 1
    assert game["winner"] in ("harry", "voldemort")
    replay = c.replay(gid)
    actors = [s["actor"] for s in replay["replay"]["steps"]]
    assert actors.count("voldemort") == moves
    assert actors.count("harry") in (moves, moves + 1)
    assert replay["belief_history"]  # the AI Harry (planner) kept its belief per turn


# ---------------------------------------------------------------- joining
def test_join_without_a_seat_takes_the_free_one_or_says_there_is_none(served: Served) -> None:
    c = served.client
    created = c.create_game({"kind": "human"}, {"kind": "human"}, rules="classic", seed=3)
    gid = created["game_id"]
    assert created["seat"] == "harry" and c.free_seats(gid) == ["voldemort"]

    def harry_moves(game_id: str) -> None:  # once Voldemort's seat is taken (`on_ready`)
        c.move(game_id, created["token"], {"type": "search", "location": "hogwarts"})

    out, err = io.StringIO(), io.StringIO()
    inp = io.StringIO("quit\n")
    assert play(served.url, join=gid, inp=inp, out=out, err=err, on_ready=harry_moves) == 0
    assert "You are Voldemort against a person" in out.getvalue()
    assert "voldemort t1> " in out.getvalue()  # Voldemort's turn, after Harry's search
    game = c.game(gid)
    assert game["seats"]["voldemort"]["taken"] and c.free_seats(gid) == []
    assert game["status"] == "active"
    # a second player finds no free seat: a clear message, nothing taken
    err = io.StringIO()
    assert play(served.url, join=gid, inp=io.StringIO(""), out=io.StringIO(), err=err) == 1
    assert f"game {gid} has no free seat to join" in err.getvalue()
    # an explicit seat is still asked for as given: the API refuses a taken one
    err = io.StringIO()
    code = play(served.url, join=gid, seat="harry", inp=io.StringIO(""), out=io.StringIO(), err=err)
    assert code == 1 and "409 seat_taken" in err.getvalue()


def test_a_game_left_is_resumed_with_its_id_and_token(served: Served) -> None:
    """Quitting says how to go on; `--resume GAME --token TOKEN` does, in the same seat."""
    out = io.StringIO()
    assert (
        play(
            served.url,
            seat="voldemort",
            rules="classic",
            seed=4,
            inp=io.StringIO("quit\n"),
            out=out,
        )
        == 0
    )
    said = re.search(r"--resume=(\S+) --token=(\S+)", out.getvalue())
    assert said is not None, out.getvalue()
    gid, token = said.groups()
    game = served.client.game(gid, token)
    turn = game["turn"]
    assert game["your_seat"] == "voldemort" and game["status"] == "active"
    again = io.StringIO()
    code = play(served.url, resume=(gid, token), inp=io.StringIO("pass\nquit\n"), out=again)
    assert code == 0, again.getvalue()
    assert f"game {gid}, classic rules. You are Voldemort" in again.getvalue()
    assert served.client.game(gid, token)["turn"] > turn  # the pass was played in that game
    # a token of no seat of that game: a clear message, nothing played
    err = io.StringIO()
    bad = play(
        served.url,
        resume=(gid, "no-such-token-0123456789"),
        inp=io.StringIO(""),
        out=io.StringIO(),
        err=err,
    )
    assert bad == 1 and "401" in err.getvalue()


def test_a_person_keeps_one_player_id_across_games(
    served: Served, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from horcrux.service.models import player_id
    from horcrux_tools.local.player import player_key

    def ids(out: str) -> list[str]:
        return re.findall(r"You play as (player:[0-9a-f]+)", out)

    def session(**kw: Any) -> str:
        out = io.StringIO()
        code = play(served.url, inp=io.StringIO("quit\n"), out=out, err=io.StringIO(), **kw)
        assert code == 0, out.getvalue()
        return out.getvalue()

    first = session(rules="classic", seed=5)
    key_file = tmp_path / "player_key"
    assert key_file.stat().st_mode & 0o777 == 0o600  # a secret: only its owner reads it
    key = key_file.read_text().strip()
    assert key not in first  # never printed
    expected = f"player:{player_id(key)}"
    assert ids(first) == [expected]
    assert player_key() == key  # the same key next time
    # a second game, and a join, as the same person: the same id
    assert ids(session(rules="classic", seed=6)) == [expected]
    other = served.client.create_game({"kind": "human"}, {"kind": "human"}, rules="classic")

    def harry_moves(game_id: str) -> None:  # once the joiner holds Voldemort's seat
        served.client.move(game_id, other["token"], {"type": "search", "location": "hogwarts"})

    assert ids(session(join=other["game_id"], on_ready=harry_moves)) == [expected]
    # another person (another key file): another id
    monkeypatch.setenv("HORCRUX_PLAYER_FILE", str(tmp_path / "someone-else"))
    assert ids(session(rules="classic", seed=7)) != [expected]


def test_a_damaged_player_file_is_replaced_not_sent(tmp_path: Any) -> None:
    from horcrux_tools.local.player import KEY_PATTERN, player_key

    where = tmp_path / "sub" / "player_key"
    where.parent.mkdir()
    where.write_text("not a key!\n")
    key = player_key(where)
    assert KEY_PATTERN.fullmatch(key) and where.read_text().strip() == key


# ---------------------------------------------------------------- AI vs AI
def test_ai_vs_ai_games_created_over_http_finish(served: Served) -> None:
    c = served.client
    seeds = (21, 22)
    games = [
        c.create_game(
            {"kind": "ai", "brain": "planner"},
            {"kind": "ai", "brain": "reference"},
            rules="standard",
            seed=seed,
        )
        for seed in seeds
    ]
    assert all(g["token"] is None and g["seat"] is None for g in games)
    for seed, created in zip(seeds, games, strict=True):
        game = c.wait(created["game_id"], timeout_s=GAME_S)  # bounded polling
        assert game["status"] == "over"
        # the in-process dispatch has the stream's semantics: the simulator's game
        expected = sim.play_game(PRESETS["standard"], seed, "planner", "reference")
        assert (game["winner"], game["end_reason"]) == (expected.winner, expected.end_reason)
        steps = c.replay(created["game_id"])["replay"]["steps"]
        assert sum(1 for s in steps if s["actor"] == "harry") == expected.turns


# ---------------------------------------------------------------- bad input
def _raw(url: str, method: str, body: bytes | None = None, **headers: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_bad_input_over_http_is_a_4xx_with_a_message(served: Served) -> None:
    c = served.client
    created = c.create_game({"kind": "human"}, {"kind": "ai"}, seed=1)
    gid, token = created["game_id"], created["token"]
    moves = f"{served.url}/games/{gid}/moves"
    json_only = {"content-type": "application/json"}
    auth = {"authorization": f"Bearer {token}", **json_only}
    cases = [
        (_raw(moves, "POST", b"{not json", **auth), 400, "invalid_json"),
        (
            _raw(moves, "POST", b'{"type": "search", "location": "x"}', **json_only),
            401,
            "unauthorized",
        ),
        (_raw(moves, "POST", b'{"type": "pass"}', **auth), 403, "wrong_seat"),
        (_raw(f"{served.url}/games/nope", "GET"), 404, "not_found"),
        (_raw(f"{served.url}/nowhere", "GET"), 404, "route_not_found"),
        (_raw(moves, "POST", b'{"type": "search", "location": "narnia"}', **auth), 422, None),
        (_raw(moves, "POST", b'{"type": "fly"}', **auth), 422, "validation_error"),
        (_raw(moves, "POST", b" " * 5000, **auth), 413, "payload_too_large"),
        (_raw(f"{served.url}/games/{gid}/replay", "GET"), 409, "not_over"),
    ]
    for (status, body), want_status, want_code in cases:
        assert status == want_status, body
        assert body["message"], body
        if want_code is not None:
            assert body["error"] == want_code, body
    with pytest.raises(ApiError) as caught:
        c.move(gid, token, {"type": "attack", "location": "narnia"})
    assert caught.value.status == 422 and "narnia" in caught.value.message
    # nothing was written by any of them: Harry is still to move on turn 1
    game = c.game(gid, token)
    assert (game["version"], game["turn"], game["to_move"]) == (0, 1, "harry")


# ---------------------------------------------------------------- the one-command game
def test_play_local_starts_its_own_server() -> None:
    done = subprocess.run(
        _horcrux("play", "--local", "--seed", "2", "--rules", "classic"),
        input="search hogwarts\nboard\nquit\n",
        check=False,
        capture_output=True,
        text=True,
        timeout=GAME_S,
        env=_env(),
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "-> hogwarts:" in done.stdout and "Left game" in done.stdout
    assert "Turn 2/50" in done.stdout  # the AI Voldemort replied
    # the local server and its data end with the command: never "stays on the server"
    assert "stays on the server" not in done.stdout
    assert "takes its data with it" in done.stdout


# ---------------------------------------------------------------- the command parser
def test_commands_take_unique_prefixes_and_short_names() -> None:
    codes = short_names(LOCATIONS)
    assert len(set(codes.values())) == len(LOCATIONS) == 15
    assert resolve_location("hog", LOCATIONS) == "hogwarts"
    assert resolve_location("BUR", LOCATIONS) == "the-burrow"
    assert resolve_location("burrow", LOCATIONS) == "the-burrow"
    assert resolve_location("narnia", LOCATIONS) == "narnia"  # the API will answer it
    with pytest.raises(InputError, match="ambiguous"):
        resolve_location("gr", LOCATIONS)
    assert parse_action("ron dia kno", "harry", LOCATIONS) == {
        "type": "ally",
        "ally": "ron",
        "locations": ["diagon-alley", "knockturn-alley"],
    }
    assert parse_action("relocate azk god", "voldemort", LOCATIONS) == {
        "type": "relocate",
        "from_location": "azkaban",
        "to_location": "godrics-hollow",
    }
    assert parse_action("pass", "voldemort", LOCATIONS) == {"type": "pass"}
    with pytest.raises(InputError):
        parse_action("pass", "harry", LOCATIONS)
    with pytest.raises(InputError):
        parse_action("search", "harry", LOCATIONS)
