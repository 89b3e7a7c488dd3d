"""Hybrid recall over a scope's memory: BM25 over the text, a hashing-vectorizer cosine,
and recency (the decay's retention); near-duplicates merged at 0.85; at most 10 results.

The vector side is a hashing vectorizer (words and character 3-grams hashed into
`vector_dims` buckets, signed, L2-normalised): pure Python, no model file, no package,
a few microseconds per item in the Lambda. An offline embedding model (e.g. a small
sentence-transformer) would cost about 100 MB in the layer and a second of cold start for
texts this short and formulaic; the hashing vectorizer catches the same shared wording.

Merging is keyed: two memories merge only if they are about the same subject and the same
polarity (a decoy memory never merges with a real-Horcrux one, however similar the words).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from horcrux.echo.config import EchoConfig, default_config
from horcrux.echo.decay import retention
from horcrux.echo.model import AnyItem, Belief, EchoMemory, Experience, Skill

_WORD = re.compile(r"[a-z0-9]+")
BM25_K1 = 1.2
BM25_B = 0.75


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _bucket(feature: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dims, (1.0 if (value >> 63) & 1 else -1.0)


def hash_vector(text: str, dims: int = 512) -> dict[int, float]:
    """A sparse, L2-normalised hashing vector of the words and character 3-grams."""
    vec: dict[int, float] = {}
    words = tokens(text)
    features = [f"w:{w}" for w in words]
    for w in words:
        padded = f" {w} "
        features += [f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2)]
    for feature in features:
        i, sign = _bucket(feature, dims)
        vec[i] = vec.get(i, 0.0) + sign
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {i: v / norm for i, v in vec.items()} if norm else {}


def cosine(a: dict[int, float], b: dict[int, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(i, 0.0) for i, v in a.items())


def bm25_scores(query: str, docs: Sequence[str]) -> list[float]:
    """Okapi BM25 of `query` against each document (0 when no term is shared)."""
    bags = [Counter(tokens(d)) for d in docs]
    n = len(bags)
    if not n:
        return []
    avg = sum(sum(b.values()) for b in bags) / n or 1.0
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    out = []
    q = set(tokens(query))
    for bag in bags:
        length = sum(bag.values())
        score = 0.0
        for term in q:
            f = bag.get(term, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * f * (BM25_K1 + 1) / (f + BM25_K1 * (1 - BM25_B + BM25_B * length / avg))
        out.append(score)
    return out


def polarity(item: AnyItem) -> str:
    """The key two memories must share to merge: level, subject and polarity."""
    if isinstance(item, Experience):
        sign = "+" if item.success else "-"
    elif isinstance(item, Belief | Skill):
        rate = item.mean if isinstance(item, Belief) else item.rate
        sign = "+" if rate >= 0.5 else "-"
    else:
        sign = "="
    return f"{item.level}:{item.subject}:{sign}"


def mergeable(a: AnyItem, b: AnyItem, config: EchoConfig | None = None) -> bool:
    """Near-duplicates: the same key (level, subject, polarity) and cosine >= 0.85."""
    cfg = config or default_config()
    if polarity(a) != polarity(b):
        return False
    sim = cosine(hash_vector(a.text, cfg.vector_dims), hash_vector(b.text, cfg.vector_dims))
    return sim >= cfg.dedup_threshold


@dataclass(frozen=True)
class Recalled:
    item: AnyItem
    score: float
    bm25: float
    vector: float
    recency: float
    merged: int = 0


def recall(
    memory: EchoMemory,
    query: str,
    *,
    clock: float | None = None,
    config: EchoConfig | None = None,
    include_history: bool = False,
) -> list[Recalled]:
    """The best `max_results` memories for `query`, near-duplicates merged (the best
    scored kept, `merged` counting the others). Superseded items only with
    `include_history`."""
    cfg = config or default_config()
    now = memory.clock if clock is None else clock
    items = [
        it
        for it in memory.items
        if include_history or not isinstance(it, Belief | Skill) or it.valid_to is None
    ]
    if not items:
        return []
    texts = [it.text for it in items]
    bm = bm25_scores(query, texts)
    top_bm = max(bm) or 1.0
    qv = hash_vector(query, cfg.vector_dims)
    vecs = [hash_vector(t, cfg.vector_dims) for t in texts]
    w_bm, w_vec, w_rec = cfg.weights
    scored = []
    for it, b, v in zip(items, bm, vecs, strict=True):
        rec = retention(it, now, cfg)
        vs = max(0.0, cosine(qv, v))
        scored.append((w_bm * b / top_bm + w_vec * vs + w_rec * rec, b, vs, rec, it, v))
    from horcrux.belief import ties  # here: numpy loads with the first recall, not the ops

    # best first, near-equals by id (`ties`: the same order on every machine)
    by_id = {it_id: r for r, it_id in enumerate(sorted(s[4].id for s in scored))}
    best = ties.ranked([s[0] for s in scored], [by_id[s[4].id] for s in scored])
    scored = [scored[j] for j in best]
    out: list[Recalled] = []
    kept_vecs: list[dict[int, float]] = []
    for score, b, vs, rec, it, v in scored:
        dup = next(
            (
                k
                for k, r in enumerate(out)
                if polarity(r.item) == polarity(it)
                and cosine(kept_vecs[k], v) >= cfg.dedup_threshold
            ),
            None,
        )
        if dup is not None:
            r = out[dup]
            out[dup] = Recalled(r.item, r.score, r.bm25, r.vector, r.recency, r.merged + 1)
            continue
        if len(out) < cfg.max_results:
            out.append(Recalled(it, round(score, 6), b, vs, rec))
            kept_vecs.append(v)
    return out
