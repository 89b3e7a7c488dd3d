"""A batch's progress on stderr: one redrawn line on a terminal (done/total, rate, time
left), plain lines every `every_s` seconds otherwise (CI logs), and a last line at the end.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counts finished tasks; `resumed` of `total` were done before (not in the rate)."""

    def __init__(
        self,
        total: int,
        *,
        unit: str = "games",
        enabled: bool = True,
        out: TextIO | None = None,
        tty: bool | None = None,
        every_s: float = 30.0,
        resumed: int = 0,
    ) -> None:
        self.total = total
        self.unit = unit
        self.enabled = enabled
        self.out = out or sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.every_s = every_s
        self.done = resumed
        self.resumed = resumed
        self.start = time.monotonic()
        self._last = self.start

    def line(self) -> str:
        spent = time.monotonic() - self.start
        fresh = self.done - self.resumed
        rate = fresh / spent if spent > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else None
        eta = "-" if left is None else _clock(left)
        return (
            f"{self.done}/{self.total} {self.unit}  {rate:,.1f}/s  "
            f"{_clock(spent)} spent, {eta} left"
        )

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if now - self._last >= 0.2 or self.done >= self.total:
                self.out.write("\r" + self.line() + "  ")
                self.out.flush()
                self._last = now
        elif now - self._last >= self.every_s:
            self.out.write(self.line() + "\n")
            self.out.flush()
            self._last = now

    def finish(self) -> None:
        if not self.enabled:
            return
        self.out.write(("\r" if self.tty else "") + self.line() + "\n")
        self.out.flush()


__all__ = ["Progress"]
