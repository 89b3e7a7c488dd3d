"""The Lambda layers: the locks, what the assets hold, and each handler importing from them.

The assets (`build/layer/{core,llm}`) are built from the locks for the functions' platform,
Linux arm64 and CPython 3.13, so this machine cannot import them. The import checks use the
host build of the same locks (`build/layer-host`, infra/build_layer.py --host), installed for
a CPython 3.13 on this machine: the pure-Python packages (horcrux, powertools, anthropic, ...)
are the same files, only numpy's, pydantic-core's and jiter's binaries are this machine's.
Both builds are cached under build/ (a stamp of the locks); the first one of a clone needs
PyPI or pip's cache.
"""

from __future__ import annotations

import filecmp
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from horcrux.agents.base import BUILTIN_MODULES  # noqa: E402
from horcrux_tools import extras as extras_module  # noqa: E402
from infra import build_layer, names  # noqa: E402
from infra.clean_import import (  # noqa: E402
    TOOL_IMPORTS,
    boto3_only,
    import_every_module,
    import_handler,
    walk_imports,
)
from infra.names import FunctionSpec  # noqa: E402

MiB = 1024 * 1024
LAYER_GOAL_BYTES = 50 * MiB


@pytest.fixture(scope="session")
def lambda_layers() -> dict[str, Path]:
    return build_layer.build(build_layer.LAMBDA)


@pytest.fixture(scope="session")
def host_layers() -> dict[str, Path]:
    return build_layer.build(build_layer.HOST)


@pytest.fixture(scope="session")
def boto3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return boto3_only(tmp_path_factory.mktemp("runtime") / "boto3")


def size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def requirements(path: Path) -> list[Requirement]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def handler_files() -> list[Path]:
    return [spec.code_dir / f"{spec.handler.split('.')[0]}.py" for spec in names.FUNCTIONS]


def runtime_project() -> dict[str, Any]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])


def tools_project() -> dict[str, Any]:
    return dict(tomllib.loads((ROOT / "tools" / "pyproject.toml").read_text())["project"])


# ------------------------------------------------------------------ the locks
def test_the_lock_pins_every_runtime_requirement_with_hashes() -> None:
    core = build_layer.locked(build_layer.CORE_LOCK)
    llm = build_layer.locked(build_layer.LLM_LOCK)
    for lock, wanted in (
        (core, requirements(build_layer.CORE_REQUIREMENTS)),
        (llm, requirements(build_layer.LLM_REQUIREMENTS)),
    ):
        for requirement in wanted:
            name = build_layer.normalise(requirement.name)
            assert name in lock, f"{requirement} is not locked: run `make lock`"
            version, _ = lock[name]
            assert requirement.specifier.contains(version), (requirement, version)
        # every pin, the transitive ones too, has at least one sha256 to check
        assert all(len(h) == 64 for _, hashes in lock.values() for h in hashes)
        assert all(hashes for _, hashes in lock.values()), "a pin without a hash"
    assert {"numpy", "pydantic", "pydantic-core", "aws-lambda-powertools"} <= set(core)
    # the llm lock is resolved against the core's: a shared package has the same version
    shared = set(core) & set(llm)
    assert {"pydantic", "typing-extensions"} <= shared
    assert all(core[name][0] == llm[name][0] for name in shared)
    # pyproject's runtime dependencies are requirements.txt's (the wheel and the layer agree)
    project = runtime_project()
    assert {str(Requirement(d)) for d in project["dependencies"]} == {
        str(r) for r in requirements(build_layer.CORE_REQUIREMENTS)
    }


def test_the_locks_are_made_for_the_lambda_platform_by_make_lock() -> None:
    core, llm, dev = build_layer.lock_commands("uv")
    for command in (core, llm):
        assert command[:3] == ["uv", "pip", "compile"] and "--generate-hashes" in command
        platform = command[command.index("--python-platform") + 1]
        assert platform == "aarch64-manylinux_2_34"  # Amazon Linux 2023 (python3.13), arm64
        assert command[command.index("--python-version") + 1] == "3.13"
    assert llm[llm.index("-c") + 1] == str(build_layer.CORE_LOCK)
    assert "--universal" in dev and "--generate-hashes" in dev
    assert "make lock" in build_layer.CORE_LOCK.read_text()  # how to regenerate, in the header
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(
        r"^lock: venv\n\t\$\(BIN\)/python infra/build_layer.py --lock$", makefile, re.M
    )
    dev_lock = build_layer.locked(build_layer.DEV_LOCK)
    assert {"pytest", "moto", "aws-cdk-lib", "uv", "anthropic"} <= set(dev_lock)


def test_the_layers_hold_exactly_the_locked_versions(lambda_layers: dict[str, Path]) -> None:
    core_lock = build_layer.locked(build_layer.CORE_LOCK)
    llm_lock = build_layer.locked(build_layer.LLM_LOCK)
    core = build_layer.distributions(lambda_layers["core"] / "python")
    llm = build_layer.distributions(lambda_layers["llm"] / "python")
    assert {n: v for n, (v, _) in core.items()} == {
        **{n: v for n, (v, _) in core_lock.items()},
        "horcrux-hunt": "0.1.0",
    }
    assert {n: v for n, (v, _) in llm.items()} == {
        n: v for n, (v, _) in llm_lock.items() if n not in core_lock
    }


# ------------------------------------------------------------------ what the assets hold
def test_the_core_layer_holds_exactly_the_runtime_wheel(lambda_layers: dict[str, Path]) -> None:
    """The layer's `horcrux` is shared/horcrux file for file, as the wheel installed it:
    nothing added, nothing removed after the fact, and no tool (another distribution)."""
    site = lambda_layers["core"] / "python"
    shipped = site / "horcrux"
    source = ROOT / "shared" / "horcrux"

    def files(root: Path) -> list[str]:
        return sorted(
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        )

    assert files(shipped) == files(source)
    _, mismatch, errors = filecmp.cmpfiles(source, shipped, files(source), shallow=False)
    assert not mismatch and not errors
    for kept in ("py.typed", "echo/echo.toml", "secrets.py"):
        assert (shipped / kept).exists()
    assert not (site / "horcrux_tools").exists() and not (site / "bin").exists()
    # no page file: the stack serves the page from S3 (the repository's web/, infra/web.py)
    assert not (shipped / "web").exists()
    assert [f for f in files(shipped) if f.endswith((".js", ".html", ".css"))] == []
    assert not [f for f in files(shipped) if f.endswith("words.json")]
    assert not [d for d in site.glob("horcrux_tools*")]
    # installed from the wheel (pip's dist-info), and its RECORD names exactly what is there
    (info,) = site.glob("horcrux_hunt-*.dist-info")
    assert (info / "WHEEL").exists() and (info / "INSTALLER").read_text().strip() == "pip"
    assert not (info / "direct_url.json").exists()  # installed by name: no build path baked in
    recorded = {line.split(",", 1)[0] for line in (info / "RECORD").read_text().splitlines()}
    assert {f"horcrux/{f}" for f in files(shipped)} == {
        r for r in recorded if r.startswith("horcrux/")
    }
    assert all((site / r).exists() for r in recorded)
    entry_points = info / "entry_points.txt"  # no console script, no brain entry point
    assert not entry_points.exists() or "brains" not in entry_points.read_text()
    assert not entry_points.exists() or "console_scripts" not in entry_points.read_text()


def test_the_core_layer_is_for_linux_arm64_py313(lambda_layers: dict[str, Path]) -> None:
    site = lambda_layers["core"] / "python"
    binaries = [p.name for p in site.rglob("*.so")]
    assert any(re.match(r"_pydantic_core\.cpython-313-aarch64-linux-gnu\.so$", b) for b in binaries)
    assert any(
        re.match(r"_multiarray_umath\.cpython-313-aarch64-linux-gnu\.so$", b) for b in binaries
    )
    assert not [b for b in binaries if "x86_64" in b or "cpython-311" in b]
    for runtime_has_it in ("boto3", "botocore"):
        assert not (site / runtime_has_it).exists()  # the Lambda runtime ships boto3


def test_the_anthropic_layer_holds_the_sdk_and_nothing_the_core_has(
    lambda_layers: dict[str, Path],
) -> None:
    core = build_layer.distributions(lambda_layers["core"] / "python")
    llm = build_layer.distributions(lambda_layers["llm"] / "python")
    assert "anthropic" in llm and "anthropic" not in core
    (requirement,) = requirements(build_layer.LLM_REQUIREMENTS)
    assert requirement.specifier.contains(llm["anthropic"][0])
    assert not set(core) & set(llm)  # one version of each package under /opt/python
    assert {"httpx2", "jiter"} & set(llm) or {"httpx", "jiter"} & set(llm)
    top = {p.name for p in (lambda_layers["llm"] / "python").iterdir()}
    assert not top & {p.name for p in (lambda_layers["core"] / "python").iterdir()}


def test_the_core_layer_stays_under_the_size_goal(lambda_layers: dict[str, Path]) -> None:
    assert size(lambda_layers["core"]) <= LAYER_GOAL_BYTES


def test_the_layers_built_twice_from_the_locks_are_the_same(tmp_path: Path) -> None:
    """Two independent builds (fresh directories, everything reinstalled from the locks)."""
    first = build_layer.build(build_layer.LAMBDA, force=True, root=tmp_path / "one")
    second = build_layer.build(build_layer.LAMBDA, force=True, root=tmp_path / "two")
    for name in build_layer.LAYERS:
        a, b = first[name], second[name]
        files_a = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
        files_b = sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
        assert files_a == files_b, set(files_a) ^ set(files_b)
        assert abs(size(a) - size(b)) <= 0.01 * size(a)
        _, differ, _ = filecmp.cmpfiles(a, b, files_a, shallow=False)
        assert not [f for f in differ if not f.endswith((".dist-info/RECORD", "INSTALLER"))]


def test_horcrux_never_uses_numpy_random_which_the_layer_prunes() -> None:
    source = ROOT / "shared" / "horcrux"
    users = [
        str(p.relative_to(source))
        for p in source.rglob("*.py")
        if re.search(r"numpy\.random|np\.random|from numpy import random", p.read_text())
    ]
    assert not users, f"numpy.random is pruned from the layer (infra/build_layer.py): {users}"
    assert "numpy/random" in build_layer.PRUNE_PATHS


# ------------------------------------------------------------------ the tools stay out
def test_the_handlers_imports_are_all_in_the_layer(host_layers: dict[str, Path]) -> None:
    """Every `horcrux` module a handler can ever import (lazy imports and the registry's
    built-in brains too) is in the layer, the same set as from the source tree."""
    source = walk_imports(ROOT / "shared", handler_files(), BUILTIN_MODULES)
    assert not source.missing
    assert {"horcrux.store", "horcrux.agents.planner", "horcrux.agents.opponents"} <= source.modules
    layer = walk_imports(host_layers["core"] / "python", handler_files(), BUILTIN_MODULES)
    assert not layer.missing, f"imported by the functions, missing from the layer: {layer.missing}"
    assert layer.modules == source.modules


def test_every_module_of_the_layer_imports_in_a_clean_interpreter_without_a_tool(
    host_layers: dict[str, Path], boto3_dir: Path
) -> None:
    """Each module of the layer's `horcrux`, imported in a fresh `python3.13 -I -S` with only
    the layers and boto3: none fails, none tries to import a tool package (caught or not)."""
    site = host_layers["core"] / "python"
    result = import_every_module(site, [host_layers["llm"] / "python", boto3_dir])
    source = ROOT / "shared"
    assert set(result.modules) == {
        ".".join(p.relative_to(source).with_suffix("").parts).removesuffix(".__init__")
        for p in (source / "horcrux").rglob("*.py")
    }
    assert len(result.modules) > 70 and "horcrux.agents.opponents" in result.modules
    assert not result.failed, result.failed
    assert set(result.imported) == set(result.modules)
    assert not result.tool_imports, f"runtime modules import tools: {result.tool_imports}"
    assert not result.tools_loaded
    assert "pydantic" in result.top_level and "numpy" in result.top_level


def test_the_clean_import_sees_a_failure_and_a_caught_tool_import(tmp_path: Path) -> None:
    """The check above can fail: a module that raises, and a tool imported lazily inside a
    function whose ImportError is caught, are both reported."""
    package = tmp_path / "horcrux"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ok.py").write_text("VALUE = 1\n")
    (package / "broken.py").write_text("raise RuntimeError('boom')\n")
    (package / "sneaky.py").write_text(
        "def serve():\n"
        "    from horcrux_tools import cli\n"
        "try:\n"
        "    import moto\n"
        "except ImportError:\n"
        "    moto = None\n"
    )
    result = import_every_module(tmp_path)
    assert result.modules == ("horcrux", "horcrux.broken", "horcrux.ok", "horcrux.sneaky")
    assert set(result.failed) == {"horcrux.broken"} and "boom" in result.failed["horcrux.broken"]
    assert result.tool_imports == (("moto", "horcrux.sneaky"),)
    assert set(result.imported) == {"horcrux", "horcrux.ok", "horcrux.sneaky"}


def test_the_extras_hold_the_tools_dependencies_and_dev_installs_them_all() -> None:
    """The runtime (`horcrux-hunt`) has only the Lambda's dependencies and [llm]; the tools
    (`horcrux-tools`) depend on it, carry the CLI and their extras; dev installs all."""
    runtime, tools = runtime_project(), tools_project()

    def extras(project: dict[str, Any]) -> dict[str, set[str]]:
        return {
            k: {Requirement(r).name for r in v}
            for k, v in project.get("optional-dependencies", {}).items()
        }

    assert extras(runtime) == {"llm": {"anthropic"}}
    assert "scripts" not in runtime  # the CLI is a tool
    assert {Requirement(d).name for d in runtime["dependencies"]}.isdisjoint(
        {"moto", "boto3", "matplotlib", "anthropic", "waitress", "horcrux-tools"}
    )
    assert [str(Requirement(d)) for d in tools["dependencies"]] == [
        f"horcrux-hunt=={runtime['version']}"
    ]
    assert tools["version"] == runtime["version"]
    assert tools["scripts"] == {"horcrux": "horcrux_tools.cli:main"}
    tool_extras = extras(tools)
    assert tool_extras["local"] >= {"moto", "boto3", "waitress"}
    assert tool_extras["eval"] >= {"matplotlib"}
    assert tool_extras["llm"] == {"horcrux-hunt"}  # the runtime's [llm]
    assert set(tool_extras) >= set(extras_module.EXTRA_MODULES)
    dev = {r.name for r in requirements(ROOT / "requirements-dev.txt")}
    assert (set().union(*tool_extras.values()) - {"horcrux-hunt"}) | {"anthropic"} <= dev
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements-dev.txt -e . -e tools" in makefile  # `make venv` installs both
    assert re.search(r"^\$\(STAMP\):.*\btools/pyproject\.toml\b", makefile, re.M)
    # no entry points for the built-in brains: they register without them (test below)
    groups = runtime.get("entry-points", {})
    assert not groups.get("horcrux.voldemort_brains") and not groups.get("horcrux.harry_brains")


def test_a_missing_extra_names_the_pip_command() -> None:
    with pytest.raises(SystemExit) as raised:
        extras_module.require_extra("local", "serve", modules=("moto", "no_such_module_xyz"))
    message = str(raised.value)
    assert "pip install 'horcrux-tools[local]'" in message
    assert "no_such_module_xyz" in message and "moto" not in message.split("needs")[1]
    assert "horcrux serve" in message
    extras_module.require_extra("local", "serve", modules=("json",))  # present: returns
    assert extras_module.EXTRA_MODULES["local"] == ("moto", "boto3")


# ------------------------------------------------------------------ in a clean interpreter
@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_each_handler_imports_with_only_its_layers_and_boto3(
    spec: FunctionSpec, host_layers: dict[str, Path], boto3_dir: Path
) -> None:
    result = import_handler(spec, boto3_dir, layers=host_layers)
    assert result.entry_point
    assert not result.client_at_import, "a boto3 client was built at import"
    assert not result.anthropic_imported  # lazily, by the LLM brains only, with a key
    if spec.name in ("api", "compaction"):  # no brain at start-up: numpy comes with one
        assert "numpy" not in result.modules
    allowed = (
        str(ROOT / "build" / "layer-host"),
        str(boto3_dir),
        str(spec.code_dir),
        str(Path(build_layer.host_python()).resolve().parents[1]),  # its standard library
        "",
    )
    outside = [f for f in result.files if f and not f.startswith(allowed)]
    assert not outside, f"imported from outside the layers and boto3: {outside[:5]}"
    assert not [m for m in result.modules if m in {"tests", "moto", "api_fixtures"}]
    layer = str(host_layers["core"] / "python")
    loaded = frozenset(
        ".".join(Path(f).relative_to(layer).with_suffix("").parts).removesuffix(".__init__")
        for f in result.files
        if f.startswith(layer + "/horcrux/")
    )
    assert "horcrux.store" in loaded
    assert not set(result.modules) & set(TOOL_IMPORTS)


@pytest.mark.parametrize("spec", names.FUNCTIONS, ids=lambda s: s.name)
def test_anthropic_is_importable_only_where_an_llm_brain_may_run(
    spec: FunctionSpec, host_layers: dict[str, Path], boto3_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "handler.py").write_text(
        "import importlib.util\n"
        "FOUND = importlib.util.find_spec('anthropic') is not None\n"
        "if FOUND:\n"
        "    import anthropic  # the SDK and its dependencies resolve from the layers\n"
        "    anthropic.Anthropic(api_key='x', max_retries=0)  # builds, calls nothing\n"
        f"{spec.handler.split('.')[1]} = lambda event, context: FOUND\n"
    )
    result = import_handler(spec, boto3_dir, layers=host_layers, code_dir=tmp_path)
    assert result.entry_point
    assert result.anthropic_imported is spec.llm


def listed_brains() -> dict[str, list[str]]:
    """What `horcrux brains` prints, seat -> names (the CLI from the source tree)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from horcrux_tools.cli import main; sys.exit(main(['brains']))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    seats: dict[str, list[str]] = {}
    seat = ""
    for line in done.stdout.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            seat = line[:-1]
            seats[seat] = []
        elif line.strip():
            seats[seat].append(line.split()[0])
    return seats


BRAINS_PROBE = """
import json
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux import engine
from horcrux.rules import CLASSIC
state, _ = engine.new_game(CLASSIC, 1)
made, failed = {{}}, {{}}
for registry, wanted in ((HARRY_BRAINS, {harry!r}), (VOLDEMORT_BRAINS, {voldemort!r})):
    for name in wanted:
        try:
            brain = registry.create(name, CLASSIC, truth=lambda: state)
            made[registry.seat + ':' + name] = type(brain).__name__
        except Exception as exc:
            failed[registry.seat + ':' + name] = repr(exc)
assert not failed, failed
RESULT = json.dumps(made, sort_keys=True)
lambda_handler = lambda event, context: RESULT
"""


def test_every_listed_brain_is_created_in_a_clean_interpreter_on_the_layer(
    host_layers: dict[str, Path], boto3_dir: Path, tmp_path: Path
) -> None:
    """No entry point and nothing imported before: `late`, `decoy-heavy` and the rest exist
    on a cold Lambda as on a warm one (the names come from `horcrux brains`)."""
    listed = listed_brains()
    assert {"late", "decoy-heavy", "reference"} <= set(listed["voldemort"])
    assert {"planner", "gated", "naive"} <= set(listed["harry"])
    probe = BRAINS_PROBE.format(harry=listed["harry"], voldemort=listed["voldemort"])
    (tmp_path / "handler.py").write_text(probe)
    # an AI turn function (both layers) with a key: the llm brains build their client too
    result = import_handler(
        names.HARRY_TURN,
        boto3_dir,
        layers=host_layers,
        code_dir=tmp_path,
        env={"ANTHROPIC_API_KEY": "sk-ant-test-never-sent"},
    )
    assert result.entry_point
    # no entry point could have supplied them: the layer's metadata has none for brains
    (info,) = (host_layers["core"] / "python").glob("horcrux_hunt-*.dist-info")
    entry_points = info / "entry_points.txt"
    assert not entry_points.exists() or "brains" not in entry_points.read_text()


PLANNER_PROBE = """
from horcrux import play
from horcrux.rules import CLASSIC
state = play.play_game(CLASSIC, 3, "planner", "reference").game.state
RESULT = [state.winner, state.turn, state.destroyed]
lambda_handler = lambda event, context: RESULT
print("RESULT", RESULT)
"""


def test_the_planner_plays_from_the_pruned_layer(
    host_layers: dict[str, Path], boto3_dir: Path, tmp_path: Path
) -> None:
    """numpy without numpy.random still plays: a whole planner game in the clean interpreter,
    the same game as `horcrux_tools.sim` plays from the source tree."""
    from horcrux.rules import CLASSIC
    from horcrux_tools.sim import play_game

    expected = play_game(CLASSIC, 3, "planner", "reference")
    wanted = [expected.winner, expected.turns, expected.destroyed]
    (tmp_path / "handler.py").write_text(PLANNER_PROBE + f"assert RESULT == {wanted!r}, RESULT\n")
    result = import_handler(names.HARRY_TURN, boto3_dir, layers=host_layers, code_dir=tmp_path)
    assert result.entry_point and "numpy" in result.modules
