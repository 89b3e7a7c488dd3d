"""The terminal client's stable player key: one per user, kept in a private file, sent at
every create and join so that cross-game memory of this person builds up under one id.

The key is a secret (whoever holds it plays as that player id): the file is created with
mode 0600 in `$HORCRUX_PLAYER_FILE`, else `$XDG_CONFIG_HOME/horcrux/player_key`, else
`~/.config/horcrux/player_key`, and never printed. The API returns only its public id
(`player:<16 hex>`).
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

KEY_PATTERN = re.compile(r"^[A-Za-z0-9_-]{22,128}$")
"""The API's rule for a player key (docs/API.md)."""


def player_file() -> Path:
    given = os.environ.get("HORCRUX_PLAYER_FILE")
    if given:
        return Path(given).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "horcrux" / "player_key"


def player_key(path: Path | None = None) -> str:
    """The stored key, created (32 random URL-safe bytes) on first use. A file whose content
    is not a valid key is replaced: a person who edited it gets a fresh identity, never an
    API error at every game."""
    where = path or player_file()
    try:
        stored = where.read_text().strip()
    except FileNotFoundError:
        stored = ""
    if KEY_PATTERN.fullmatch(stored):
        return stored
    key = secrets.token_urlsafe(32)
    where.parent.mkdir(parents=True, exist_ok=True)
    tmp = where.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(key + "\n")
    os.replace(tmp, where)
    return key


__all__ = ["KEY_PATTERN", "player_file", "player_key"]
