"""Every decision on a computed float goes through `horcrux.belief.ties` (one tie order, one
ranked sort): a walk of the runtime's syntax trees finds every `argmax`, `argmin`,
`argsort`, `max(..., key=...)`, `min(..., key=...)`, `sorted(..., key=...)` and
`.sort(key=...)` outside `belief/ties.py`, and each one must be on the allow-list below
with its reason (a key over integers or strings, a one-hot vector, a file another change
moves). An entry that no longer matches a call fails too, so the list stays honest."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "shared" / "horcrux"
TIES = "belief/ties.py"
KEYED = frozenset({"max", "min", "sorted", "sort"})
"""Calls that pick or order by a key: flagged with `key=` (without one they compare the
values themselves, whose order among equals no decision reads)."""
ARG = frozenset({"argmax", "argmin", "argsort", "nanargmax", "nanargmin", "lexsort"})
"""numpy's index pickers: their order among (near-)equals is the floats' last bits."""

Site = tuple[str, str, str]
"""(file under shared/horcrux, enclosing function's qualified name, the call's name)."""

ALLOWED: dict[Site, str] = {
    ("agents/candidates.py", "candidate_moves", "sorted"): (
        "the key is `_order`: a move's kind and board indices (ints), the offer's fixed order"
    ),
    ("agents/harry_baselines.py", "NaiveHarry.decide", "max"): (
        "the key is an int tally (net positives per location): exact on every machine"
    ),
    ("agents/particle_harry.py", "ParticleHarry.stats", "sorted"): (
        "the particle brains are the lead's (issue 42's brief): the policy weights listed in "
        "the simulator's stats, names after exact ties; no move reads it"
    ),
    ("belief/filter.py", "Filters._move_belief", "argmax"): (
        "Harry's attack vector under the rule has at most one nonzero entry "
        "(`_rule_attack` sets only its pick, made by ties.argmax_first): argmax reads where "
        "it is, and an all-zero vector returns before its index is used"
    ),
    ("echo/lifecycle.py", "_cap", "sorted"): (
        "the key is `created`, a clock timestamp copied into the item, not a computed value"
    ),
    ("echo/use.py", "memory_line", "sorted"): (
        "the key is an int (corrections before beliefs); the sort is stable, so each kind "
        "keeps recall's ranked order (ties.ranked)"
    ),
    ("memory/context.py", "<module>", "sorted"): (
        "the key is len of the locations' short names (ints): longest first for the regex"
    ),
    ("store/memory.py", "MemoryStore.list_games", "sorted"): (
        "the key is a string (the lobby's sort key)"
    ),
    ("compaction.py", "_top", "max"): (
        "reads a stored belief point (rounded to 6 places); compaction.py is another "
        "change's file (issue 42's brief): follow-up onto ties.first_best"
    ),
    ("compaction.py", "_belief_at", "max"): "the key is a turn number (int)",
    ("compaction.py", "_belief_summary", "sorted"): (
        "orders a stored top (rounded to 6 places) for the record; compaction.py is "
        "another change's file (issue 42's brief): follow-up onto ties.ranked_items"
    ),
    ("compaction.py", "summarise_game", "sorted"): "the key is a turn number (int)",
}


def _name(call: ast.Call) -> str | None:
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if name in ARG:
        return name
    if name in KEYED and any(k.arg == "key" for k in call.keywords):
        if name == "sort" and not isinstance(f, ast.Attribute):
            return None
        return name
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, str, int]] = []

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._enter(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._enter(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._enter(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _name(node)
        if name is not None:
            self.found.append((".".join(self.scope) or "<module>", name, node.lineno))
        self.generic_visit(node)


def sites() -> Iterator[tuple[Site, int]]:
    """Every flagged call in the runtime: its site (a repeat in one function numbered
    `name#2`, ... in line order) and its line."""
    for path in sorted(RUNTIME.rglob("*.py")):
        rel = path.relative_to(RUNTIME).as_posix()
        if rel == TIES:
            continue
        finder = _Finder()
        finder.visit(ast.parse(path.read_text(), filename=str(path)))
        seen: dict[tuple[str, str], int] = {}
        for scope, name, line in sorted(finder.found, key=lambda f: f[2]):
            count = seen[(scope, name)] = seen.get((scope, name), 0) + 1
            yield (rel, scope, name if count == 1 else f"{name}#{count}"), line


def test_every_float_decision_outside_ties_is_allowed_with_a_reason() -> None:
    found = dict(sites())
    unexplained = {f"{s[0]}:{line} in {s[1]}: {s[2]}" for s, line in found.items()} - {
        f"{s[0]}:{found[s]} in {s[1]}: {s[2]}" for s in ALLOWED if s in found
    }
    assert not unexplained, (
        "a pick or sort by key outside belief/ties.py: rank through `ties` (ranked, "
        f"ranked_items, argmax_first, first_best), or allow it with a reason: {sorted(unexplained)}"
    )
    stale = [s for s in ALLOWED if s not in found]
    assert not stale, f"allow-list entries that match no call any more: {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_walk_finds_what_it_forbids() -> None:
    source = (
        "import numpy as np\n"
        "def f(m, d):\n"
        "    a = np.argsort(-m)\n"
        "    b = m.argmax()\n"
        "    c = max(d, key=lambda k: d[k])\n"
        "    d2 = sorted(d, key=d.get)\n"
        "    e = min(d, key=d.get)\n"
        "    xs = list(d); xs.sort(key=d.get)\n"
        "    return max(m), sorted(m), a, b, c, d2, e\n"
    )
    finder = _Finder()
    finder.visit(ast.parse(source))
    assert [name for _, name, _ in finder.found] == [
        "argsort",
        "argmax",
        "max",
        "sorted",
        "min",
        "sort",
    ]
    assert {scope for scope, _, _ in finder.found} == {"f"}
