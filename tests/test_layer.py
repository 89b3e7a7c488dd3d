"""The Lambda layers: what the assets hold, and each handler importing from them alone.

The assets (`build/layer/{core,llm}`) are built for the functions' platform, Linux arm64 and
CPython 3.13, so this machine cannot import them. The import checks use the host build of
the same requirements (`build/layer-host`, infra/build_layer.py --host): the pure-Python
packages (horcrux, powertools, anthropic, ...) are the same files, only numpy's,
pydantic-core's and jiter's binaries are this interpreter's. Both builds are cached under
build/ (a stamp of the requirements); the first one of a clone needs PyPI or pip's cache.
"""

from __future__ import annotations

import filecmp
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from infra import build_layer, names  # noqa: E402
from infra.clean_import import boto3_only, import_handler  # noqa: E402
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


def test_the_core_layer_holds_the_current_horcrux_package(lambda_layers: dict[str, Path]) -> None:
    shipped = lambda_layers["core"] / "python" / "horcrux"
    source = ROOT / "shared" / "horcrux"
    files = sorted(p.relative_to(source) for p in source.rglob("*.py"))
    assert files and (shipped / "secrets.py").exists()
    _, mismatch, errors = filecmp.cmpfiles(source, shipped, [str(f) for f in files], False)
    assert not mismatch and not errors
    assert (shipped / "py.typed").exists()


def test_the_core_layer_satisfies_requirements_for_linux_arm64_py313(
    lambda_layers: dict[str, Path],
) -> None:
    site = lambda_layers["core"] / "python"
    installed = build_layer.distributions(site)
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement = Requirement(line)
        version, _ = installed[requirement.name.lower()]
        assert requirement.specifier.contains(version), (requirement, version)
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
    requirement = Requirement((ROOT / "infra" / "llm-requirements.txt").read_text().split("\n")[-2])
    assert requirement.specifier.contains(llm["anthropic"][0])
    assert not set(core) & set(llm)  # one version of each package under /opt/python
    assert {"httpx2", "jiter"} & set(llm) or {"httpx", "jiter"} & set(llm)
    top = {p.name for p in (lambda_layers["llm"] / "python").iterdir()}
    assert not top & {p.name for p in (lambda_layers["core"] / "python").iterdir()}


def test_the_core_layer_stays_under_the_size_goal(lambda_layers: dict[str, Path]) -> None:
    assert size(lambda_layers["core"]) <= LAYER_GOAL_BYTES


def test_horcrux_never_uses_numpy_random_which_the_layer_prunes() -> None:
    source = ROOT / "shared" / "horcrux"
    users = [
        str(p.relative_to(source))
        for p in source.rglob("*.py")
        if re.search(r"numpy\.random|np\.random|from numpy import random", p.read_text())
    ]
    assert not users, f"numpy.random is pruned from the layer (infra/build_layer.py): {users}"
    assert "numpy/random" in build_layer.PRUNE_PATHS


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
        sys.base_prefix,
        "",
    )
    outside = [f for f in result.files if f and not f.startswith(allowed)]
    assert not outside, f"imported from outside the layers and boto3: {outside[:5]}"
    assert not [m for m in result.modules if m in {"tests", "moto", "api_fixtures"}]


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


def test_the_planner_plays_from_the_pruned_layer(
    host_layers: dict[str, Path], boto3_dir: Path, tmp_path: Path
) -> None:
    """numpy without numpy.random still plays: a whole planner game in the clean interpreter."""
    (tmp_path / "handler.py").write_text(
        "from horcrux.rules import CLASSIC\n"
        "from horcrux.sim import play_game\n"
        "RESULT = play_game(CLASSIC, 3, 'planner', 'reference')\n"
        "assert RESULT.turns > 0 and RESULT.winner in ('harry', 'voldemort'), RESULT\n"
        "lambda_handler = lambda event, context: RESULT.winner\n"
    )
    result = import_handler(names.HARRY_TURN, boto3_dir, layers=host_layers, code_dir=tmp_path)
    assert result.entry_point and "numpy" in result.modules
