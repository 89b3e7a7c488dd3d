"""The browser client's static files: versioned names, content types, cache and security headers.

The page lives in the repository's top-level `web/` folder (`SITE_DIR`): `index.html`, the
ES modules (`app.js`, the entry point, and the modules it imports by relative name,
`./name.js`), `style.css` and the players' words, `words.json`, which the terminal client
reads too (`horcrux_tools.web.words`). No build step; the runtime (the Lambda layer) holds
none of it: the stack serves the page from S3.
`site_files()` renders the site as it is served: each asset under a content-hashed name
(`style.<sha256[:12]>.css`, cached for a year as immutable; the ES modules, which import
each other, in cycles too, share one hash over all of them: `app.<sha256[:12]>.js`), every
module's relative imports and `index.html` rewritten to point at those names, and
`index.html` itself `no-cache` (always revalidated, so a new deploy is seen at once).
`horcrux serve` answers GET/HEAD for the page through `static_response`; the CDK stack
uploads the same files (`write_site`) to S3 behind CloudFront (infra/web.py).
"""

from __future__ import annotations

import functools
import hashlib
import pathlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

SITE_DIR = pathlib.Path(__file__).resolve().parents[3] / "web"
"""The page's files: the repository's `web/` folder (the tools are installed editable from
the same checkout, `make venv`)."""
CONTENT_TYPES: Mapping[str, str] = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",  # the players' words (the page reads it)
}
INDEX = "index.html"
INDEX_TYPE = "text/html; charset=utf-8"
IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"
HASH_CHARS = 12
CONFIG = "config.json"
CONFIG_TYPE = "application/json"
MODULE_IMPORT = re.compile(r"""(\bfrom\s*|\bimport\s*\(?\s*)(["'])\./([\w-]+\.js)\2""")
"""A module's relative import (`from "./x.js"`, `import "./x.js"`, `import("./x.js")`)."""


def assets(site: pathlib.Path = SITE_DIR) -> dict[str, str]:
    """The page's assets (every file of `site` but index.html) and their content types."""
    if not (site / INDEX).is_file():
        raise RuntimeError(f"the page's files are missing: no {site / INDEX}")
    return {
        p.name: CONTENT_TYPES[p.suffix]
        for p in sorted(site.iterdir())
        if p.is_file() and p.suffix in CONTENT_TYPES
    }


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
    return render_site(SITE_DIR)


def render_site(site: pathlib.Path) -> dict[str, SiteFile]:
    """`site_files` of the page in `site`. RuntimeError for an asset that nothing references
    (index.html or a module) or a module importing a file that is not there."""
    types = assets(site)
    bodies = {name: (site / name).read_bytes() for name in types}
    modules = sorted(name for name in types if name.endswith(".js"))
    # the modules import each other (in cycles too): one hash over all of them names each
    version = hashlib.sha256(b"".join(n.encode() + b"\0" + bodies[n] + b"\0" for n in modules))
    served = {
        name: versioned_name(name, bodies[name])
        if name not in modules
        else f"{name[:-3]}.{version.hexdigest()[:HASH_CHARS]}.js"
        for name in types
    }
    reached: set[str] = set()

    def reach(name: str, importer: str) -> str:
        if name not in bodies:
            raise RuntimeError(f"{importer} imports ./{name}, which is not in {site}")
        if name not in reached:
            reached.add(name)
            if name in modules:
                for m in MODULE_IMPORT.finditer(bodies[name].decode("utf-8")):
                    reach(m.group(3), name)
        return served[name]

    index = (site / INDEX).read_text(encoding="utf-8")
    for name in types:
        if f'"{name}"' in index:
            index = index.replace(f'"{name}"', f'"{reach(name, INDEX)}"')
    unused = sorted(set(types) - reached)
    if unused:
        raise RuntimeError(f"nothing in the page references {', '.join(unused)}")

    def hashed(m: re.Match[str]) -> str:
        return f"{m.group(1)}{m.group(2)}./{served[m.group(3)]}{m.group(2)}"

    files: dict[str, SiteFile] = {}
    for name in types:
        body = bodies[name]
        if name in modules:
            body = MODULE_IMPORT.sub(hashed, body.decode("utf-8")).encode("utf-8")
        files[served[name]] = SiteFile(served[name], body, types[name], IMMUTABLE)
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
    "CONTENT_TYPES",
    "IMMUTABLE",
    "INDEX",
    "NO_CACHE",
    "SECURITY_HEADERS",
    "SITE_DIR",
    "SiteFile",
    "assets",
    "content_security_policy",
    "render_site",
    "site_files",
    "static_response",
    "versioned_name",
    "write_site",
]
