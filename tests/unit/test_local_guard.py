"""`horcrux serve`'s route costs, cost-weighted buckets and lobby cache (no server)."""

from __future__ import annotations

from typing import Any

from horcrux_tools.local.guard import LobbyCache, changes_lobby, route_cost
from horcrux_tools.local.wsgi import Rate, RateLimiter


def test_a_lobby_page_costs_by_its_size_and_other_routes_one() -> None:
    assert route_cost("GET", "/games", "status=active&limit=100") == 11
    assert route_cost("GET", "/games", "status=open") == 3
    assert route_cost("GET", "/games", "limit=junk") == 3
    assert route_cost("GET", "/games/abc", "") == 1
    assert route_cost("POST", "/games", "") == 1


def test_the_bucket_takes_the_cost() -> None:
    now = [0.0]
    limiter = RateLimiter(Rate(10, 30), Rate(1, 1), clock=lambda: now[0])
    assert limiter.take("a", "play", 11) == 0
    assert limiter.take("a", "play", 11) == 0
    wait = limiter.take("a", "play", 11)  # 8 tokens left: 3 more at 10 a second
    assert abs(wait - 0.3) < 1e-9
    assert limiter.take("b", "play", 1) == 0  # another client is untouched
    assert limiter.take("a", "play", 1000) > 0  # never more than the burst: it can pass


def test_the_lobby_cache_serves_a_copy_and_a_write_clears_it() -> None:
    now = [0.0]
    cache = LobbyCache(1.0, clock=lambda: now[0])
    calls: list[int] = []

    def compute() -> dict[str, Any]:
        calls.append(1)
        return {"statusCode": 200, "body": str(len(calls))}

    assert cache.get("q", compute)["body"] == "1"
    assert cache.get("q", compute)["body"] == "1"
    now[0] = 1.5
    assert cache.get("q", compute)["body"] == "2"
    cache.clear()
    assert cache.get("q", compute)["body"] == "3"
    assert (cache.hits, cache.misses) == (1, 3)
    assert cache.get("other", lambda: {"statusCode": 503})["statusCode"] == 503
    assert cache.get("other", compute)["body"] == "4"  # an error is never kept
    assert changes_lobby("POST", "/games", 201) and changes_lobby(
        "POST", "/games/x/seats/harry", 200
    )
    assert not changes_lobby("POST", "/games/x/moves", 200)
    assert not changes_lobby("POST", "/games", 422)
