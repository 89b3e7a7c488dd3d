"""The README's first HTTP example, run as written (bash + curl against `horcrux serve`):
it must create a game and play a move. Only the port is changed (a free one), and the
interactive `horcrux play` line is left out."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def readme_http_example() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Playing over HTTP", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in block.strip().splitlines() if "horcrux play" not in line]


def test_the_readme_http_example_creates_a_game_when_pasted(tmp_path: Path) -> None:
    lines = readme_http_example()
    assert lines[0].startswith(".venv/bin/horcrux serve &")
    port = free_port()
    script = "\n".join(lines).replace("horcrux serve &", f"horcrux serve --port {port} &")
    script = script.replace("localhost:8000", f"localhost:{port}")
    assert str(port) in script and "8000" not in script
    bin_dir = Path(sys.executable).parent  # the venv the tests run in: `.venv/bin`
    (tmp_path / ".venv").symlink_to(bin_dir.parent)
    wrapped = f"set -e\ntrap 'kill %1 2>/dev/null; wait' EXIT\n{script}\n"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "HORCRUX_DYNAMODB_ENDPOINT"):
        env.pop(name, None)  # its own embedded DynamoDB, as on a fresh machine
    done = subprocess.run(
        ["bash", "-c", wrapped],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    decoder = json.JSONDecoder()  # the move's reply has no newline: the next output follows
    replies = [decoder.raw_decode(line)[0] for line in done.stdout.splitlines() if line[:1] == "{"]
    created, moved = replies
    assert created["seat"] == "harry" and created["token"] and created["game"]["turn"] == 1
    assert moved["game_id"] == created["game_id"] and moved["event"]["type"] == "harry_moved"
    assert re.search(r'"game": \{\.\.\.\}', "\n".join(lines))  # the comment shows `game`
