"""A client of the HTTP API (docs/API.md) on the standard library's `urllib.request`.

Every error answer becomes an `ApiError` carrying the API's `status`, `code` and `message`;
a server that cannot be reached is an `ApiUnavailable`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

Payload = dict[str, Any]
DEFAULT_API = "http://127.0.0.1:8000"


class ApiError(Exception):
    """An error answer of the API: `{"error": code, "message": text, ...}`."""

    def __init__(self, status: int, code: str, message: str, body: Payload | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body: Payload = body or {}


class ApiUnavailable(Exception):
    """The API could not be reached (connection refused, timeout, DNS)."""


class HorcruxClient:
    """The routes of the API, one method each; `token` is a seat's bearer token."""

    def __init__(self, base_url: str = DEFAULT_API, *, timeout_s: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    # ------------------------------------------------------------ transport
    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        token: str | None = None,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One call; the decoded JSON answer, or `ApiError` / `ApiUnavailable`."""
        url = self.base_url + path
        pairs = {k: str(v) for k, v in (query or {}).items() if v is not None}
        if pairs:
            url += "?" + urllib.parse.urlencode(pairs)
        data = None
        sent: dict[str, str] = {"accept": "application/json", **(headers or {})}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent.setdefault("content-type", "application/json")
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, data=data, headers=sent, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            raise _api_error(exc.code, raw) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiUnavailable(f"cannot reach {self.base_url}: {reason}") from None
        return json.loads(raw) if raw else None

    # ------------------------------------------------------------ routes
    def health(self) -> Payload:
        """The local server's `/healthz` (not a route of the deployed API)."""
        result: Payload = self.request("GET", "/healthz")
        return result

    def create_game(
        self,
        harry: Mapping[str, Any],
        voldemort: Mapping[str, Any],
        *,
        rules: str | None = None,
        seed: int | None = None,
        private: bool = False,
    ) -> Payload:
        """`POST /games`: `{game_id, seat, token, game}` (the token is shown once; a
        `private` game's answer adds its `invite` code, shown once too)."""
        body: Payload = {"seats": {"harry": dict(harry), "voldemort": dict(voldemort)}}
        if rules is not None:
            body["rules"] = rules
        if seed is not None:
            body["seed"] = seed
        if private:
            body["private"] = True
        result: Payload = self.request("POST", "/games", body=body)
        return result

    def lobby(self, *, limit: int = 20, cursor: str | None = None) -> Payload:
        result: Payload = self.request(
            "GET", "/games", query={"status": "open", "limit": limit, "cursor": cursor}
        )
        return result

    def join(
        self,
        game_id: str,
        seat: str,
        *,
        invite: str | None = None,
        player_key: str | None = None,
    ) -> Payload:
        """`POST /games/{id}/seats/{seat}` (a private game's with `?invite=`), as the player
        of `player_key` if given."""
        body = {"player_key": player_key} if player_key is not None else None
        result: Payload = self.request(
            "POST", f"/games/{_q(game_id)}/seats/{_q(seat)}", body=body, query={"invite": invite}
        )
        return result

    def free_seats(self, game_id: str) -> list[str]:
        """The human seats of a game no one has taken yet, Harry's first (one read)."""
        seats: Payload = self.game(game_id)["seats"]
        return [
            name
            for name in ("harry", "voldemort")
            if seats[name]["kind"] == "human" and not seats[name]["taken"]
        ]

    def game(self, game_id: str, token: str | None = None) -> Payload:
        result: Payload = self.request("GET", f"/games/{_q(game_id)}", token=token)
        return result

    def move(
        self,
        game_id: str,
        token: str,
        action: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        version: int | None = None,
    ) -> Payload:
        """`POST /games/{id}/moves`; pass `idempotency_key="auto"` for a fresh key and
        `version` (the game's version you last saw) to send `If-Match`: the move is then
        refused (412 `precondition_failed`) if the game has moved on."""
        headers: dict[str, str] = {}
        if version is not None:
            headers["if-match"] = f'"{version}"'
        if idempotency_key is not None:
            key = uuid.uuid4().hex if idempotency_key == "auto" else idempotency_key
            headers["idempotency-key"] = key
        result: Payload = self.request(
            "POST", f"/games/{_q(game_id)}/moves", body=dict(action), token=token, headers=headers
        )
        return result

    def events(
        self, game_id: str, token: str | None = None, *, after: int = -1, limit: int = 50
    ) -> Payload:
        result: Payload = self.request(
            "GET",
            f"/games/{_q(game_id)}/events",
            token=token,
            query={"after": after, "limit": limit},
        )
        return result

    def all_events(self, game_id: str, token: str | None = None) -> Iterator[Payload]:
        """Every event the caller may see, following `next_after` to the end."""
        after = -1
        while True:
            page = self.events(game_id, token, after=after, limit=200)
            yield from page["events"]
            if page["next_after"] is None:
                return
            after = int(page["next_after"])

    def replay(self, game_id: str) -> Payload:
        """`GET /games/{id}/replay` (409 `not_over` while the game runs)."""
        result: Payload = self.request("GET", f"/games/{_q(game_id)}/replay")
        return result

    def openapi(self) -> Payload:
        result: Payload = self.request("GET", "/openapi.json")
        return result

    # ------------------------------------------------------------ waiting
    def wait(
        self,
        game_id: str,
        token: str | None = None,
        *,
        seat: str | None = None,
        timeout_s: float = 60.0,
        poll_s: float = 0.05,
        max_poll_s: float = 0.5,
    ) -> Payload:
        """Read the game until `seat` is to move or it is over (an AI's reply arrives
        after the person's move: the stream, or the local worker, plays it)."""
        deadline = time.monotonic() + timeout_s
        delay = poll_s
        while True:
            game = self.game(game_id, token)
            if game["status"] == "over" or (seat is not None and game["to_move"] == seat):
                return game
            if seat is None and game["to_move"] is None:
                return game
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"game {game_id} still waits for {game['to_move']} after {timeout_s:.0f} s"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, max_poll_s)


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _api_error(status: int, raw: bytes) -> ApiError:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    code = str(body.get("error") or f"http_{status}")
    message = str(body.get("message") or raw[:200].decode("utf-8", "replace") or f"HTTP {status}")
    return ApiError(status, code, message, body)


__all__ = ["DEFAULT_API", "ApiError", "ApiUnavailable", "HorcruxClient"]
