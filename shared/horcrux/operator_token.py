"""The `/memory` routes' operator token: its SHA-256 and reach, from a secret the stack owns.

In AWS the stack creates a Secrets Manager secret holding `unset` (no operator: every
`/memory` call is refused) and gives the API function its ARN in
`HORCRUX_OPERATOR_SECRET_ARN`. The operator stores the token's SHA-256 there once
(docs/DEPLOY.md), and because CloudFormation never rewrites a secret value it did not
change, every later plain `cdk deploy` keeps it (a `-c` context value would be dropped by
the next deploy that omits it). The value is either the digest alone (64 hex digits: it
reaches every agent) or JSON `{"sha256": "<64 hex>", "agents": "planner,gated"}` (a
comma-separated string or a list; `*` = every agent).

`load_operator_access(secret_id, max_age=...)` returns the parsed value, read through
Powertools parameters and cached in the process for `max_age` seconds (the settings'
`HORCRUX_SECRET_MAX_AGE`, default 300: a new digest reaches warm functions within five
minutes). It fails closed: a secret that cannot be read or does not parse gives None
(refuse), never an old or a default token. The variables are read and checked once, by
`horcrux.settings.OperatorSettings`, whose `access()` calls this module (or, without a
secret, builds the access from the digest it was given). Nothing is imported from
Powertools or boto3 until a secret is configured.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_AGE_S = 300
PLACEHOLDER = "unset"
"""What the stack stores until the operator sets a digest: no operator."""
EVERY_AGENT = "*"

log = logging.getLogger(__name__)
_DIGEST = re.compile(r"[0-9a-f]{64}")


class InvalidOperatorSecret(ValueError):
    """The secret's value is neither `unset`, a SHA-256 in hex, nor the JSON form."""


@dataclass(frozen=True)
class OperatorAccess:
    """Who the operator is (the token's SHA-256) and which agents' memory it reaches."""

    token_sha256: str
    agents: tuple[str, ...] = (EVERY_AGENT,)
    readonly_sha256: str = ""
    """The read-only operator's token SHA-256 (may read, search and export memory, never
    write it); empty: no read-only operator."""

    def accepts(self, token: str) -> bool:
        """Whether `token` (as sent in `Authorization: Bearer ...`) is the operator's."""
        return self.role(token) is not None

    def role(self, token: str) -> str | None:
        """`write` (the operator), `read` (the read-only operator), or None."""
        digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
        if self.token_sha256 and hmac.compare_digest(digest, self.token_sha256):
            return "write"
        if self.readonly_sha256 and hmac.compare_digest(digest, self.readonly_sha256):
            return "read"
        return None

    def reaches(self, agent: str) -> bool:
        return EVERY_AGENT in self.agents or agent in self.agents


def _agents(value: Any) -> tuple[str, ...]:
    if value is None:
        return (EVERY_AGENT,)
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(a, str) for a in items):
        raise InvalidOperatorSecret("'agents' must be a comma-separated string or a list")
    agents = tuple(a.strip() for a in items if a.strip())
    return agents or (EVERY_AGENT,)


def _digest(value: Any) -> str:
    digest = value.strip().lower() if isinstance(value, str) else ""
    if not _DIGEST.fullmatch(digest):
        raise InvalidOperatorSecret(
            "the operator secret must hold the token's SHA-256 in hex (64 digits), "
            "never the token itself"
        )
    return digest


def access_from_secret(value: Any) -> OperatorAccess | None:
    """The access a secret's value grants; None for `unset` or blank (no operator).

    Raises InvalidOperatorSecret for anything else that is not a digest or the JSON form."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        text = value.strip()
        if not text or text == PLACEHOLDER:
            return None
        if not text.startswith("{"):
            return OperatorAccess(_digest(text))
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise InvalidOperatorSecret(f"the operator secret is not valid JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise InvalidOperatorSecret("the operator secret must be a digest or a JSON object")
    readonly = value.get("readonly_sha256")
    return OperatorAccess(
        _digest(value.get("sha256")),
        _agents(value.get("agents")),
        _digest(readonly) if readonly is not None else "",
    )


def load_operator_access(
    secret_id: str, *, max_age: int = DEFAULT_MAX_AGE_S
) -> OperatorAccess | None:
    """The operator's access now, read from the secret `secret_id` (an ARN or a name, from
    the settings read once at cold start), or None: every `/memory` call is then refused
    (403)."""
    secret = secret_id.strip()
    if not secret:
        return None
    try:
        from aws_lambda_powertools.utilities.parameters import get_secret

        return access_from_secret(get_secret(secret, max_age=max_age))
    except InvalidOperatorSecret as exc:
        log.warning("the operator secret %s holds no valid digest: %s", secret, exc)
        return None
    except Exception:
        log.warning("could not read the operator secret %s", secret, exc_info=True)
        return None
