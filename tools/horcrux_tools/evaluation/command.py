"""The `horcrux evaluate` command: the grid of Harry architectures against the adversaries
(`evaluation.runner`, `evaluation.report`), the generated family
(`evaluation.family_report`) and the real-model experiment (`evaluation.llm_experiment`),
each into its JSON, its figures and its section of EVALUATION.md."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.engine import new_game
from horcrux.errors import HorcruxError
from horcrux.rules import preset


def evaluate(args: argparse.Namespace) -> int:
    """`horcrux evaluate`: the grid (`--harry` x `--voldemort`), the generated family
    (`--family N`) or the real-model experiment (`--llm BACKEND`), into `--out`."""
    import os

    from horcrux_tools.extras import require_extra

    if not args.no_plots:
        require_extra("eval", "evaluate")
    from pathlib import Path

    from horcrux_tools.evaluation import plots, report, runner

    if args.family:
        from horcrux_tools.evaluation.family_report import evaluate_family

        return evaluate_family(args)
    args.games = args.games or 2000
    if args.llm:
        return _evaluate_llm(args)
    rules = preset(args.rules)
    harrys = tuple(args.harry.split(",")) if args.harry else runner.HARRY_ARCHITECTURES
    voldemorts = (
        tuple(args.voldemort.split(",")) if args.voldemort else runner.VOLDEMORT_ADVERSARIES
    )
    probe, _ = new_game(rules, args.seed)  # fail fast on a bad spec
    for h in harrys:
        HARRY_BRAINS.entry(h)
    for v in voldemorts:
        VOLDEMORT_BRAINS.create(v, rules, truth=lambda: probe)
    from horcrux_tools.batch.command import engine_of, log_of
    from horcrux_tools.batch.progress import Progress

    engine = engine_of(args, args.workers or os.cpu_count() or 1)
    out = Path(args.out)
    meta = {
        "command": "evaluate",
        "rules": args.rules,
        "games": args.games,
        "seed": args.seed,
        "harrys": list(harrys),
        "voldemorts": list(voldemorts),
    }
    log = log_of(out / LOG_NAME, meta, args)
    show = args.progress if args.progress is not None else True
    total = len(harrys) * len(voldemorts) * args.games
    progress = Progress(total, enabled=show)
    start = time.monotonic()

    def tick(done: int, total: int) -> None:
        progress.update()

    try:
        records = runner.run_grid(
            args.rules,
            harrys,
            voldemorts,
            args.games,
            args.seed,
            engine.workers,
            tick,
            engine=engine,
            log=log,
        )
    finally:
        log.close()
    progress.finish()
    workers = engine.workers
    seconds = time.monotonic() - start
    data = report.build_report(
        records,
        rules=args.rules,
        games=args.games,
        seed=args.seed,
        workers=workers,
        seconds=seconds,
        harrys=harrys,
        voldemorts=voldemorts,
        system_tokens=runner.system_tokens(args.rules),
        max_turns=rules.max_turns,
    )
    out.mkdir(parents=True, exist_ok=True)
    images = [] if args.no_plots else plots.write_all(data, out / "img")
    (out / "evaluation.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    _write_markdown(out, data, images)
    log.remove()
    print(f"{len(records)} games in {seconds:.0f} s on {engine.describe()}; report in {out}/")
    return 0


LLM_JSON = "llm-evaluation.json"
LOG_NAME = "evaluation.partial.jsonl"
"""The grid's game records as they finish (`--resume`), removed once the report is written."""


def _write_markdown(out: Any, data: dict[str, Any], images: list[str]) -> None:
    """EVALUATION.md from the grid's report and, when it exists, the real-model experiment."""
    from horcrux_tools.evaluation import llm_report, report

    llm_path = out / LLM_JSON
    llm = json.loads(llm_path.read_text()) if llm_path.exists() else None
    names = ("llm-agreement.png", "llm-latency.png")
    llm_images = [name for name in names if (out / "img" / name).exists()]
    section = None if llm is None else llm_report.render_section(llm, llm_images)
    text = report.render_markdown(data, images, llm_section=section)
    page = out / "EVALUATION.md"
    if page.exists():  # the family evaluation's and the ceiling's sections stay
        from horcrux_tools.evaluation import ceiling, family_report

        old = page.read_text()
        text = ceiling.SECTION.keep(old, family_report.SECTION.keep(old, text))
    page.write_text(text)


def _evaluate_llm(args: argparse.Namespace) -> int:
    """`horcrux evaluate --llm BACKEND`: the real-model experiment, into the same report."""
    from contextlib import ExitStack
    from pathlib import Path

    from horcrux_tools.evaluation import llm_experiment

    if args.engine != "local" or args.address:
        raise HorcruxError(
            "the real-model experiment runs on the local engine only (one worker per model "
            "server on this machine; docs/BATCH.md): drop --engine ray / --address"
        )
    out = Path(args.out)
    grid = out / "evaluation.json"
    if not grid.exists():
        raise HorcruxError(
            f"{grid} does not exist: run `horcrux evaluate --out {out}` first (the grid the "
            "real-model section is added to)"
        )
    data = json.loads(grid.read_text())
    voldemort = args.voldemort.split(",")[0] if args.voldemort else "reference"
    checkpoint = out / "llm-evaluation.jsonl"
    if args.fresh and checkpoint.exists():
        checkpoint.unlink()
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    start = time.monotonic()

    def tick(done: int, total: int) -> None:
        if show:
            spent = time.monotonic() - start
            sys.stderr.write(f"\r{done}/{total} jobs  {spent:,.0f} s")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    if args.llm_report_only:
        if not checkpoint.exists():
            raise HorcruxError(f"{checkpoint} does not exist: nothing to report")
        result = llm_experiment.report_from_checkpoint(
            checkpoint,
            rules_name=args.rules,
            voldemort=voldemort,
            seed=args.seed,
            states=args.llm_states,
            legal_states=args.llm_legal_states,
            workers=len(args.llm_url.split(",")) if args.llm_url else args.llm_workers,
            backend_name=args.llm,
        )
        return _write_llm(out, data, result, args)
    with ExitStack() as stack:
        urls: list[str | None]
        if args.llm_url:
            urls = list(args.llm_url.split(","))
        elif args.llm == "local":
            urls = _start_local_servers(stack, args.llm_workers)
        else:
            urls = [None] * args.llm_workers
        result = llm_experiment.run_experiment(
            args.rules,
            voldemort,
            states=args.llm_states,
            games=args.llm_games,
            seed=args.seed,
            urls=urls,
            backend_name=args.llm,
            legal_states=args.llm_legal_states,
            checkpoint=checkpoint,
            on_result=tick,
        )
    return _write_llm(out, data, result, args)


def _write_llm(out: Any, data: dict[str, Any], result: dict[str, Any], args: Any) -> int:
    from horcrux_tools.evaluation import llm_report

    if args.llm_note:
        result["meta"]["note"] = args.llm_note
    (out / LLM_JSON).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    if not args.no_plots:
        llm_report.write_plots(result, out / "img")
    _write_markdown(out, data, _grid_images(out, data))
    print(
        f"real-model experiment ({args.llm}): {result['meta']['seconds']:.0f} s; "
        f"{out}/{LLM_JSON} and {out}/EVALUATION.md"
    )
    return 0


def _grid_images(out: Any, data: dict[str, Any]) -> list[str]:
    """The grid's figures as its last run wrote them (so a re-render keeps them)."""
    from horcrux_tools.evaluation.runner import image_name

    names = [image_name("entropy-race", v) for v in data["entropy_race"]]
    names += ["win-rates.png", "memory-window.png", "tokens-by-tier.png"]
    return [n for n in names if (out / "img" / n).exists()]


def _start_local_servers(stack: Any, workers: int) -> list[str | None]:
    """`workers` local model servers of one thread each, stopped when `stack` closes."""
    from horcrux_tools.local.model_server import running_model_server

    return [
        stack.enter_context(running_model_server(port=0, threads=1)).base_url
        for _ in range(workers)
    ]


__all__ = ["LLM_JSON", "LOG_NAME", "evaluate"]
