"""Views and the events projection: what a seat (or a spectator) may read of a game.

* Seats: a person holds a seat by a bearer token (`secrets.token_urlsafe(32)`, shown once);
  the store keeps only its SHA-256, compared with `hmac.compare_digest`.
* Views: a seat sees `horcrux.views.view_for(state, seat)`; without a token, the spectator's.
* Events: projected per seat (`project_event`): while the game runs Harry and spectators get
  Harry's events only (and `game_started` without the seed and the positions), Voldemort
  gets everything but the seed; after the end everyone may read everything.
"""

from __future__ import annotations

import hmac
from typing import Any

from horcrux import engine
from horcrux.agents.base import HARRY_BRAINS, VOLDEMORT_BRAINS, Registry
from horcrux.agents.legal import legal_harry_actions, legal_voldemort_actions
from horcrux.models import AnyAction, GameStarted, GameState, HarryMoved, Seat
from horcrux.service.errors import NotOver, NotReached, Unauthorized
from horcrux.service.models import (
    EVENTS_PAGE_MAX,
    MAX_TOKEN_CHARS,
    REPLAY_PAGE,
    Authenticated,
    BeliefPointResponse,
    BeliefResponse,
    BeliefTop,
    EventsResponse,
    GameResponse,
    Payload,
    ReplayResponse,
    SeatPublic,
)
from horcrux.store.port import (
    SEATS,
    AnyEvent,
    GameSnapshot,
    GameStore,
    hash_token,
    merge_history,
    read_whole_log,
)
from horcrux.views import build_replay, harry_view, view_for, voldemort_view


# ---------------------------------------------------------------- auth
def seat_of(snapshot: GameSnapshot, token: str | None) -> Seat | None:
    """The seat `token` holds in this game (None without a token); Unauthorized if none."""
    if token is None:
        return None
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise Unauthorized("the bearer token is empty or too long")
    digest = hash_token(token)
    found: Seat | None = None
    for seat in SEATS:  # compare against both seats: no early exit on a match
        stored = snapshot.seats[seat].token_hash
        if stored is not None and hmac.compare_digest(stored, digest):
            found = seat
    if found is None:
        raise Unauthorized(f"the token holds no seat of game {snapshot.game_id}")
    return found


def authenticate(store: GameStore, game_id: str, token: str | None) -> Authenticated:
    """One read of the snapshot and the caller's seat (NotFound, Unauthorized)."""
    snapshot = store.load(game_id)
    return Authenticated(snapshot, seat_of(snapshot, token))


# ---------------------------------------------------------------- projections
def action_seat(action: AnyAction) -> Seat:
    return "harry" if isinstance(action, engine.HARRY_ACTIONS) else "voldemort"


def project_event(event: AnyEvent, seat: Seat | None, *, over: bool) -> Payload | None:
    """The event as `seat` (None: a spectator) may see it; None if hidden from it.

    After the end everyone sees everything. While the game runs, Voldemort sees every
    event but the seed; Harry and spectators see `game_started` with the rules only and
    Harry's own moves with their observations, never Voldemort's moves.
    """
    data = event.model_dump(mode="json")
    if over:
        return data
    if seat == "voldemort":
        data.pop("seed", None)
        return data
    if isinstance(event, GameStarted):
        return {"type": event.type, "seq": event.seq, "turn": event.turn, "rules": data["rules"]}
    if isinstance(event, HarryMoved):
        return data
    return None


def legal_moves(state: GameState, seat: Seat) -> Payload | None:
    """The seat's legal action set now, as JSON (None when it is not its turn)."""
    if state.phase != seat:
        return None
    if seat == "harry":
        h = legal_harry_actions(harry_view(state))
        return {
            "types": list(h.types),
            "locations": list(h.locations),
            "attack": h.attack,
            "allies": dict(h.allies),
        }
    v = legal_voldemort_actions(voldemort_view(state))
    return {
        "types": list(v.types),
        "relocate_from": list(v.relocate_from),
        "relocate_to": list(v.relocate_to),
        "decoy_at": list(v.decoy_at),
    }


def harry_belief(snapshot: GameSnapshot, turn: int | None = None) -> BeliefResponse:
    """What the default AI Harry believes on Harry's public evidence (his view's history:
    never the truth, the decoys or Voldemort's moves); with `turn`, on the records before
    that turn only (the map as it stood when Harry was to move at `turn`: a replay's step).

    `turn` runs from 1 (no record: the prior) to one past Harry's last move (every record:
    the map now); a later one would be a guess: that map does not exist yet (404)."""
    from horcrux.agents import HARRY_BRAINS
    from horcrux.agents.base import DEFAULT_HARRY

    state = snapshot.state
    view = harry_view(state)
    if turn is not None:
        last = view.history[-1].turn + 1 if view.history else 1
        if not 1 <= turn <= last:
            raise NotReached(
                f"no belief for turn {turn} yet: game {snapshot.game_id} has a belief for"
                f" turns 1 to {last}"
            )
        view = view.model_copy(
            update={"history": tuple(r for r in view.history if r.turn < turn), "turn": turn}
        )
    brain: Any = HARRY_BRAINS.create(DEFAULT_HARRY, view.rules)
    brain.sync(view)
    belief = brain.belief
    return BeliefResponse(
        game_id=snapshot.game_id,
        version=snapshot.version,
        turn=state.turn if turn is None else turn,
        brain=DEFAULT_HARRY,
        entropy=round(float(belief.entropy()), 4),
        occupancy={str(k): round(float(v), 4) for k, v in belief.occupancy().items()},
    )


def _brain_used(registry: Registry[Any], spec: str | None) -> str | None:
    """The spec that plays a seat whose stored `spec` is retired, else None."""
    if spec is None:
        return None
    used = registry.resolve(spec)
    return None if used == spec else used


def game_view(snapshot: GameSnapshot, seat: Seat | None, *, now: float) -> GameResponse:
    """The game as `seat` (None: a spectator) sees it at `now` (its status is `abandoned`
    once nobody has moved for `ABANDONED_AFTER_S`: `GameSnapshot.status_at`), with its
    legal moves if it acts (an abandoned game's seats may still move: a move revives it)."""
    state = snapshot.state
    seats = {
        s: SeatPublic(
            kind=snapshot.seats[s].kind,
            taken=not snapshot.seats[s].free,
            brain=snapshot.seats[s].brain,
            brain_used=_brain_used(
                HARRY_BRAINS if s == "harry" else VOLDEMORT_BRAINS, snapshot.seats[s].brain
            ),
            name=snapshot.seats[s].name,
        )
        for s in SEATS
    }
    return GameResponse(
        game_id=snapshot.game_id,
        version=snapshot.version,
        status=snapshot.status_at(now),
        rules=snapshot.rules_name,
        turn=state.turn,
        phase=state.phase,
        to_move=None if state.over else state.phase,
        your_seat=seat,
        seats=seats,
        winner=state.winner,
        end_reason=state.end_reason,
        private=snapshot.private,
        view=view_for(state, seat).model_dump(mode="json"),
        legal=legal_moves(state, seat) if seat is not None else None,
    )


def events(
    store: GameStore, game_id: str, token: str | None, *, after: int = -1, limit: int = 50
) -> EventsResponse:
    """The caller's projection of the log (a page may hold fewer than `limit` events:
    events hidden from the caller are dropped after paging; follow `next_after`)."""
    auth = authenticate(store, game_id, token)
    limit = max(1, min(limit, EVENTS_PAGE_MAX))
    page = store.events(game_id, after=after, limit=limit)
    over = auth.snapshot.state.over
    projected = [project_event(e, auth.seat, over=over) for e in page.events]
    return EventsResponse(
        game_id=game_id,
        your_seat=auth.seat,
        events=[e for e in projected if e is not None],
        next_after=page.next_after,
    )


def replay(store: GameStore, game_id: str) -> ReplayResponse:
    """Every event with the truth after it, and Harry's belief history: after the end."""
    snapshot = store.load(game_id)
    if not snapshot.state.over:
        raise NotOver(
            f"game {game_id} is still running (turn {snapshot.turn}); "
            "the replay is released after the end"
        )
    log = read_whole_log(store, game_id, page=REPLAY_PAGE)
    history = merge_history(snapshot.belief_history, log.belief_history)
    return ReplayResponse(
        game_id=game_id,
        replay=build_replay(log.events).model_dump(mode="json"),
        belief_history=[
            BeliefPointResponse(
                turn=p.turn,
                entropy=p.entropy,
                top=[BeliefTop(location=loc, p=prob) for loc, prob in p.top],
            )
            for p in history
        ],
        decisions=list(log.decisions),
    )


__all__ = [
    "action_seat",
    "authenticate",
    "events",
    "game_view",
    "legal_moves",
    "project_event",
    "replay",
    "seat_of",
]
