"""The browser client's static files: versioned names, content types, cache and security headers.

The page is four files in this package (`index.html`, `app.js`, `style.css` and the players'
words, `words.json`, which the terminal client reads too), no build step.
`site_files()` renders the site as it is served: each asset under a content-hashed name
(`app.<sha256[:12]>.js`, cached for a year as immutable) and `index.html` rewritten to
point at those names (`no-cache`: always revalidated, so a new deploy is seen at once).
`horcrux serve` answers GET/HEAD for the page through `static_response`; the CDK stack
uploads the same files (`write_site`) to S3 behind CloudFront (infra/web.py).
"""

from __future__ import annotations

import functools
import hashlib
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
ASSETS: Mapping[str, str] = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "words.json": "application/json; charset=utf-8",  # the players' words (app.js reads it)
}
INDEX = "index.html"
INDEX_TYPE = "text/html; charset=utf-8"
IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"
HASH_CHARS = 12
CONFIG = "config.json"
CONFIG_TYPE = "application/json"


def content_security_policy(api_origin: str = "") -> str:
    """The page's CSP: its own scripts and styles only (no inline code), API calls to its
    own origin (plus `api_origin` when the API lives elsewhere), no frames, no plugins."""
    connect = f"'self' {api_origin}".strip()
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": content_security_policy(),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


@dataclass(frozen=True)
class SiteFile:
    path: str  # as served, without the leading slash
    body: bytes
    content_type: str
    cache_control: str


def versioned_name(name: str, body: bytes) -> str:
    stem, _, ext = name.rpartition(".")
    return f"{stem}.{hashlib.sha256(body).hexdigest()[:HASH_CHARS]}.{ext}"


@functools.cache
def site_files() -> dict[str, SiteFile]:
    """Every file of the site by its served path: the hashed assets and index.html."""
    files: dict[str, SiteFile] = {}
    index = (PACKAGE_DIR / INDEX).read_text(encoding="utf-8")
    for name, content_type in ASSETS.items():
        body = (PACKAGE_DIR / name).read_bytes()
        served = versioned_name(name, body)
        if f'"{name}"' not in index:  # pragma: no cover - a broken index.html
            raise RuntimeError(f"index.html does not reference {name}")
        index = index.replace(f'"{name}"', f'"{served}"')
        files[served] = SiteFile(served, body, content_type, IMMUTABLE)
    files[INDEX] = SiteFile(INDEX, index.encode("utf-8"), INDEX_TYPE, NO_CACHE)
    return files


def static_response(method: str, path: str) -> tuple[int, dict[str, str], bytes] | None:
    """The page's answer to `method path` (GET or HEAD), or None for any other path (the
    API's). `/` is index.html; a hashed asset name is served as immutable."""
    if method not in ("GET", "HEAD"):
        return None
    name = urlsplit(path).path.lstrip("/") or INDEX
    if name == CONFIG:  # locally the API is the page's own origin (deployed: S3's config.json)
        return (
            200,
            {"Content-Type": CONFIG_TYPE, "Cache-Control": NO_CACHE, **SECURITY_HEADERS},
            b"{}",
        )
    found = site_files().get(name)
    if found is None:
        return None
    headers = {
        "Content-Type": found.content_type,
        "Cache-Control": found.cache_control,
        **SECURITY_HEADERS,
    }
    return 200, headers, found.body


def write_site(out_dir: pathlib.Path) -> pathlib.Path:
    """Write the served files into `out_dir` (for the CDK BucketDeployment)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.iterdir():
        if stale.is_file():
            stale.unlink()
    for item in site_files().values():
        (out_dir / item.path).write_bytes(item.body)
    return out_dir


__all__ = [
    "ASSETS",
    "IMMUTABLE",
    "INDEX",
    "NO_CACHE",
    "SECURITY_HEADERS",
    "SiteFile",
    "content_security_policy",
    "site_files",
    "static_response",
    "versioned_name",
    "write_site",
]
