"""The batch engine on a real Ray (the tools' [ray] extra): the same per-game results as the
local back end for `evaluate --family`, `season --family`, `simulate` and the season
ablation, and a batch on a
two-node cluster on this machine, joined by `--address`, that plays on both nodes with no
socket off the loopback range.

Ray runs with `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` (Ray 2.60 otherwise binds even a
single-node Ray to the machine's network address), the same `RAY_AUTH_MODE` for every
process, no dashboard, no usage stats and a small object store; small batches only."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from horcrux.rules import preset
from horcrux_tools.batch.engine import Job, LocalEngine, where, worker_id
from horcrux_tools.batch.ray_engine import OBJECT_STORE_BYTES, RayEngine
from horcrux_tools.cli import main
from horcrux_tools.echo.ablation import run_ablation
from horcrux_tools.sim import GameResult, run_games

pytestmark = pytest.mark.slow

RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
}


@pytest.fixture(scope="module")
def ray_env() -> Iterator[Any]:
    """Ray's environment, set before `ray` is first imported (it reads it then); `ray`."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in RAY_ENV.items():
            mp.setenv(k, v)
        import ray
        from ray._private import ray_constants

        assert not ray_constants.ENABLE_RAY_CLUSTER  # else ray was imported before
        yield ray


def digest(records: list[Any]) -> str:
    """sha256 over the sorted per-game records (JSON)."""
    rows = sorted(json.dumps(r, sort_keys=True) for r in records)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def family_records(data: dict[str, Any]) -> list[Any]:
    return [
        [h, d, g, w]
        for h, ws in data["wins"].items()
        for d, s in ws.items()
        for g, w in enumerate(s)
    ]


def season_records(data: dict[str, Any]) -> list[Any]:
    return [
        [s["opponent"], s["seed"], s["wins"], s["gates"], s["planned"]] for s in data["seasons"]
    ]


def game_records(results: list[GameResult]) -> list[Any]:
    return [
        [
            r.seed,
            r.winner,
            r.end_reason,
            r.turns,
            r.destroyed,
            r.wasted_decoy,
            r.wasted_empty,
            [(d.turn, d.tier, d.source) for d in r.decisions],
        ]
        for r in results
    ]


def run_cli(argv: list[str], out: Path) -> dict[str, Any]:
    assert main([*argv, "--no-plots", "--out", str(out)]) == 0
    return json.loads(next(out.glob("family*.json")).read_text())


def test_local_and_ray_give_identical_per_game_results(ray_env: Any, tmp_path: Path) -> None:
    family = [
        "evaluate",
        "--family",
        "3",
        "--split",
        "dev",
        "--games",
        "4",
        "--no-progress",
        "--harry",
        "planner,naive",
    ]
    seasons = ["season", "--family", "2", "--split", "dev", "--games", "4"]
    local_f = run_cli([*family, "--workers", "2"], tmp_path / "lf")
    ray_f = run_cli([*family, "--workers", "2", "--engine", "ray"], tmp_path / "rf")
    assert digest(family_records(ray_f)) == digest(family_records(local_f))
    assert ray_f["summary"] == local_f["summary"] and ray_f["paired"] == local_f["paired"]
    local_s = run_cli([*seasons, "--workers", "2"], tmp_path / "ls")
    ray_s = run_cli([*seasons, "--workers", "2", "--engine", "ray"], tmp_path / "rs")
    assert digest(season_records(ray_s)) == digest(season_records(local_s))
    assert ray_s["over_draws"] == local_s["over_draws"]
    rules = preset("classic")
    local_g = list(run_games(rules, "planner", "reference", 12, 5, engine=LocalEngine(2)))
    tiny: dict[str, Any] = {
        "opponents": (("decoy-heavy", None),),
        "corrections": (("late", "immediate", 0.0),),
        "correction_games": 2,
        "correction_scopes": 2,
    }
    with RayEngine(workers=2) as engine:  # one Ray for both batches
        ray_g = list(run_games(rules, "planner", "reference", 12, 5, engine=engine))
        ray_a = run_ablation(2, engine=engine, **tiny)
    assert run_ablation(2, engine=LocalEngine(2), **tiny) == ray_a  # season --ablation
    assert [r.seed for r in ray_g] == list(range(5, 17))
    assert digest(game_records(ray_g)) == digest(game_records(local_g))
    assert not ray_env.is_initialized()  # the engine shut down the Ray it started


def _inodes(pids: set[int]) -> set[str]:
    found: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
    return found


def _tree(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo.extend(children.get(pid, []))
    return out


def _address(hex_addr: str, v6: bool) -> str:
    ip, _, _port = hex_addr.partition(":")
    raw = bytes.fromhex(ip)
    if v6:
        words = struct.unpack("<4I", raw)
        packed = struct.pack(">4I", *words)
        if packed[:12] == b"\0" * 10 + b"\xff\xff":
            return socket.inet_ntoa(packed[12:])
        return socket.inet_ntop(socket.AF_INET6, packed)
    return socket.inet_ntoa(struct.pack("<I", int(ip, 16)))


def tcp_sockets(pids: set[int]) -> list[tuple[str, str]]:
    """(local, remote) addresses of every TCP socket the processes hold (/proc/net)."""
    inodes = _inodes(pids)
    out = []
    for name, v6 in (("tcp", False), ("tcp6", True)):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[9] in inodes:
                out.append((_address(cols[1], v6), _address(cols[2], v6)))
    return out


def off_loopback(sockets: list[tuple[str, str]]) -> list[tuple[str, str]]:
    def loop(addr: str) -> bool:
        return addr.startswith("127.") or addr == "::1"

    return [(a, b) for a, b in sockets if not loop(a) or not (loop(b) or b in ("0.0.0.0", "::"))]


class Barrier:
    """A Ray actor (no CPU) that holds each caller until `n` have arrived."""

    def __init__(self) -> None:
        import asyncio

        self.arrived = 0
        self.all_in = asyncio.Event()

    async def meet(self, n: int) -> int:
        self.arrived += 1
        if self.arrived >= n:
            self.all_in.set()
        await self.all_in.wait()
        return self.arrived


def meet_both(barrier: Any) -> str:
    """A task that returns where it ran once two tasks run at once: on a cluster of two
    one-CPU nodes, on both nodes."""
    import ray

    ray.get(barrier.meet.remote(2), timeout=120)
    return worker_id()


def test_a_two_node_cluster_plays_a_batch_by_address_on_loopback_only(
    ray_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": OBJECT_STORE_BYTES}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        assert cluster.address.startswith("127.0.0.1:")
        ray_env.init(address=cluster.address, include_dashboard=False, logging_level="WARNING")
        ray_env.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # meet_both
        barrier = ray_env.remote(num_cpus=0)(Barrier).remote()
        engine = RayEngine(address=cluster.address)  # joins the driver's connection
        ran = list(engine.run(Job(meet_both, [("0", barrier), ("1", barrier)], chunk=1)))
        ray_env.shutdown()
        assert engine.workers == 2 and len(ran) == 2
        assert len(engine.tally.nodes()) == 2 and "on 2 nodes" in engine.describe()
        argv = [
            "evaluate",
            "--family",
            "2",
            "--games",
            "6",
            "--engine",
            "ray",
            "--address",
            cluster.address,
            "--no-progress",
        ]
        data = run_cli(argv, tmp_path / "cluster")
        assert f"ray (cluster {cluster.address}), 2 worker(s)" in capsys.readouterr().out
        local = run_cli(
            ["evaluate", "--family", "2", "--games", "6", "--workers", "1", "--no-progress"],
            tmp_path / "local",
        )
        assert digest(family_records(data)) == digest(family_records(local))
        ours = tcp_sockets(_tree(os.getpid()))
        assert len(ours) > 4  # the head's and the second raylet's, the driver's
        assert off_loopback(ours) == []
    finally:
        cluster.shutdown()


def test_the_aws_cluster_config_is_valid_for_ray(ray_env: Any) -> None:
    """infra/ray/cluster.yaml against Ray's own cluster-config schema (the launcher's check
    before it starts anything); every node installs the tools with the [ray] extra from
    this repository and Ray of the pinned version."""
    import jsonschema
    import yaml

    root = Path(__file__).resolve().parents[2]
    config = yaml.safe_load((root / "infra" / "ray" / "cluster.yaml").read_text())
    schema = json.loads(
        (Path(ray_env.__file__).parent / "autoscaler" / "ray-schema.json").read_text()
    )
    jsonschema.validate(config, schema)
    assert config["provider"]["type"] == "aws"
    assert config["file_mounts"] == {"~/horcrux": "."} and ".venv" in config["rsync_exclude"]
    setup = " ".join(config["setup_commands"])
    assert '"$HOME/horcrux/tools[ray]"' in setup and f"ray[default]=={ray_env.__version__}" in setup
    assert "--dashboard-host=127.0.0.1" in " ".join(config["head_start_ray_commands"])


def test_an_interrupted_ray_batch_cancels_and_shuts_down_its_ray(ray_env: Any) -> None:
    """Ctrl-C (KeyboardInterrupt in the loop over the results) on a Ray the engine started:
    the tasks in flight are cancelled and Ray is shut down, its processes gone."""
    engine = RayEngine(workers=2)
    with pytest.raises(KeyboardInterrupt):
        for _ in engine.run(Job(where, [(str(i), i) for i in range(200)], chunk=1)):
            assert any("raylet" in name for name in _names(_tree(os.getpid())))
            raise KeyboardInterrupt
    assert not ray_env.is_initialized()
    assert not any("raylet" in name or "gcs_server" in name for name in _names(_tree(os.getpid())))


def _names(pids: set[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
        except OSError:
            continue
    return out
