"""`horcrux play`: a terminal client of the HTTP API.

A person plays one seat (Harry by default) against an AI seat, over HTTP: the board (15
locations with short names), the person's own signal history, the turn, attacks left,
allies and rests; `beliefs` shows the belief map an AI Harry (the planner) would hold on
the same evidence, computed here from the seat's own view (it never sees the truth);
the end prints the replay: where the Horcruxes really were and what Voldemort did.

Commands are read from stdin one per line, so a script can play too (`horcrux play <
moves.txt`). Locations take any unique prefix (`hog`, `gri` is ambiguous, `grin` is not)
or the short names of the board; a location the client cannot resolve is sent as typed,
and the API's answer (422 `unknown location ...`) is shown before asking again.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from horcrux.rules import display_name
from horcrux_tools.local.client import ApiError, ApiUnavailable, HorcruxClient
from horcrux_tools.local.player import player_file, player_key
from horcrux_tools.web.words import (
    brain_sentence,
    fill,
    left_sentence,
    level_of,
    level_sentence,
    pct,
    unsure,
    why_wasted,
    words,
)

Payload = dict[str, Any]

_SHORT = {
    "hogwarts": "HOG",
    "hogsmeade": "HSM",
    "forbidden-forest": "FOR",
    "diagon-alley": "DIA",
    "knockturn-alley": "KNO",
    "gringotts": "GRI",
    "ministry-of-magic": "MIN",
    "azkaban": "AZK",
    "godrics-hollow": "GOD",
    "little-hangleton": "LIT",
    "malfoy-manor": "MAL",
    "grimmauld-place": "GRM",
    "shrieking-shack": "SHR",
    "spinners-end": "SPI",
    "the-burrow": "BUR",
}


def _rule_values(rules: Payload) -> dict[str, object]:
    """The numbers the shared phrases (horcrux_tools.web.words) take from a game's rules."""
    sensor = rules.get("sensor") or {}
    return {
        "d": pct(sensor.get("d", 0.8)),
        "f": pct(sensor.get("f", 0.15)),
        "attacks": rules.get("attacks", 7),
        "decoys": rules.get("decoys", 3),
        "relocations": rules.get("relocations", 3),
        "turns": rules.get("max_turns", 50),
        "horcruxes": rules.get("horcruxes", 3),
    }


def help_text(seat: str, rules: Payload | None = None) -> str:
    """The seat's commands, in words.json's phrases (the page says the same things)."""
    said = words()["help"]
    values = _rule_values(rules or {})
    title = "Harry's moves" if seat == "harry" else "Voldemort's moves"
    lines = [f"{title} (locations: a unique prefix or a short name from the board):"]
    lines += [f"  {cmd:<18}  {fill(text, values)}" for cmd, text in said[seat]]
    lines.append("Other commands:")
    lines += [f"  {cmd:<18}  {fill(text, values)}" for cmd, text in said["common"]]
    return "\n".join(lines)


def guide_text(seat: str, rules: Payload | None = None) -> str:
    """The seat's first-game guide: the page's four sentences."""
    values = _rule_values(rules or {})
    return "\n".join(f"  - {fill(line, values)}" for line in words()["guide"][seat])


def opponent_words(seat: str, info: Payload) -> str:
    """Who plays `seat`, in players' words: an AI's level (or its sentence), or a person."""
    if info.get("kind") != "ai":
        return "a person"
    brain = str(info.get("brain") or "")
    level = level_of(seat, brain)
    if level is not None:
        return f"the {level['label']} AI {seat.capitalize()} ({level_sentence(level).rstrip('.')})"
    return f"an AI {seat.capitalize()} ({brain_sentence(seat, brain) or brain})"


class InputError(ValueError):
    """A command the client cannot even send (unknown command, ambiguous location)."""


# ---------------------------------------------------------------- locations
def short_names(locations: Sequence[str]) -> dict[str, str]:
    """A 3-letter code per location, unique on this board."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for loc in locations:
        code = _SHORT.get(loc) or "".join(c for c in loc if c.isalnum())[:3].upper()
        n = 2
        while code in used:
            code = f"{code[:2]}{n}"
            n += 1
        used.add(code)
        out[loc] = code
    return out


def resolve_location(text: str, locations: Sequence[str]) -> str:
    """The location `text` names: exact name or short name, else a unique prefix of a name
    or of one of its words. Unresolvable text is returned unchanged (the API answers it)."""
    word = text.strip().lower()
    if word in locations:
        return word
    shorts = short_names(locations)
    for loc, code in shorts.items():
        if code.lower() == word:
            return loc
    matches = [loc for loc in locations if loc.startswith(word)]
    if not matches:
        matches = [loc for loc in locations if any(w.startswith(word) for w in loc.split("-"))]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(f"{text!r} is ambiguous: {', '.join(matches)}")
    return word


def parse_action(line: str, seat: str, locations: Sequence[str]) -> Payload:
    """A move's JSON body from a command line (`search hog`, `ron dia kno`, `pass`)."""
    words = line.split()
    if not words:
        raise InputError("type a move, or `help`")
    verb, args = words[0].lower(), words[1:]

    def locs(n: int) -> list[str]:
        if len(args) != n:
            raise InputError(f"`{verb}` takes {n} location{'s' if n > 1 else ''}")
        return [resolve_location(a, locations) for a in args]

    if seat == "harry":
        if verb in ("search", "s"):
            return {"type": "search", "location": locs(1)[0]}
        if verb in ("attack", "a"):
            return {"type": "attack", "location": locs(1)[0]}
        if verb == "ron":
            return {"type": "ally", "ally": "ron", "locations": locs(2)}
        if verb in ("hermione", "dumbledore"):
            return {"type": "ally", "ally": verb, "locations": locs(1)}
    else:
        if verb in ("relocate", "r"):
            a, b = locs(2)
            return {"type": "relocate", "from_location": a, "to_location": b}
        if verb in ("decoy", "d", "plant"):
            return {"type": "plant_decoy", "location": locs(1)[0]}
        if verb in ("pass", "p"):
            if args:
                raise InputError("`pass` takes no location")
            return {"type": "pass"}
    raise InputError(f"unknown command {verb!r}; type `help`")


# ---------------------------------------------------------------- rendering
def describe_action(action: Payload) -> str:
    kind = action.get("type")
    if kind in ("search", "attack"):
        return f"{kind} {action['location']}"
    if kind == "ally":
        return f"{action['ally']} {' + '.join(action['locations'])}"
    if kind == "relocate":
        return f"relocate {action['from_location']} -> {action['to_location']}"
    if kind == "plant_decoy":
        return f"decoy at {action['location']}"
    return str(kind)


def describe_observations(observations: Sequence[Payload]) -> str:
    parts = []
    for o in observations:
        who = "" if o.get("sensor") in (None, "harry") else f" ({o['sensor']})"
        parts.append(f"{o['location']}: {o['outcome']}{who}")
    return "; ".join(parts) or "-"


def signals(history: Sequence[Payload], location: str) -> str:
    """What Harry's history says about one location: `+2 -1 H+1 atk:empty@12 D:decoy@9`."""
    pos = neg = hpos = hneg = 0
    extra: list[str] = []
    for record in history:
        for o in record["observations"]:
            if o["location"] != location:
                continue
            if o["kind"] == "search":
                sharp = o.get("sensor") == "hermione"
                if o["outcome"] == "positive":
                    hpos, pos = (hpos + 1, pos) if sharp else (hpos, pos + 1)
                else:
                    hneg, neg = (hneg + 1, neg) if sharp else (hneg, neg + 1)
            elif o["kind"] == "attack":
                extra.append(f"attack:{o['outcome']}@{record['turn']}")
            else:
                extra.append(f"dumbledore:{o['outcome']}@{record['turn']}")
    parts = []
    if pos or neg:
        parts.append(f"+{pos} -{neg}")
    if hpos or hneg:
        parts.append(f"hermione +{hpos} -{hneg}")
    return "  ".join(parts + extra)


def render_status(game: Payload) -> str:
    view = game["view"]
    rules = view["rules"]
    total = rules.get("horcruxes", 3)
    line = (
        f"Turn {game['turn']}/{rules.get('max_turns', 50)}  |  attacks left "
        f"{view['attacks_left']}  |  Horcruxes destroyed {view['horcruxes_destroyed']}/{total}"
    )
    allies = []
    for name, a in (view.get("allies") or {}).items():
        if a.get("uses_left") == 0:
            state = "used up"
        elif a["available"]:
            state = "ready"
        else:
            state = f"rests {a['rest']}"
        if a.get("uses_left") not in (None, 0):
            state += f" ({a['uses_left']} left)"
        allies.append(f"{name.capitalize()} {state}")
    if allies:
        line += "\nAllies: " + ", ".join(allies)
    if view.get("seat") == "voldemort":
        line += (
            f"\nYour charges: relocations {view['relocations_left']}, decoys {view['decoys_left']}"
        )
    return line


def render_board(game: Payload) -> str:
    view = game["view"]
    locations: list[str] = view["rules"]["locations"]
    codes = short_names(locations)
    truth = view.get("seat") == "voldemort"
    horcruxes = set(view.get("horcrux_locations") or ())
    decoys = set(view.get("decoy_locations") or ())
    title = "Harry's signals" if truth else "your signals"
    lines = [f"  {'':3}  {'location':<18} {'now' if truth else '':<8} {title}"]
    for loc in locations:
        mark = ""
        if truth:
            mark = "HORCRUX" if loc in horcruxes else "decoy" if loc in decoys else ""
        lines.append(
            f"  {codes[loc]:3}  {display_name(loc):<18} {mark:<8} {signals(view['history'], loc)}"
        )
    return "\n".join(lines)


def render_history(game: Payload, own_moves: Sequence[Payload] = ()) -> str:
    view = game["view"]
    by_turn: dict[int, list[str]] = {}
    for record in view["history"]:
        by_turn.setdefault(record["turn"], []).append(
            f"{describe_action(record['action'])} -> "
            f"{describe_observations(record['observations'])}"
        )
    for event in own_moves:
        by_turn.setdefault(event["turn"], []).append(f"you: {describe_action(event['action'])}")
    if not by_turn:
        return "  (nothing yet)"
    who = "Harry: " if view.get("seat") == "voldemort" else ""
    lines = []
    for turn in sorted(by_turn):
        entries = by_turn[turn]
        for i, text in enumerate(entries):
            prefix = f"  t{turn:<3} " if i == 0 else "        "
            lines.append(prefix + (text if text.startswith("you:") else who + text))
    return "\n".join(lines)


@dataclass
class BeliefReport:
    occupancy: dict[str, float]
    entropy: float | None
    suggestion: Payload | None


def planner_belief(view: Payload) -> BeliefReport:
    """The belief map a planner Harry holds on `view`'s history (Harry's own observations
    only, so it carries nothing Harry could not know), and what it would play now."""
    from horcrux.agents import HARRY_BRAINS
    from horcrux.views import HarryView

    public = {k: v for k, v in view.items() if k in HarryView.model_fields}
    public["seat"] = "harry"
    harry = HarryView.model_validate(public)
    brain: Any = HARRY_BRAINS.create("planner", harry.rules)
    suggestion: Payload | None = None
    if harry.phase == "harry":
        suggestion = brain.decide(harry, random.Random(0)).model_dump(mode="json")
    else:
        brain.sync(harry)
    belief = brain.belief
    occupancy = {str(k): float(v) for k, v in belief.occupancy().items()}
    entropy = float(belief.entropy()) if callable(getattr(belief, "entropy", None)) else None
    return BeliefReport(occupancy, entropy, suggestion)


def render_beliefs(game: Payload) -> str:
    view = game["view"]
    try:
        report = planner_belief(view)
    except Exception as exc:  # the planner is optional (numpy); never end the game for it
        return f"  the belief map is unavailable here: {exc}"
    codes = short_names(view["rules"]["locations"])
    truth = view.get("seat") == "voldemort"
    horcruxes = set(view.get("horcrux_locations") or ())
    decoys = set(view.get("decoy_locations") or ())
    head = "what an AI Harry would believe on Harry's evidence (the chance a Horcrux is there)"
    if report.entropy is not None:
        head += f"; {unsure(report.entropy, len(view['rules']['locations']))}"
    lines = [f"  {head}"]
    for loc, p in sorted(report.occupancy.items(), key=lambda kv: (-kv[1], kv[0])):
        bar = "#" * round(p * 30)
        mark = ""
        if truth:
            mark = "  <- HORCRUX" if loc in horcruxes else "  <- decoy" if loc in decoys else ""
        lines.append(f"  {codes.get(loc, '?'):3}  {display_name(loc):<18} {p:5.2f} {bar}{mark}")
    if report.suggestion is not None:
        lines.append(f"  the AI Harry would play: {describe_action(report.suggestion)}")
    return "\n".join(lines)


def render_replay(replay: Payload, seat: str) -> str:
    data = replay["replay"]
    steps: list[Payload] = data["steps"]
    winner = data.get("winner")
    last_turn = steps[-1]["turn"] if steps else 0
    outcome = "you win" if winner == seat else "you lose"
    lines = [
        f"Game over on turn {last_turn}: {str(winner).capitalize()} wins "
        f"({data.get('end_reason')}), {outcome}.",
        f"  seed {data.get('seed')}; the Horcruxes started at {', '.join(steps[0]['horcruxes'])}",
    ]
    vmoves = [s for s in steps if s["actor"] == "voldemort" and s["action"]["type"] != "pass"]
    passes = sum(1 for s in steps if s["actor"] == "voldemort" and s["action"]["type"] == "pass")
    if vmoves:
        lines.append("  Voldemort's moves:")
        lines.extend(f"    t{s['turn']:<3} {describe_action(s['action'])}" for s in vmoves)
    lines.append(f"  Voldemort passed {passes} time{'s' if passes != 1 else ''}")
    attacks = [
        s
        for s in steps
        if s["actor"] == "harry" and s["action"] and s["action"]["type"] == "attack"
    ]
    if attacks:
        lines.append(
            "  Harry's attacks: "
            + ", ".join(
                f"t{s['turn']} {s['action']['location']} {s['observations'][0]['outcome']}"
                for s in attacks
            )
        )
    final = steps[-1]
    left = ", ".join(final["horcruxes"])
    decoys = ", ".join(final["decoys"])
    lines.append(
        f"  at the end: {f'Horcruxes left at {left}' if left else 'no Horcrux left'}"
        f"; {f'decoys at {decoys}' if decoys else 'no decoy standing'}"
    )
    history = replay.get("belief_history") or []
    if history:
        point = history[-1]
        top = ", ".join(f"{t['location']} {t['p']:.2f}" for t in point["top"])
        locations = len(data.get("rules", {}).get("locations") or []) or 15
        lines.append(
            f"  AI Harry's last belief (turn {point['turn']}): "
            f"{unsure(point['entropy'], locations)}; most likely {top}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- the session
@dataclass
class Session:
    """One person's seat in one game, over the API."""

    client: HorcruxClient
    game_id: str
    token: str
    seat: str
    out: TextIO = sys.stdout
    inp: TextIO = sys.stdin
    wait_s: float = 120.0
    echo: bool = False
    ephemeral: bool = False
    """The server is `play --local`'s own: it and its data are gone when this command ends."""
    game: Payload = field(default_factory=dict)
    _shown: int | None = None

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    @property
    def opponent(self) -> str:
        return "voldemort" if self.seat == "harry" else "harry"

    def _read(self, prompt: str) -> str | None:
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        if not line:
            self.say()
            return None
        if self.echo:
            self.out.write(line if line.endswith("\n") else line + "\n")
        return line.strip()

    def _wait_for_me(self) -> None:
        before = self.game
        if self.game["status"] == "open":
            self.say(
                f"Waiting for a player to take the {self.opponent} seat "
                f"(horcrux play --join {self.game_id}) ..."
            )
        else:
            self.say(f"{self.opponent.capitalize()} is thinking ...")
        self.game = self.client.wait(
            self.game_id, self.token, seat=self.seat, timeout_s=self.wait_s
        )
        if self.seat == "voldemort":  # Harry's move and its result are in the view
            history = self.game["view"]["history"]
            old = len(before["view"]["history"])
            for record in history[old:]:
                self.say(
                    f"Harry (turn {record['turn']}): {describe_action(record['action'])} -> "
                    f"{describe_observations(record['observations'])}"
                )
                self._explain(history, record)
        elif self.game["status"] != "over":
            self.say("Voldemort has played his turn (you are never told what he did).")

    def _own_moves(self) -> list[Payload]:
        if self.seat != "voldemort":
            return []
        return [
            e
            for e in self.client.all_events(self.game_id, self.token)
            if e["type"] == "voldemort_moved"
        ]

    def _command(self, line: str) -> bool:
        """Run one line; True when the game should be read again (a move was applied)."""
        word = line.split(maxsplit=1)[0].lower()
        if word in ("help", "h", "?"):
            self.say(help_text(self.seat, self.game["view"]["rules"]))
            return False
        if word == "guide":
            self.say(guide_text(self.seat, self.game["view"]["rules"]))
            return False
        if word == "board":
            self.say(render_board(self.game))
            return False
        if word == "history":
            self.say(render_history(self.game, self._own_moves()))
            return False
        if word in ("beliefs", "belief"):
            self.say(render_beliefs(self.game))
            return False
        locations = self.game["view"]["rules"]["locations"]
        try:
            action = parse_action(line, self.seat, locations)
        except InputError as exc:
            self.say(f"! {exc}")
            return False
        try:
            reply = self.client.move(
                self.game_id,
                self.token,
                action,
                idempotency_key="auto",
                version=self.game.get("version"),  # If-Match: never a turn it did not see
            )
        except ApiError as exc:
            self.say(f"! {exc.status} {exc.code}: {exc.message}")
            if exc.status in (409, 412):  # the game moved on: read it again
                self.game = self.client.game(self.game_id, self.token)
            return False
        self.game = reply["game"]
        event = reply.get("event") or {}
        if self.seat == "harry":
            self.say(f"-> {describe_observations(event.get('observations') or [])}")
            if event.get("observations"):
                self._explain(self.game["view"]["history"], event)
        else:
            self.say(f"-> done: {describe_action(action)}")
        return True

    def _explain(self, history: list[Payload], record: Payload) -> None:
        """After an attack that destroyed nothing: what it can mean, said to this seat."""
        if "turn" not in record:
            return
        sensor = self.game["view"]["rules"].get("sensor") or {}
        said = why_wasted(history, record, self.seat, display_name, sensor.get("f", 0.15))
        if said:
            self.say(f"   {said}")

    def run(self) -> int:
        self.game = self.client.game(self.game_id, self.token)
        mode = "standard" if self.game["rules"] == "standard" else self.game["rules"]
        other = self.game["seats"][self.opponent]
        against = opponent_words(self.opponent, other)
        self.say(
            f"Horcrux Hunt: game {self.game_id}, {mode} rules. "
            f"You are {self.seat.capitalize()} against {against}. "
            "Type `help` for the commands, `guide` for what the rules do."
        )
        if self.game["status"] == "abandoned":  # a game resumed after everyone left it
            mover = self.game["seats"].get(self.game["to_move"] or "", {})
            other = mover.get("name") or (
                "the AI" if mover.get("kind") == "ai" else "the other player"
            )
            voice = "player" if self.game["to_move"] == self.seat else "waiting"
            self.say(left_sentence(voice, other))
        self.say(render_board(self.game))
        while True:
            if self.game["status"] == "over":
                return self._finish()
            if self.game["to_move"] != self.seat:
                self._wait_for_me()
                continue
            if self._shown != self.game["version"]:
                self._shown = self.game["version"]
                self.say()
                self.say(render_status(self.game))
            line = self._read(f"{self.seat} t{self.game['turn']}> ")
            if line is None or line.lower() in ("quit", "exit", "q"):
                self.say(self.left())
                return 0
            if line:
                self._command(line)

    def left(self) -> str:
        """What leaving means: a game on a lasting server can be taken up again with its
        token; `play --local`'s own server (and its data) ends with this command."""
        if self.ephemeral:
            return (
                f"Left game {self.game_id}. It ends here: it was on this command's own local"
                " server, which stops now and takes its data with it (to keep a game, run"
                " `horcrux serve` and `horcrux play` against it)."
            )
        return (
            f"Left game {self.game_id}; it stays on the server. To go on with it: "
            f"horcrux play --api {self.client.base_url} --resume={self.game_id} "
            f"--token={self.token}"
        )

    def _finish(self) -> int:
        self.say()
        self.say(render_status(self.game))
        self.say(render_replay(self.client.replay(self.game_id), self.seat))
        return 0


class NoFreeSeat(Exception):
    """`--join` a game whose human seats are all taken (or that has none)."""


class NotYourGame(Exception):
    """`--resume` with a token that holds no seat of the game."""


def resumed_seat(client: HorcruxClient, game_id: str, token: str) -> str:
    """The seat `token` holds in `game_id` (a 401 from the API if it holds none)."""
    game = client.game(game_id, token)
    seat = game.get("your_seat")
    if seat not in ("harry", "voldemort"):
        raise NotYourGame(f"that token holds no seat of game {game_id}")
    return str(seat)


def start_session(
    client: HorcruxClient,
    *,
    seat: str | None = None,
    rules: str | None = None,
    harry: str | None = None,
    voldemort: str | None = None,
    seed: int | None = None,
    join: str | None = None,
    player_key: str | None = None,
) -> tuple[str, str, str, str | None]:
    """Create a game (the person's seat human, the other an AI; Harry unless `seat` says)
    or join one, taking `seat` or else the game's free seat: (id, token, seat, player id).
    The person plays as `player_key` (their stable id across games) when it is given."""
    if join is not None:
        if seat is None:
            free = client.free_seats(join)
            if not free:
                raise NoFreeSeat(f"game {join} has no free seat to join")
            seat = free[0]
        joined = client.join(join, seat, player_key=player_key)
        player = joined.get("player")
        return str(joined["game_id"]), str(joined["token"]), str(joined["seat"]), player
    seat = seat or "harry"
    ai_brain = voldemort if seat == "harry" else harry
    ai: Payload = {"kind": "ai"}
    if ai_brain:
        ai["brain"] = ai_brain
    human: Payload = {"kind": "human"}
    if player_key is not None:
        human["player_key"] = player_key
    seats = {"harry": human, "voldemort": ai}
    if seat == "voldemort":
        seats = {"harry": ai, "voldemort": human}
    created = client.create_game(seats["harry"], seats["voldemort"], rules=rules, seed=seed)
    return str(created["game_id"]), str(created["token"]), seat, created.get("player")


def play(
    api: str,
    *,
    seat: str | None = None,
    rules: str | None = None,
    harry: str | None = None,
    voldemort: str | None = None,
    seed: int | None = None,
    join: str | None = None,
    resume: tuple[str, str] | None = None,
    out: TextIO | None = None,
    inp: TextIO | None = None,
    err: TextIO | None = None,
    on_ready: Callable[[str], None] | None = None,
    ephemeral: bool = False,
) -> int:
    """`horcrux play` against the API at `api`; the exit status. Without `seat` a new game
    seats the person as Harry, and `join` takes the game's free seat. `ephemeral`: the
    server is this command's own (`--local`), gone when it ends. `resume`: (game id, seat
    token) of a game left earlier: the person goes on in the seat that token holds. `out`,
    `inp`, `err`: the streams (default: the process's, as they are at the call)."""
    out = out or sys.stdout
    inp = inp or sys.stdin
    err = err or sys.stderr
    client = HorcruxClient(api)
    try:
        if resume is not None:
            game_id, token = resume
            seat, player = resumed_seat(client, game_id, token), None
        else:
            game_id, token, seat, player = start_session(
                client,
                seat=seat,
                rules=rules,
                harry=harry,
                voldemort=voldemort,
                seed=seed,
                join=join,
                player_key=player_key(),
            )
        if player:
            print(f"You play as {player} (your id across games; key in {player_file()})", file=out)
        if on_ready is not None:
            on_ready(game_id)
        session = Session(
            client,
            game_id,
            token,
            seat,
            out=out,
            inp=inp,
            echo=not inp.isatty(),
            ephemeral=ephemeral,
        )
        return session.run()
    except ApiUnavailable as exc:
        print(
            f"horcrux play: {exc}\n  start a server with `horcrux serve`, "
            "or play against an embedded one with `horcrux play --local`",
            file=err,
        )
        return 1
    except ApiError as exc:
        print(f"horcrux play: {exc.status} {exc.code}: {exc.message}", file=err)
        return 1
    except (TimeoutError, NoFreeSeat, NotYourGame) as exc:
        print(f"horcrux play: {exc}", file=err)
        return 1


def play_local(**kwargs: Any) -> int:
    """`horcrux play --local`: an embedded server (moto + the API) on a free port; with
    `trace=True` every LLM decision of the AI seat is printed as it is made."""
    from horcrux_tools.local.server import start_stack

    err = kwargs.get("err", sys.stderr)
    trace = kwargs.pop("trace", False)
    print("starting a local server (moto DynamoDB + the API) ...", file=err, flush=True)

    def show(record: Any) -> None:
        from horcrux.decisions import format_trace

        print("\n" + format_trace(record), file=err, flush=True)

    with start_stack("127.0.0.1", 0, on_decision=show if trace else None) as stack:
        stack.serve_in_thread()
        return play(stack.url, ephemeral=True, **kwargs)


__all__ = [
    "InputError",
    "NoFreeSeat",
    "NotYourGame",
    "Session",
    "guide_text",
    "help_text",
    "parse_action",
    "planner_belief",
    "play",
    "play_local",
    "render_beliefs",
    "render_board",
    "render_replay",
    "resolve_location",
    "resumed_seat",
    "short_names",
    "start_session",
]
