"""The `horcrux` command: simulate many games, replay one turn by turn, serve the API
locally (`serve`) or play it from a terminal (`play`)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

from horcrux import __version__
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.base import DEFAULT_HARRY
from horcrux.decisions import format_trace
from horcrux.engine import new_game
from horcrux.errors import HorcruxError
from horcrux.models import Ally, Attack, HarryMoved, PlantDecoy, Relocate, Search, VoldemortMoved
from horcrux.rules import PRESETS, preset
from horcrux_tools.batch.command import add_engine_args
from horcrux_tools.sim import GameResult, play_game, run_games, summarise

T = TypeVar("T")


def _describe_move(move: Any) -> str:
    if isinstance(move, Search):
        return f"search {move.location}"
    if isinstance(move, Attack):
        return f"attack {move.location}"
    if isinstance(move, Ally):
        return f"{move.ally} {' + '.join(move.locations)}"
    if isinstance(move, Relocate):
        return f"relocate {move.from_location} -> {move.to_location}"
    if isinstance(move, PlantDecoy):
        return f"plant decoy at {move.location}"
    return "pass"


def format_summary(summary: dict[str, Any]) -> str:
    wasted = summary["wasted_attacks"]
    turns = summary["mean_turns_to_win"]
    lines = [
        f"{summary['harry']} vs {summary['voldemort']}, {summary['rules']} rules, "
        f"{summary['games']} games",
        f"  win rate            {summary['win_rate']:.1%}  "
        f"(95% Wilson CI {summary['ci_low']:.1%} - {summary['ci_high']:.1%}; "
        f"{summary['wins']} wins)",
        f"  mean turns to win   {turns:.1f}" if turns is not None else "  mean turns to win   -",
        f"  wasted attacks      decoy {wasted['decoy']}, empty {wasted['empty']} "
        f"({wasted['per_game']:.2f} per game)",
        f"  Horcruxes destroyed {summary['mean_destroyed']:.2f} per game",
    ]
    decisions = summary.get("decisions")
    if decisions:
        shares = ", ".join(f"{t} {s:.0%}" for t, s in decisions["tier_shares"].items())
        lines.append(f"  decisions by tier   {shares} ({decisions['count']} decisions)")
        per_tier = "; ".join(
            f"{t} {_num(v['context_tokens_median'])}/{_num(v['context_tokens_p95'])}"
            for t, v in decisions["tiers"].items()
            if v["count"]
        )
        lines.append(
            f"  context tokens      median {_num(decisions['context_tokens_median'])}, "
            f"p95 {_num(decisions['context_tokens_p95'])} (by tier, median/p95: {per_tier})"
        )
        tokens = decisions["tokens"]
        if tokens["total"]:
            lines.append(
                f"  LLM tokens          in {tokens['in']}, out {tokens['out']}; "
                f"cost ${decisions['cost_usd']:.4f} (${decisions['cost_per_game_usd']:.5f}/game)"
            )
        llm = decisions.get("llm")
        if llm:
            lines.append(
                f"  LLM calls           {llm['calls']}: {llm['from_model']:.0%} the model's move, "
                f"{llm['unparsable_or_illegal']:.0%} unparsable or illegal; median "
                f"{llm['latency_ms_median'] / 1000:.2f} s, whole prompt "
                f"{llm['prompt_tokens_median']:g} tokens (model's count; context "
                f"{llm['context_tokens_median']:g} estimated)"
            )
        if decisions["fallbacks"]:
            fb = ", ".join(f"{k} {v}" for k, v in decisions["fallbacks"].items())
            lines.append(f"  fallbacks           {fb}")
        for note in decisions["notes"]:
            lines.append(f"  note: {note}")
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def cmd_simulate(args: argparse.Namespace) -> int:
    rules = preset(args.rules)
    # fail fast on a bad spec, before any worker starts
    probe, _ = new_game(rules, args.seed)
    HARRY_BRAINS.create(args.harry, rules, truth=lambda: probe)
    VOLDEMORT_BRAINS.create(args.voldemort, rules, truth=lambda: probe)
    from horcrux_tools.batch.command import engine_of
    from horcrux_tools.batch.progress import Progress

    engine = engine_of(args, args.workers)
    show = args.progress if args.progress is not None else args.games >= 50
    bar = Progress(args.games, enabled=show)
    results: list[GameResult] = list(
        run_games(
            rules,
            args.harry,
            args.voldemort,
            args.games,
            args.seed,
            engine=engine,
            on_result=lambda done, total: bar.update(),
        )
    )
    bar.finish()
    summary = summarise(results, harry=args.harry, voldemort=args.voldemort, rules=args.rules)
    summary["seed"] = args.seed
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(format_summary(summary))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    rules = preset(args.rules)
    result = play_game(rules, args.seed, args.harry, args.voldemort, keep_events=True)
    assert result.events is not None
    from horcrux.views import build_replay

    replay = build_replay(result.events)
    traces = {d.turn: d for d in result.decisions if d.trace is not None} if args.trace else {}
    print(
        f"seed {args.seed}: {args.harry} (Harry) vs {args.voldemort} (Voldemort),"
        f" {args.rules} rules"
    )
    print(f"start   truth: Horcruxes {', '.join(replay.steps[0].horcruxes)}")
    header = f"{'turn':>4}  {'Harry sees':<52} {'truth after the turn'}"
    print(header)
    print("-" * len(header))
    harry_line = ""
    for step, event in zip(replay.steps[1:], result.events[1:], strict=True):
        if isinstance(event, HarryMoved):
            if event.turn in traces:
                print(format_trace(traces[event.turn]))
            seen = ", ".join(o.outcome for o in event.observations)
            harry_line = f"{_describe_move(event.action)} -> {seen}"
            harry_line += f"  [{step.attacks_left} att]"
            if event.winner is not None:
                print(f"{event.turn:>4}  {harry_line:<52} {_truth(step)}")
        elif isinstance(event, VoldemortMoved):
            truth = f"{_truth(step)}  | V: {_describe_move(event.action)}"
            print(f"{event.turn:>4}  {harry_line:<52} {truth}")
    print(f"winner: {replay.winner} ({replay.end_reason})")
    return 0


def _truth(step: Any) -> str:
    decoys = f" D: {','.join(step.decoys)}" if step.decoys else ""
    return f"H: {','.join(step.horcruxes) or '-'}{decoys}"


def cmd_brains(args: argparse.Namespace) -> int:
    for registry in (HARRY_BRAINS, VOLDEMORT_BRAINS):
        print(f"{registry.seat}:")
        for name in registry.names():
            entry, _ = registry.entry(name)
            print(f"  {name:<16} {entry.description}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from horcrux_tools.extras import require_extra

    require_extra("local", "serve")
    from horcrux_tools.local.ai_turns import WORKERS
    from horcrux_tools.local.server import ServerOptions, serve
    from horcrux_tools.local.wsgi import Rate

    def rate(text: str) -> Rate | None:
        return None if args.no_limits or text == "off" else Rate.parse(text)

    options = ServerOptions(
        threads=args.threads,
        ai_workers=WORKERS if args.ai_workers is None else args.ai_workers,
        channel_timeout_s=args.channel_timeout,
        play_rate=rate(args.rate),
        create_rate=rate(args.create_rate),
        read_deadline_s=args.read_deadline,
        per_client_connections=args.max_client_connections,
        connection_limit=args.max_connections,
        lobby_cache_s=args.lobby_cache,
        read_budget=rate(args.read_budget),
    )
    return serve(args.host, args.port, quiet=args.quiet, options=options)


def cmd_play(args: argparse.Namespace) -> int:
    from horcrux_tools.extras import require_extra

    if args.local:
        require_extra("local", "play --local")
    from horcrux_tools.local.play import play, play_local

    options: dict[str, Any] = {
        "seat": args.seat,
        "rules": args.rules,
        "harry": args.harry,
        "voldemort": args.voldemort,
        "seed": args.seed,
        "join": args.join,
    }
    if (args.resume is None) != (args.token is None):
        raise HorcruxError("--resume GAME_ID and --token TOKEN go together")
    if args.resume is not None:
        if args.local or args.join:
            raise HorcruxError(
                "--resume takes up a game on a lasting server (--api), not with --local or --join"
            )
        options["resume"] = (args.resume, args.token)
    if args.local:
        return play_local(trace=args.trace, **options)
    if args.trace:
        raise HorcruxError(
            "--trace needs --local: the AI seat's decisions are made where the server runs"
        )
    return play(args.api, **options)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from horcrux_tools.evaluation.command import evaluate

    return evaluate(args)


def cmd_ceiling(args: argparse.Namespace) -> int:
    from horcrux_tools.evaluation.ceiling import command

    return command(args)


def cmd_season(args: argparse.Namespace) -> int:
    from horcrux_tools.echo.season import ABLATION_ARMS, BASE_ARMS, run_season, write_season

    if args.family:
        from horcrux_tools.echo.family_seasons import season_family

        return season_family(args)
    if args.ablation:
        from horcrux_tools.batch.command import engine_of
        from horcrux_tools.echo.ablation import write_ablation

        print(
            write_ablation(
                args.ablation,
                games=args.games,
                seed=args.seed,
                rules=args.rules,
                workers=args.workers or 2,
                engine=engine_of(args, args.workers or 2),
            )
        )
        return 0
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip()) if args.arms else BASE_ARMS
    if args.all_arms:
        arms = BASE_ARMS + ABLATION_ARMS
    season = run_season(
        args.voldemort,
        args.games,
        seed=args.seed,
        rules=args.rules,
        switch_to=args.switch_to,
        switch_at=args.switch_at,
        arms=arms,
        switch_every=args.switch_every,
        mix=tuple(m.strip() for m in args.mix.split(",") if m.strip()) if args.mix else (),
    )
    data = season.as_dict()
    if args.out:
        write_season(data, args.out, plot=not args.no_plots)
    if args.json:
        print(json.dumps(data, sort_keys=True))
        return 0
    half = args.games // 2
    if args.mix:
        against = f"each game one of {args.mix}"
    elif args.switch_to and args.switch_every:
        against = f"{args.voldemort} and {args.switch_to}, alternating every {args.switch_every}"
    elif args.switch_to:
        against = f"{args.voldemort} -> {args.switch_to} at game {season.switch_at}"
    else:
        against = args.voldemort
    print(
        f"{args.games} games vs {against}"
        + f"; memory items max {data['memory_items_max']}, last {data['memory_items_last']}"
    )
    for arm, rates in data["arms"].items():
        print(
            f"  {arm:>11}: all {rates['all']:.1%}, games {half + 1}-{args.games}"
            f" {rates['second_half']:.1%}"
        )
    for point in data["curve"]:
        cells = "  ".join(f"{a} {point[a]:.0%}" for a in data["arms"])
        print(f"  games {point['games']:>9}: {cells}")
    if data.get("thresholds_last"):
        print(f"  threshold posterior at the end: {data['thresholds_last']}")
    if "adaptation_games" in data:
        print(f"  games to adapt after the switch: {data['adaptation_games']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="horcrux", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def seats(p: argparse.ArgumentParser, harry: str) -> None:
        p.add_argument("--harry", default=harry, help=f"Harry's brain (default {harry})")
        p.add_argument("--voldemort", default="reference", help="Voldemort's brain")
        p.add_argument("--rules", default="classic", choices=sorted(PRESETS))
        p.add_argument("--seed", type=int, default=0)

    sim = sub.add_parser("simulate", help="play many seeded games and print the win rate")
    seats(sim, DEFAULT_HARRY)
    sim.add_argument("--games", type=_positive, default=200)
    sim.add_argument("--workers", type=_positive, default=1, help="processes (default 1)")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    add_engine_args(sim)
    sim.set_defaults(func=cmd_simulate)

    rep = sub.add_parser("replay", help="print one game turn by turn, truth beside Harry's view")
    seats(rep, DEFAULT_HARRY)
    rep.add_argument(
        "--trace",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show each LLM decision: its tier, the context the model saw, its reply",
    )
    rep.set_defaults(func=cmd_replay)

    srv = sub.add_parser(
        "serve",
        help="serve the HTTP API locally (moto DynamoDB, AI turns in process)",
        description="Start moto's DynamoDB in a child process on 127.0.0.1 (or use "
        "AWS_ENDPOINT_URL_DYNAMODB), create the tables and serve the API Lambda's handler "
        "over HTTP with waitress; Ctrl-C or SIGTERM stops it.",
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    srv.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: a free one)")
    srv.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    srv.add_argument("--threads", type=_positive, default=8, help="request threads (default 8)")
    srv.add_argument(
        "--ai-workers",
        type=_positive,
        default=None,
        help="AI-turn workers (default 2: horcrux_tools.local.ai_turns.WORKERS)",
    )
    srv.add_argument(
        "--channel-timeout",
        type=_positive,
        default=30,
        help="seconds before an idle or half-sent connection is closed (default 30)",
    )
    srv.add_argument(
        "--rate",
        type=_rate,
        default="50/100",
        help="per-client limit, RATE[/BURST] requests a second (default 50/100; off: none)",
    )
    srv.add_argument(
        "--create-rate",
        type=_rate,
        default="1/10",
        help="per-client limit on POST /games, RATE[/BURST] (default 1/10; off: none)",
    )
    srv.add_argument(
        "--read-deadline",
        type=_positive_float,
        default=10.0,
        help="seconds from a request's first byte to its last (headers and body), however "
        "steadily it trickles; past it 408 and the connection is closed (default 10)",
    )
    srv.add_argument(
        "--max-connections",
        type=_positive,
        default=4000,
        help="connections open at once in all (an idle one holds a socket, no thread); more "
        "wait in the listen backlog (default 4000)",
    )
    srv.add_argument(
        "--max-client-connections",
        type=_positive,
        default=100,
        help="connections open at once from one client address; one more gets 429 and is "
        "closed (default 100)",
    )
    srv.add_argument(
        "--lobby-cache",
        type=_non_negative_float,
        default=1.0,
        help="seconds a GET /games page is answered from a copy (default 1; 0: never)",
    )
    srv.add_argument(
        "--read-budget",
        default="10/20",
        help="RATE/BURST tokens a second for the lobby pages ALL clients have computed (a "
        "page of N games costs 1 + N/10; a cached page nothing); over it 429 (default "
        "10/20; off)",
    )
    srv.add_argument("--no-limits", action="store_true", help="no rate limits (benchmarks)")
    srv.set_defaults(func=cmd_serve)

    ply = sub.add_parser(
        "play",
        help="play a game from the terminal against the HTTP API",
        description="A person plays one seat against an AI seat over the HTTP API; "
        "type `help` in the game for the commands.",
    )
    ply.add_argument("--api", default="http://127.0.0.1:8000", help="the API's base URL")
    ply.add_argument(
        "--local", action="store_true", help="start an embedded local server and play on it"
    )
    ply.add_argument(
        "--seat",
        choices=("harry", "voldemort"),
        default=None,
        help="your seat: default harry in a new game, the free seat with --join",
    )
    ply.add_argument("--rules", choices=sorted(PRESETS), default=None, help="default standard")
    ply.add_argument("--harry", default=None, help="AI Harry's brain (with --seat voldemort)")
    ply.add_argument("--voldemort", default=None, help="AI Voldemort's brain (with --seat harry)")
    ply.add_argument("--seed", type=int, default=None, help="default: drawn by the server")
    ply.add_argument("--join", metavar="GAME_ID", default=None, help="join an open game's seat")
    ply.add_argument(
        "--resume",
        metavar="GAME_ID",
        default=None,
        help="go on with a game you left (with --token: the seat token it printed)",
    )
    ply.add_argument("--token", default=None, help="your seat token, with --resume")
    ply.add_argument(
        "--trace",
        action="store_true",
        help="with --local: print each LLM decision of the AI seat (tier, context, reply)",
    )
    ply.set_defaults(func=cmd_play)

    ev = sub.add_parser(
        "evaluate",
        help="every Harry architecture against each Voldemort on the same seeds: a report",
        description="Paired evaluation: markdown, JSON and PNG figures into --out.",
    )
    ev.add_argument("--harry", default=None, help="comma-separated specs (default: all)")
    ev.add_argument("--voldemort", default=None, help="comma-separated specs (default: all)")
    ev.add_argument("--rules", default="classic", choices=sorted(PRESETS))
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--games", type=_positive, default=None, help="default 2000 (--family: 300)")
    ev.add_argument("--workers", type=_positive, default=None, help="default: every core")
    ev.add_argument(
        "--llm",
        choices=("local", "anthropic"),
        default=None,
        help="run the real-model experiment with this backend (added to --out's report)",
    )
    ev.add_argument("--llm-games", type=int, default=20, help="whole games per LLM row")
    ev.add_argument("--llm-states", type=int, default=300, help="fixed decision states")
    ev.add_argument(
        "--llm-legal-states", type=int, default=100, help="states of the compressed-legal row"
    )
    ev.add_argument("--llm-workers", type=_positive, default=2, help="servers / parallel calls")
    ev.add_argument("--llm-url", default=None, help="comma-separated running servers' URLs")
    ev.add_argument("--fresh", action="store_true", help="ignore the experiment's checkpoint")
    ev.add_argument(
        "--llm-report-only",
        action="store_true",
        help="report what the experiment's checkpoint holds, run nothing (an interrupted run)",
    )
    ev.add_argument(
        "--llm-note",
        default=None,
        help="a sentence the real-model section prints under its header (how it was run)",
    )
    ev.add_argument("--out", default="evaluation", help="output folder (default ./evaluation)")
    ev.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    _family_args(ev, "--harry: default planner; family.json and a section of EVALUATION.md")
    ev.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    add_engine_args(ev, resume="evaluation.partial.jsonl or family.partial.jsonl in --out")
    ev.set_defaults(func=cmd_evaluate)

    ceil = sub.add_parser(
        "ceiling",
        help="the value of knowing the opponent: told vs default vs untold over dev family draws",
        description="Per dev draw of the generated family: the default planner, Harry told the "
        "draw's policy (told:D) and the untold particle Harry, on the same seeds; ceiling.json, "
        "img/ceiling.png and a section of EVALUATION.md into --out.",
    )
    ceil.add_argument("--draws", type=_positive, default=40, help="dev draws 0..N-1 (40)")
    ceil.add_argument("--games", type=_positive, default=20, help="games per draw and Harry (20)")
    ceil.add_argument(
        "--harry", default="planner,told,untold,hedged", help="a subset, planner and told in it"
    )
    ceil.add_argument("--workers", type=_positive, default=None, help="default: every core")
    ceil.add_argument("--out", default="evaluation", help="output folder (default ./evaluation)")
    ceil.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    add_engine_args(ceil, resume="ceiling.partial.jsonl in --out")
    ceil.set_defaults(func=cmd_ceiling)

    sea = sub.add_parser(
        "season",
        help="consecutive games vs one opponent, memory on and off on the same seeds",
        description="ECHO's measure (docs/ECHO.md): a learning curve, paired seeds.",
    )
    sea.add_argument("--voldemort", default="reference")
    sea.add_argument("--games", type=_positive, default=200)
    sea.add_argument("--seed", type=int, default=0)
    sea.add_argument("--rules", default="classic", choices=sorted(PRESETS))
    sea.add_argument("--switch-to", default=None, help="the opponent's style after the switch")
    sea.add_argument("--switch-at", type=_positive, default=None, help="default: halfway")
    sea.add_argument(
        "--switch-every",
        type=_positive,
        default=None,
        metavar="N",
        help="alternate --voldemort and --switch-to every N games",
    )
    sea.add_argument(
        "--mix",
        default=None,
        metavar="A,B,...",
        help="each game's opponent drawn from these (the season's seeded stream)",
    )
    sea.add_argument("--out", default=None, help="write season.json (and season.png) here")
    sea.add_argument("--no-plots", action="store_true")
    sea.add_argument(
        "--arms",
        default=None,
        help="comma-separated arms (default on,off,counter; also no-style, no-beliefs, no-decay)",
    )
    sea.add_argument("--all-arms", action="store_true", help="every arm (the layer ablations)")
    sea.add_argument(
        "--ablation",
        default=None,
        metavar="FILE",
        help="play every opponent of the ablation table with every arm and write the "
        "table's generated section into FILE (docs/ECHO.md)",
    )
    sea.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help="--ablation: processes (default 2); --family: default every core",
    )
    _family_args(sea, "arms on,off,counter; family-seasons.json and a section of ECHO.md")
    sea.add_argument("--named", action="store_true", help="--family: also the named opponents")
    sea.add_argument("--json", action="store_true")
    add_engine_args(sea, resume="--family: family-seasons.partial.jsonl in --out")
    sea.set_defaults(func=cmd_season)

    brains = sub.add_parser("brains", help="list the registered brains")
    brains.set_defaults(func=cmd_brains)

    from horcrux_tools import family_cli
    from horcrux_tools.local.model_cli import add_model_parser

    add_model_parser(sub)  # `horcrux model build|serve|status|path` (local/model_cli.py)
    family_cli.add_family_parser(sub)  # `horcrux family --list A..B` (family_cli.py)
    return parser


def _family_args(p: argparse.ArgumentParser, what: str) -> None:
    """`--family N --split dev|holdout` (docs/EVALUATION.md, the generated family)."""
    p.add_argument(
        "--family", type=_positive, default=None, metavar="N", help=f"N family draws ({what})"
    )
    p.add_argument(
        "--split", choices=("dev", "holdout"), default="dev", help="--family's draws (dev)"
    )


def _rate(text: str) -> str:
    """RATE[/BURST] (checked here, parsed by the server) or `off`."""
    if text != "off":
        rate, _, burst = text.partition("/")
        try:
            ok = float(rate) > 0 and (not burst or float(burst) >= 1)
        except ValueError:
            ok = False
        if not ok:
            raise argparse.ArgumentTypeError(
                f"a rate is RATE[/BURST] (RATE > 0, BURST >= 1) or off, got {text!r}"
            )
    return text


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be over 0, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


PIPED_COMMANDS = frozenset({"simulate", "replay", "brains"})
"""The commands that only print: `horcrux replay | head` ends them quietly (SIGPIPE's
default). Never the servers (`serve`, `play --local`): a client that disconnects early
would kill them."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in PIPED_COMMANDS and hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return int(args.func(args))
    except (HorcruxError, KeyError) as exc:
        message = exc.message if isinstance(exc, HorcruxError) else str(exc.args[0])
        print(f"horcrux: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
