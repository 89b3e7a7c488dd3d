"""`horcrux serve`'s guards against clients that hold or hog the server.

* `ConnectionGuard` + `guarded_channel`: waitress's `channel_timeout` counts idle time
  only, so a client sending a byte every few seconds keeps a connection (and, many of
  them, every connection slot) forever. Each request gets `read_deadline_s` from its first
  byte to its last (headers and body); past it the connection gets 408 `request_timeout`
  and is closed. At most `per_client` connections per client address are open at once; one
  more gets 429 `throttled` and is closed. Both are counted (`/healthz`: `dropped`).
* `route_cost`: the tokens a request takes from its client's bucket; a lobby page costs
  more the more games it asks for.
* `CostBudget`: a server-wide token bucket for the expensive reads (a lobby page computed,
  not answered from the cache: its cost by size, as `route_cost`): clients within their own
  limits, from many addresses, cannot together keep the database busy with lobby pages.
* `LobbyCache`: `GET /games` pages (public, the same for every caller) answered from a
  copy at most `ttl_s` old; concurrent misses for one page wait for one computation; a game
  created or joined through this server clears it (the creator sees their game at once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

from horcrux.api.errors import error_json

READ_DEADLINE_S = 10.0
PER_CLIENT_CONNECTIONS = 100
LOBBY_CACHE_S = 1.0
LOBBY_LIMIT_DEFAULT = 20
LOBBY_TOKENS_PER_GAME = 0.1
"""A lobby page of N games costs 1 + N/10 tokens (limit=100: 11; the default 20: 3)."""


def _response(status: str, code: str, message: str) -> bytes:
    body = error_json(code, message).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class ConnectionGuard:
    """Per-client connection counts, the read deadline and what was dropped."""

    def __init__(
        self,
        read_deadline_s: float = READ_DEADLINE_S,
        per_client: int = PER_CLIENT_CONNECTIONS,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read_deadline_s = read_deadline_s
        self.per_client = per_client
        self.clock = clock
        self.read_deadline_dropped = 0
        self.per_client_refused = 0
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, client: str) -> bool:
        with self._lock:
            count = self._open.get(client, 0)
            if count >= self.per_client:
                self.per_client_refused += 1
                return False
            self._open[client] = count + 1
            return True

    def release(self, client: str) -> None:
        with self._lock:
            count = self._open.get(client, 0) - 1
            if count > 0:
                self._open[client] = count
            else:
                self._open.pop(client, None)

    def open_connections(self, client: str) -> int:
        with self._lock:
            return self._open.get(client, 0)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "read_deadline": self.read_deadline_dropped,
                "per_client_cap": self.per_client_refused,
            }

    def sweep(self, channels: Iterable[Any]) -> None:
        """Drop every channel past its read deadline (the server loop's thread)."""
        now = self.clock()
        for channel in list(channels):
            overdue = getattr(channel, "overdue", None)
            if overdue is not None:
                overdue(now)


def guarded_channel(base: type, guard: ConnectionGuard) -> type:
    """`base` (a waitress HTTPChannel class) with the per-client cap and the read deadline."""

    class GuardedChannel(base):  # type: ignore[misc]
        request: Any = None  # waitress: the request being read (its parser)
        _began: float | None = None
        _admitted = False
        _dropped = False

        def __init__(self, server: Any, sock: Any, addr: Any, adj: Any, map: Any = None) -> None:
            super().__init__(server, sock, addr, adj, map)
            self.client = str(addr[0]) if isinstance(addr, tuple) and addr else str(addr)
            if guard.admit(self.client):
                self._admitted = True
            else:
                self._close_with(
                    "429 Too Many Requests",
                    "throttled",
                    f"too many connections from {self.client}: at most {guard.per_client} at once",
                )

        def received(self, data: bytes) -> bool:
            if self._dropped:
                return False
            before = self.request
            result = bool(super().received(data))
            if self.request is None:
                self._began = None  # no request being read
            elif self.request is not before or self._began is None:
                self._began = guard.clock()  # a new request's first bytes
            self.overdue(guard.clock())
            return result

        def overdue(self, now: float) -> None:
            """Drop the connection if the request being read is past its deadline."""
            if self._began is None or self._dropped:
                return
            if self.requests:  # a request is being served: nothing is read meanwhile
                self._began = now
                return
            if now - self._began <= guard.read_deadline_s:
                return
            with guard._lock:
                guard.read_deadline_dropped += 1
            self._close_with(
                "408 Request Timeout",
                "request_timeout",
                f"the request was not received within {guard.read_deadline_s:g} s",
            )

        def _close_with(self, status: str, code: str, message: str) -> None:
            self._dropped = True
            self._began = None
            self.request = None
            data = _response(status, code, message)
            with self.outbuf_lock:
                self.outbufs[-1].append(data)
                self.current_outbuf_count += len(data)
                self.total_outbufs_len += len(data)
            self.close_when_flushed = True

        def del_channel(self, map: Any = None) -> None:
            if self._admitted:
                self._admitted = False
                guard.release(self.client)
            super().del_channel(map)

    return GuardedChannel


# ---------------------------------------------------------------- what a route costs
def lobby_limit(query: str) -> int:
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "limit":
            try:
                return max(1, min(100, int(value)))
            except ValueError:
                return LOBBY_LIMIT_DEFAULT
    return LOBBY_LIMIT_DEFAULT


def is_lobby(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and path.rstrip("/") == "/games"


def changes_lobby(method: str, path: str, status: int) -> bool:
    """A game created or a seat taken: what a lobby page lists changed."""
    trimmed = path.rstrip("/")
    return (
        method == "POST" and 200 <= status < 300 and (trimmed == "/games" or "/seats/" in trimmed)
    )


def route_cost(method: str, path: str, query: str) -> float:
    """Tokens a request takes: 1, a lobby page 1 + 0.1 per game asked for."""
    if is_lobby(method, path):
        return 1.0 + LOBBY_TOKENS_PER_GAME * lobby_limit(query)
    return 1.0


class CostBudget:
    """One token bucket for the whole server: `per_s` tokens a second, up to `burst`.
    `take(cost)` answers 0 (go on) or the seconds until the cost fits."""

    def __init__(
        self, per_s: float, burst: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_s = per_s
        self.burst = burst
        self.clock = clock
        self.spent = 0.0
        self.refused = 0
        self._tokens = burst
        self._at = clock()
        self._lock = threading.Lock()

    def take(self, cost: float) -> float:
        cost = min(max(cost, 0.0), self.burst)
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_s)
            self._at = now
            if self._tokens >= cost:
                self._tokens -= cost
                self.spent += cost
                return 0.0
            self.refused += 1
            return (cost - self._tokens) / self.per_s

    def stats(self) -> dict[str, float | int]:
        """For `/healthz`: the tokens spent and the requests refused since the start."""
        with self._lock:
            return {"spent": round(self.spent, 1), "refused": self.refused}


class LobbyCache:
    """Lobby pages by query string, kept `ttl_s`; one computation per page at a time."""

    def __init__(
        self, ttl_s: float = LOBBY_CACHE_S, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._pages: dict[str, tuple[float, dict[str, Any]]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every page (a game was created or joined: the next read sees it)."""
        with self._lock:
            self._pages.clear()

    def get(self, query: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The cached response for `query`, or `compute()`'s (kept only if a 200)."""
        with self._lock:
            lock = self._locks.setdefault(query, threading.Lock())
        with lock:
            now = self.clock()
            with self._lock:
                kept = self._pages.get(query)
                if kept is not None and now - kept[0] < self.ttl_s:
                    self.hits += 1
                    return kept[1]
                self.misses += 1
            response = compute()
            with self._lock:
                if int(response.get("statusCode", 500)) == 200:
                    self._pages[query] = (self.clock(), response)
                if len(self._pages) > 256:  # forget the expired pages
                    now = self.clock()
                    self._pages = {q: v for q, v in self._pages.items() if now - v[0] < self.ttl_s}
                    self._locks = {q: self._locks[q] for q in self._pages if q in self._locks}
                    self._locks[query] = lock
            return response


__all__ = [
    "LOBBY_CACHE_S",
    "PER_CLIENT_CONNECTIONS",
    "READ_DEADLINE_S",
    "ConnectionGuard",
    "CostBudget",
    "LobbyCache",
    "changes_lobby",
    "guarded_channel",
    "is_lobby",
    "lobby_limit",
    "route_cost",
]
