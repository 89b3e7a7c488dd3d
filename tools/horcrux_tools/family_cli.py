"""`horcrux family --list A..B`: the generated Voldemorts of a range of seeds (docs/FAMILY.md).

One row per draw (seed, member, trigger, observer, destination, decoys/timing), or JSON
with `--json`. A range reaching the held-out split (seeds >= 100,000) is refused unless
`--holdout`, which passes the held-out key to these draws: report use only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from horcrux.agents.family import HOLDOUT_START, FamilyParams, draw, is_copy


def seed_range(text: str) -> range:
    """`A..B` (inclusive) or a single seed `A`, each a whole number >= 0, A <= B."""
    first, sep, last = text.partition("..")
    try:
        a = int(first)
        b = int(last) if sep else a
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a seed range is A..B or A (whole numbers), got {text!r}"
        ) from None
    if a < 0 or b < a:
        raise argparse.ArgumentTypeError(f"a seed range needs 0 <= A <= B, got {text!r}")
    return range(a, b + 1)


def row(p: FamilyParams) -> dict[str, Any]:
    """A draw as the JSON output has it: its fields, its one-line description, copy or not."""
    return {**p.as_dict(), "describe": p.describe(), "copy": is_copy(p)}


def _trigger(p: FamilyParams) -> str:
    if p.trigger == "positive":
        return f"positive+{p.delay}"
    if p.trigger == "threshold":
        return f"threshold@{p.threshold:.2f}"
    if p.trigger == "hazard":
        return f"hazard*{p.gain:.2f}"
    return p.trigger


def _observer(p: FamilyParams) -> str:
    if p.member != "generated":
        return "-"
    if p.observer == "tally":
        return f"tally:{p.window}"
    if p.observer == "bayes-moving":
        return f"bayes-moving:{p.motion}"
    return p.observer


def table(draws: Sequence[FamilyParams]) -> str:
    header = ("seed", "member", "trigger", "observer", "destination", "decoys/timing")
    lines = [header]
    for p in draws:
        decoys = "never" if p.decoys == "never" else f"{p.decoys}/{p.timing}"
        destination = "-" if p.trigger == "never" else p.destination  # never used
        lines.append((str(p.seed), p.member, _trigger(p), _observer(p), destination, decoys))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def run(args: argparse.Namespace) -> int:
    seeds: range = args.list
    if seeds[-1] >= HOLDOUT_START and not args.holdout:
        print(
            f"horcrux family: seeds >= {HOLDOUT_START:,} are the held-out report split; "
            "pass --holdout (report use only) to list them",
            file=sys.stderr,
        )
        return 2
    draws = [draw(seed, holdout=args.holdout) for seed in seeds]
    if args.json:
        print(json.dumps([row(p) for p in draws], sort_keys=True))
    else:
        print(table(draws))
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--list", type=seed_range, required=True, metavar="A..B", help="seeds (inclusive) or one"
    )
    p.add_argument("--json", action="store_true", help="JSON: a list of draws")
    p.add_argument(
        "--holdout",
        action="store_true",
        help=f"allow seeds >= {HOLDOUT_START:,} (opens the held-out split: report only)",
    )
    p.set_defaults(func=run)


def add_family_parser(sub: Any) -> None:
    """Add `horcrux family` to the CLI's subparsers."""
    add_arguments(sub.add_parser("family", help="list the generated Voldemorts of a seed range"))


def main(argv: Sequence[str] | None = None) -> int:
    """`horcrux family ...` on its own (the arguments after `family`)."""
    parser = argparse.ArgumentParser(prog="horcrux family", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


__all__ = ["add_family_parser", "main", "row", "seed_range", "table"]
