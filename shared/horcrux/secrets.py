"""The Anthropic key from AWS Secrets Manager, returned as a value (never exported).

In AWS the key lives in a Secrets Manager secret (the CDK stack creates it holding the
placeholder `unset`; `docs/DEPLOY.md` sets it) and the functions that may build an LLM brain
get its ARN in `HORCRUX_ANTHROPIC_SECRET_ARN` (an ARN or a name), read once at cold start
into `horcrux.settings.SecretSettings`. A function's `AnthropicKey(settings)`, called when a
brain is built, reads the secret through Powertools parameters (`load_anthropic_key` is one
uncached read), keeps the key for `HORCRUX_SECRET_MAX_AGE` seconds of its clock (default 300:
a new key reaches warm functions within five minutes; `time.monotonic` unless the caller
injects one), and returns it; the service passes it to the brain factory as
`settings["api_key"]`. A secret that holds no key (`unset`, blank) means no key, and a secret
that cannot be read (permissions, throttling) keeps the last value: without a key the
planner plays, as locally. Without a secret (local play, tests) the key is the
`ANTHROPIC_API_KEY` the settings were read with. The environment is never written.

The secret is either the key itself or a JSON object holding it as `ANTHROPIC_API_KEY` (or
`api_key`). Nothing is imported from Powertools or boto3 until a secret is configured.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from horcrux.settings import SecretSettings

SECRET_ENV = "HORCRUX_ANTHROPIC_SECRET_ARN"
MAX_AGE_ENV = "HORCRUX_SECRET_MAX_AGE"
API_KEY_ENV = "ANTHROPIC_API_KEY"
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


def load_anthropic_key(settings: SecretSettings, *, last: str | None = None) -> str | None:
    """The Anthropic key: the configured secret's, else the key the settings were given.

    One Secrets Manager call, uncached (`AnthropicKey` is the cache). Never raises for a
    secret that cannot be read: the error is logged and `last` (the last key known) is
    returned, so a turn still plays (with the planner if there never was a key). Nothing is
    written to the environment.
    """
    if not settings.secret_id:
        return settings.api_key
    read, key = _read(settings.secret_id)
    return key if read else last


def _read(secret_id: str) -> tuple[bool, str | None]:
    """(True, the key the secret holds now) from one GetSecretValue, Powertools' cache
    bypassed; (False, None), logged, when the secret cannot be read."""
    try:
        from aws_lambda_powertools.utilities.parameters import get_secret

        value: Any = get_secret(secret_id, force_fetch=True, max_age=0)
    except Exception:
        log.warning("could not read the Anthropic secret %s", secret_id, exc_info=True)
        return False, None
    return True, key_from_secret(value)


class AnthropicKey:
    """A function's key source: `key()` per invocation, remembering the last good read.

    With a secret configured, at most one Secrets Manager call per `settings.max_age_s`
    seconds of `clock` (monotonic seconds; tests inject their own). A read that fails is
    not remembered: the last good key is returned and the next call reads again.
    """

    def __init__(
        self, settings: SecretSettings, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings
        self.clock = clock
        self._last: str | None = settings.api_key if not settings.secret_id else None
        self._read_at: float | None = None

    def __call__(self) -> str | None:
        secret_id = self.settings.secret_id
        if not secret_id:
            return self.settings.api_key
        now = self.clock()
        if self._read_at is not None and now - self._read_at < self.settings.max_age_s:
            return self._last
        read, key = _read(secret_id)
        if read:
            self._last, self._read_at = key, now
        return self._last
