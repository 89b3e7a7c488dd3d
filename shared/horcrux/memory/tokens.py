"""An offline estimate of how many tokens a Claude model reads for a piece of text.

Claude's tokenizer is a byte-level BPE that is not published, so Layer 1 measures its
contexts with a deterministic approximation and reports the figures as *estimated*
tokens. The method:

1. Split the text with one regex into pieces: runs of letters, runs of digits, runs of
   other non-space characters (punctuation, symbols, anything non-ASCII), and runs of
   whitespace.
2. Charge each piece:

   - letters, length n: ceil(n / 7). Common English words and short names are one BPE
     token; long or rare words (`Horcruxes`, `Hogsmeade`) split into 2-3.
   - digits, length n: ceil(n / 3). Numbers are cut into groups of at most three digits.
   - other symbols, length n: ceil(n / 2). `%`, `@`, `(` cost a token each, but common
     pairs such as `),` or `%)` merge.
   - whitespace holding m newlines: ceil(m / 2), less 1 right after a symbol. A line
     break is a token, but two line breaks in a row are one token, and so is a full
     stop followed by a line break.
   - other whitespace: 0. A single space is folded into the token that follows it.

   A piece of non-ASCII symbols is charged one token per character, since multi-byte
   characters usually take at least one token each.

Expected error: the method has not been checked against the real tokenizer inside this
repository (that needs an API key; see `calibrate`). From the BPE behaviour it imitates
we expect it within about +/-20% on short English and on the structured prompts this
package renders (names, percentages, one fact per clause): it overcharges common words of
8+ letters (`positive` is one real token, two here) and undercharges rare names split
into several pieces. On code, JSON, non-Latin scripts or long rare words it can be off by
30% or more. It ignores the fixed overhead of the message envelope (a handful of tokens
per request). With an API key, `calibrate` measures a scale factor against the real
`messages.count_tokens` endpoint; pass it on as `estimate_tokens(text, scale=...)`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

_PIECE = re.compile(r"[A-Za-z]+|[0-9]+|\s+|[^A-Za-z0-9\s]+")

LETTERS_PER_TOKEN = 7
DIGITS_PER_TOKEN = 3
SYMBOLS_PER_TOKEN = 2
DEFAULT_CALIBRATION_MODEL = "claude-haiku-4-5"


def _is_symbols(piece: str) -> bool:
    first = piece[0]
    return not (first.isspace() or (first.isascii() and first.isalnum()))


def _piece_cost(piece: str, after_symbols: bool) -> int:
    first = piece[0]
    if first.isascii() and first.isalpha():
        return math.ceil(len(piece) / LETTERS_PER_TOKEN)
    if first.isascii() and first.isdigit():
        return math.ceil(len(piece) / DIGITS_PER_TOKEN)
    if first.isspace():
        newlines = piece.count("\n")
        return max(0, math.ceil(newlines / 2) - (1 if after_symbols and newlines else 0))
    if piece.isascii():
        return math.ceil(len(piece) / SYMBOLS_PER_TOKEN)
    ascii_part = sum(1 for ch in piece if ch.isascii())
    return math.ceil(ascii_part / SYMBOLS_PER_TOKEN) + (len(piece) - ascii_part)


def estimate_tokens(text: str, *, scale: float = 1.0) -> int:
    """Estimated Claude tokens in `text` (see the module docstring for the method).

    Deterministic, never negative, and monotone: appending text never lowers the count.
    `scale` multiplies the raw estimate (a factor from `calibrate`); the result is rounded
    up, so any non-empty text costs at least one token.
    """
    if not text:
        return 0
    raw = 0
    previous = ""
    for piece in _PIECE.findall(text):
        raw += _piece_cost(piece, bool(previous) and _is_symbols(previous))
        previous = piece
    if raw == 0:
        return 0
    return max(1, math.ceil(raw * scale))


class Calibration(BaseModel):
    """A scale factor for `estimate_tokens`, measured against the real token counter."""

    model_config = ConfigDict(frozen=True)

    model: str
    scale: float
    envelope_tokens: int
    samples: int
    real_tokens: int
    estimated_tokens: int


def calibrate(
    samples: Sequence[str],
    *,
    model: str = DEFAULT_CALIBRATION_MODEL,
    client: Any | None = None,
    api_key: str | None = None,
) -> Calibration | None:
    """Measure `real / estimated` over `samples` with Anthropic's token-counting endpoint.

    Returns None, without importing the SDK or touching the network, when neither a
    `client` nor an `api_key` is given (the caller reads its key once, from settings).
    Otherwise each sample is counted as one user
    message with `client.messages.count_tokens(model=..., messages=[...])`; the
    envelope (the count for a one-character message, less one) is subtracted from every
    sample before comparing. Network or API errors propagate to the caller: this is an
    explicit, offline-by-default tool, never called on the game's hot path.
    """
    texts = [s for s in samples if s]
    if not texts:
        raise ValueError("calibrate needs at least one non-empty sample")
    if client is None:
        if not api_key:
            return None
        import anthropic  # lazy: the SDK is an optional dependency (the `llm` extra)

        client = anthropic.Anthropic(api_key=api_key)

    def count(text: str) -> int:
        result = client.messages.count_tokens(
            model=model, messages=[{"role": "user", "content": text}]
        )
        return int(result.input_tokens)

    envelope = max(0, count(".") - 1)
    real = sum(max(1, count(t) - envelope) for t in texts)
    estimated = sum(estimate_tokens(t) for t in texts)
    return Calibration(
        model=model,
        scale=real / estimated if estimated else 1.0,
        envelope_tokens=envelope,
        samples=len(texts),
        real_tokens=real,
        estimated_tokens=estimated,
    )
