"""The local model's speed, measured side by side in one run: prompt and generation tokens
per second (the server's own timings), and what one decision of each tier costs through
the `llm` brain (the anthropic SDK), whole prompt by the model's count.

Starts its own server (one thread, as `horcrux model serve` does by default) from the cache
that `horcrux model build` fills; prints how to build it when the cache is missing.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
import urllib.request
from typing import Any

from horcrux import engine
from horcrux.agents import HARRY_BRAINS
from horcrux.agents.llm import LLMHarry
from horcrux.memory.context import render_narrative
from horcrux.models import Pass, Search
from horcrux.rules import CLASSIC
from horcrux.views import HarryView, harry_view
from horcrux_tools.local.model_cache import ModelNotBuilt
from horcrux_tools.local.model_server import running_model_server

REPEATS = 5


def completion(url: str, prompt: str, n_predict: int) -> dict[str, Any]:
    """llama-server's native /completion (no prompt cache): its `timings` are the model's."""
    body = {"prompt": prompt, "n_predict": n_predict, "cache_prompt": False, "temperature": 0}
    request = urllib.request.Request(
        f"{url}/completion", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def a_view(turns: int) -> HarryView:
    state, _ = engine.new_game(CLASSIC, 3)
    locations = CLASSIC.locations
    while state.turn <= turns and not state.over:
        move: Any = Search(location=locations[state.turn % len(locations)])
        state, _ = engine.apply(state, move if state.phase == "harry" else Pass())
    return harry_view(state)


def main() -> int:
    try:
        server = running_model_server(port=0, threads=1)
        running = server.__enter__()
    except ModelNotBuilt as exc:
        print(f"bench_llm: {exc}")
        return 1
    try:
        url = running.base_url
        print(f"local model ({url}, one thread): tokens per second, median of {REPEATS}")
        for turns in (5, 20, 40):
            text = render_narrative(a_view(turns))
            runs = [completion(url, f"{i} {text}", 32)["timings"] for i in range(REPEATS)]
            n = runs[0]["prompt_n"]
            pp = statistics.median(r["prompt_per_second"] for r in runs)
            tg = statistics.median(r["predicted_per_second"] for r in runs)
            print(f"  prompt {n:>5} tokens   prompt {pp:7.0f} tok/s   generation {tg:6.1f} tok/s")
        print("one decision through the llm brain (SDK; whole prompt by the model's count)")
        view = a_view(12)
        base = None
        for tier in ("compressed", "full", "narrative"):
            latencies, tokens = [], []
            for i in range(REPEATS):
                brain = HARRY_BRAINS.create(
                    "llm:local", CLASSIC, settings={"tier": tier, "base_url": url}
                )
                assert isinstance(brain, LLMHarry)
                brain.system = f"Run {i}. " + brain.system  # no prompt cache serves it
                brain.short_system = f"Run {i}. " + brain.short_system
                start = time.perf_counter()
                brain.decide(view, random.Random(0))
                latencies.append(time.perf_counter() - start)
                record = brain.decisions[-1]
                if record.source != "llm":
                    print(f"bench_llm: the model did not decide ({record.fallback_reason})")
                    return 1
                tokens.append(record.tokens_in)
            median = statistics.median(latencies)
            base = base or median
            print(
                f"  {tier:<11} {statistics.median(tokens):6.0f} prompt tokens   "
                f"{median:6.2f} s   ({median / base:.2f}x compressed)"
            )
    finally:
        server.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
