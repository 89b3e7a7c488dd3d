"""The local stream: `horcrux serve`'s stand-in for the stack's event source mappings.

A thread tails the events table's DynamoDB stream (`horcrux.store.stream.EventStream`:
the committed event items, in order, from a checkpoint) and hands every event that asks
for an AI turn (`next_ai`) or ends a game (`winner`) to the AI workers (`AiTurns`), as
the stack's stream hands them to the turn and compaction Lambdas. Nothing on the request
path queues a turn: a move that was committed gets its AI reply whatever its HTTP answer
was (a 503 `outcome_unknown` included), and without anyone reading the game.

While the database does not answer, the tail backs off (up to `MAX_BACKOFF_S`) and keeps
its checkpoint; a stream that was replaced (the tables recreated) is read from its start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from horcrux.store.port import StoreUnavailable
from horcrux.store.stream import EventChange, EventStream

log = logging.getLogger(__name__)

POLL_S = 0.05
"""The wait between two reads that found nothing (a read that found changes reads again
at once)."""
MAX_BACKOFF_S = 1.0


class StreamTail:
    """Reads `stream` in a thread and calls `deliver(game_id)` for every committed event
    that asks for an AI turn or ends the game."""

    def __init__(
        self,
        stream: EventStream,
        deliver: Callable[[str], None],
        *,
        poll_s: float = POLL_S,
        max_backoff_s: float = MAX_BACKOFF_S,
    ) -> None:
        self.stream = stream
        self.deliver = deliver
        self.poll_s = poll_s
        self.max_backoff_s = max_backoff_s
        self.delivered = 0
        self.read_errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> StreamTail:
        self._thread = threading.Thread(target=self._run, name="horcrux-stream", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def stats(self) -> dict[str, Any]:
        """For `/healthz`: events handed to the workers, failed reads, restarts."""
        return {
            "delivered": self.delivered,
            "read_errors": self.read_errors,
            "restarts": self.stream.restarts,
        }

    def poll(self) -> int:
        """One read: hand its changes over; how many were handed over."""
        handed = 0
        for change in self.stream.read():
            if _wants_work(change):
                self.deliver(change.game_id)
                handed += 1
        self.delivered += handed
        return handed

    def _run(self) -> None:
        backoff = self.poll_s
        while not self._stop.is_set():
            try:
                found = self.poll()
            except StoreUnavailable as exc:
                self.read_errors += 1
                log.debug("the stream is unreadable (%s); retrying in %.2f s", exc, backoff)
                self._stop.wait(backoff)
                backoff = min(self.max_backoff_s, backoff * 2)
                continue
            except Exception:  # a bug or an unexpected answer: logged, never the thread's end
                self.read_errors += 1
                log.exception("reading the events stream failed")
                self._stop.wait(self.max_backoff_s)
                continue
            backoff = self.poll_s
            if not found:
                self._stop.wait(self.poll_s)


def _wants_work(change: EventChange) -> bool:
    return change.next_ai is not None or change.winner is not None


__all__ = ["MAX_BACKOFF_S", "POLL_S", "StreamTail"]
