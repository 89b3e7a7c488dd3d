"""The Anthropic key from AWS Secrets Manager, exported as `ANTHROPIC_API_KEY`.

In AWS the key lives in a Secrets Manager secret (the CDK stack creates it holding the
placeholder `unset`; `docs/DEPLOY.md` sets it) and the functions that may build an LLM brain
get its ARN in `HORCRUX_ANTHROPIC_SECRET_ARN` (an ARN or a name). `load_anthropic_key()`,
called at the start of each invocation, reads it through Powertools parameters, cached in
the process for `HORCRUX_SECRET_MAX_AGE` seconds (default 300: a new key reaches warm
functions within five minutes), and exports it for the brain factory, which reads
`ANTHROPIC_API_KEY` like a local run does. A secret that holds no key (`unset`, blank) removes
the variable, and a secret that cannot be read (permissions, throttling) keeps the last value:
without a key the planner plays, as locally. Without `HORCRUX_ANTHROPIC_SECRET_ARN` (local
play, tests) nothing is read and `ANTHROPIC_API_KEY` is left as it is.

The secret is either the key itself or a JSON object holding it as `ANTHROPIC_API_KEY` (or
`api_key`). Nothing is imported from Powertools or boto3 until a secret is configured.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

SECRET_ENV = "HORCRUX_ANTHROPIC_SECRET_ARN"
MAX_AGE_ENV = "HORCRUX_SECRET_MAX_AGE"
API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_AGE_S = 300
PLACEHOLDER = "unset"
"""What the stack stores until a key is set: no key."""

log = logging.getLogger(__name__)


def key_from_secret(value: Any) -> str | None:
    """The key a secret's value holds (a plain string or a JSON object), or None."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        value = value.get(API_KEY_ENV) or value.get("api_key")
    if not isinstance(value, str):
        return None
    key = value.strip()
    return key if key and key != PLACEHOLDER else None


def max_age_from_env() -> int:
    """Seconds a fetched secret is reused: `HORCRUX_SECRET_MAX_AGE` (default 300, >= 0)."""
    raw = os.environ.get(MAX_AGE_ENV, "").strip()
    age = int(raw) if raw else DEFAULT_MAX_AGE_S
    if age < 0:
        raise ValueError(f"{MAX_AGE_ENV} must be >= 0, got {age}")
    return age


def load_anthropic_key(*, max_age: int | None = None) -> bool:
    """Export the configured secret's key as `ANTHROPIC_API_KEY`; True if a key is set.

    At most one Secrets Manager call per `max_age` seconds per process (Powertools' cache).
    Never raises for a secret that cannot be read: the error is logged and the last known
    value is kept, so a turn still plays (with the planner if there never was a key).
    """
    secret = os.environ.get(SECRET_ENV, "").strip()
    if not secret:
        return bool(os.environ.get(API_KEY_ENV))
    age = max_age_from_env() if max_age is None else max_age
    try:
        from aws_lambda_powertools.utilities.parameters import get_secret

        value: Any = get_secret(secret, max_age=age)
    except Exception:
        log.warning("could not read the Anthropic secret %s", secret, exc_info=True)
        return bool(os.environ.get(API_KEY_ENV))
    key = key_from_secret(value)
    if key is None:
        os.environ.pop(API_KEY_ENV, None)
        return False
    os.environ[API_KEY_ENV] = key
    return True
