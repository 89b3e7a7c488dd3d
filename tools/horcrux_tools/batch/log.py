"""A batch's results as JSON lines, written as they arrive, so that an interrupted batch
resumes where it stopped (`--resume`) with nothing played or counted twice.

The first line names the batch (`{"batch": meta}`: the command's parameters); each other
line is one task's result (`{"key": KEY, "value": VALUE}`). Resuming reads the results
back (one per key: a key written twice counts once; a last line cut off by the interrupt
is dropped and its task played again), writes them again whole, and refuses a log whose
batch differs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from horcrux.errors import HorcruxError


class ResultLog:
    """`path`'s results (`done`) and an append handle for new ones (`write`)."""

    def __init__(self, path: Path, meta: dict[str, Any], *, resume: bool) -> None:
        self.path = path
        self.meta = json.loads(json.dumps(meta))  # as it reads back
        self.done: dict[str, Any] = {}
        if resume and path.exists():
            self.done = self._read()
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = path.with_name(path.name + ".tmp")  # written again whole, then swapped in
        with fresh.open("w") as fh:
            fh.write(json.dumps({"batch": self.meta}) + "\n")
            for key, value in self.done.items():
                fh.write(json.dumps({"key": key, "value": value}) + "\n")
        os.replace(fresh, path)
        self._fh: IO[str] = path.open("a")

    def _read(self) -> dict[str, Any]:
        lines = self.path.read_text().split("\n")
        done: dict[str, Any] = {}
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if i == len(lines) - 1:  # cut off by the interrupt: played again
                    break
                raise HorcruxError(f"{self.path}: line {i + 1} is not JSON") from None
            if i == 0:
                if row.get("batch") != self.meta:
                    raise HorcruxError(
                        f"{self.path} holds another batch ({row.get('batch')}); drop --resume "
                        "to start this one afresh"
                    )
                continue
            done[row["key"]] = row["value"]
        return done

    def _line(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps(row) + "\n")
        self._fh.flush()

    def write(self, key: str, value: Any) -> None:
        self._line({"key": key, "value": value})

    def close(self) -> None:
        self._fh.close()

    def remove(self) -> None:
        """The batch is reported: its log goes."""
        self.close()
        self.path.unlink(missing_ok=True)


__all__ = ["ResultLog"]
