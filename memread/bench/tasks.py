"""Benchmark samples, built with fixed seeds from the data in :mod:`memread.bench.data`.

The constructions follow the seed code and RULER (each item names what it follows), re-implemented here
so that nothing from the data wheel is executed:

* ``hqa`` — RULER-HotpotQA as MemAgent built it (``taskutils/memory_data``): every paragraph of the dev set
  becomes ``"{title}\\n{text}"``, deduplicated and sorted into one pool; a question's own 10 paragraphs (2 gold,
  8 distractors) are padded with paragraphs drawn from the rest of the pool to N documents, written as
  ``"Document {i}:\\n{paragraph}"`` joined by blank lines. Unlike MemAgent (whose ``Random(4)`` shuffle put the
  question's paragraphs in the same slots for every sample of a given N), the shuffle is per sample. The
  length is the number of documents (MemAgent: 50 ≈ 7K tokens, 100 ≈ 14K, 200 ≈ 28K). Questions are a
  seeded sample of the whole dev set; MemAgent also dropped those a 7B model answered without the text,
  which we cannot reproduce (no such model here), so some questions are answerable from world knowledge.
* ``squad`` — RULER's ``qa.py`` on SQuAD v2 dev: the gold paragraph, then paragraphs of the same article,
  then random paragraphs, up to the token length, shuffled per sample, in the same ``Document i`` format.
* ``niah-single`` / ``niah-multikey`` / ``niah-multivalue`` / ``niah-multiquery`` — RULER's ``niah.py``
  settings ``niah_single_2``, ``niah_multikey_1``, ``niah_multivalue``, ``niah_multiquery``: the essays as
  one whitespace-joined line (about 650K Qwen tokens; longer lengths repeat them from the start, as RULER's
  ``niah.py`` does), needles ``"One of the special magic numbers for {key} is: {value}."``
  inserted at sentence boundaries at depths drawn from ``linspace(0, 100, 40)``; keys are adjective-noun
  pairs (our own word lists, as RULER's come from the ``wonderwords`` package), values 7-digit numbers.
* ``vt`` — RULER's ``variable_tracking.py``: one chain of 4 hops (5 variables of 5 capital letters) in the
  repeated "The grass is green…" noise; the answer is all 5 names.
* ``hqa-early`` and ``niah-single-early`` — the same with every piece of evidence in the first 20 % of
  the document (GRU-Mem's "top-20 % evidence" setting), to measure what the exit gate saves.

The question is given without the document (as in MemAgent's evaluation, where ``input`` holds the
question and ``context`` the text). Token lengths are measured with the model's own tokenizer, so the same
``--lengths`` give the same number of tokens to every model. A sample depends only on (task, length, index,
seed); the same index asks the same question at every length.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from memread.bench import data
from memread.errors import UsageError
from memread.tokens import Tokenizer

DOCUMENT_PROMPT = "Document {i}:\n{document}"
EARLY_FRACTION = 0.2


@dataclass(frozen=True)
class Sample:
    """One benchmark item: a document, a question about it and the gold answers."""

    task: str
    length: int  # documents (hqa) or tokens (the rest), as asked for
    index: int  # 0-based sample number
    question: str
    golds: tuple[str, ...]
    context: str
    metric: str  # "qa" (sub-exact match), "recall" (fraction of gold values found) or "docqa" (memread.bench.docqa)
    meta: dict[str, Any] = field(default_factory=dict)
    # A real document for memread's loaders (a file or folder path) instead of ``context`` (docqa); ``sha256``
    # then identifies it (the records keep a document's hash, never its text).
    source: str | None = None
    sha256: str | None = None

    @property
    def key(self) -> str:
        return f"{self.task}/{self.length}/{self.index}"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    unit: str  # "docs" | "tokens"
    metric: str
    description: str
    build: Callable[[int, int, int, Tokenizer], Sample]


def _rng(*parts: object) -> random.Random:
    # A str seed is hashed with SHA-512 by random.Random: stable across runs and Python versions.
    return random.Random("|".join(str(p) for p in parts))


def _last_evidence_fraction(context: str, evidence: Sequence[str]) -> float:
    ends = [context.find(text) + len(text) for text in evidence if text in context]
    return round(max(ends) / max(1, len(context)), 4) if ends else 1.0


# --- RULER-HotpotQA --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _HotpotPool:
    docs: tuple[str, ...]
    questions: tuple[dict[str, Any], ...]  # {id, question, answer, own: [doc idx], gold: [doc idx], type}


@lru_cache(maxsize=1)
def _hotpot_pool() -> _HotpotPool:
    records = data.hotpotqa()
    texts = sorted({f"{title}\n{''.join(sentences)}" for record in records for title, sentences in record["context"]})
    position = {text: i for i, text in enumerate(texts)}
    questions = []
    for record in records:
        supporting = {title for title, _ in record["supporting_facts"]}
        own: list[int] = []
        gold: list[int] = []
        for title, sentences in record["context"]:
            idx = position[f"{title}\n{''.join(sentences)}"]
            if idx not in own:
                own.append(idx)
                if title in supporting:
                    gold.append(idx)
        questions.append({"id": record["_id"], "question": record["question"], "answer": record["answer"],
                          "own": own, "gold": gold, "type": record.get("type")})
    return _HotpotPool(tuple(texts), tuple(questions))


def _pick(family: str, index: int, seed: int, population: int) -> int:
    """The ``index``-th question of a seeded permutation: the same question at every length."""
    order = list(range(population))
    _rng(family, "questions", seed).shuffle(order)
    return order[index % population]


def _hqa(length: int, index: int, seed: int, early: bool) -> Sample:
    pool = _hotpot_pool()
    item = pool.questions[_pick("hqa", index, seed, len(pool.questions))]
    own: list[int] = item["own"]
    if length < len(own):
        raise UsageError(f"RULER-HotpotQA needs at least {len(own)} documents per sample, not {length}",
                         hint="use --lengths 50,100,200 (MemAgent's sizes) or at least 10")
    if length > len(pool.docs):
        raise UsageError(f"RULER-HotpotQA has {len(pool.docs):,} distinct paragraphs, fewer than {length:,} documents",
                         hint=f"use at most --lengths {len(pool.docs)} (MemAgent's largest setting is all of them)")
    task = "hqa-early" if early else "hqa"
    rng = _rng(task, length, index, seed)
    taken = set(own)
    filler: list[int] = []
    while len(filler) < length - len(own):
        candidate = rng.randrange(len(pool.docs))
        if candidate not in taken:
            taken.add(candidate)
            filler.append(candidate)
    order = own + filler
    rng.shuffle(order)
    gold: list[int] = item["gold"]
    if early:
        rest = [doc for doc in order if doc not in gold]
        limit = max(len(gold), int(length * EARLY_FRACTION))
        slots = sorted(rng.sample(range(limit), len(gold)))
        order = rest
        for slot, doc in zip(slots, gold, strict=True):
            order.insert(slot, doc)
    texts = [pool.docs[doc] for doc in order]
    context = "\n\n".join(DOCUMENT_PROMPT.format(i=i + 1, document=text) for i, text in enumerate(texts))
    gold_slots = [order.index(doc) + 1 for doc in gold]
    return Sample(task=task, length=length, index=index, question=item["question"], golds=(item["answer"],),
                  context=context, metric="qa",
                  meta={"source_id": item["id"], "type": item["type"], "gold_documents": gold_slots,
                        "last_evidence_at": _last_evidence_fraction(context, [pool.docs[d] for d in gold])})


# --- SQuAD QA ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SquadPool:
    docs: tuple[str, ...]
    questions: tuple[dict[str, Any], ...]  # {id, question, answers, gold: idx, more: [idx]}


@lru_cache(maxsize=1)
def _squad_pool() -> _SquadPool:
    raw = data.squad()["data"]
    texts = sorted({p["context"] for article in raw for p in article["paragraphs"]})
    position = {text: i for i, text in enumerate(texts)}
    questions = []
    for article in raw:
        article_docs = [position[p["context"]] for p in article["paragraphs"]]
        for paragraph in article["paragraphs"]:
            gold = position[paragraph["context"]]
            for qa in paragraph["qas"]:
                if qa.get("is_impossible"):
                    continue
                answers = list(dict.fromkeys(a["text"] for a in qa["answers"]))
                questions.append({"id": qa["id"], "question": qa["question"], "answers": answers, "gold": gold,
                                  "more": [d for d in article_docs if d != gold]})
    return _SquadPool(tuple(texts), tuple(questions))


_COUNTS: dict[tuple[str, str], int] = {}


def _count(tokenizer: Tokenizer, text: str) -> int:
    key = (getattr(tokenizer, "name", type(tokenizer).__name__), text)
    if key not in _COUNTS:
        _COUNTS[key] = tokenizer.count(text)
    return _COUNTS[key]


def _squad(length: int, index: int, seed: int, tokenizer: Tokenizer) -> Sample:
    pool = _squad_pool()
    item = pool.questions[_pick("squad", index, seed, len(pool.questions))]
    rng = _rng("squad", length, index, seed)
    more = list(item["more"])
    rng.shuffle(more)
    others = [d for d in range(len(pool.docs)) if d != item["gold"] and d not in set(more)]
    rng.shuffle(others)
    chosen = [item["gold"]]
    total = _count(tokenizer, pool.docs[item["gold"]]) + 8
    for doc in more + others:
        cost = _count(tokenizer, pool.docs[doc]) + 8  # + "Document i:\n" and the blank line
        if total + cost > length:
            break
        chosen.append(doc)
        total += cost
    rng.shuffle(chosen)
    context = "\n\n".join(DOCUMENT_PROMPT.format(i=i + 1, document=pool.docs[d]) for i, d in enumerate(chosen))
    return Sample(task="squad", length=length, index=index, question=item["question"], golds=tuple(item["answers"]),
                  context=context, metric="qa",
                  meta={"source_id": item["id"], "documents": len(chosen),
                        "gold_documents": [chosen.index(item["gold"]) + 1],
                        "last_evidence_at": _last_evidence_fraction(context, [pool.docs[item["gold"]]])})


# --- NIAH ---------------------------------------------------------------------------------------------------

_ADJECTIVES = """
able ancient angry bitter black bold brave bright broad calm careful cheap clean clever cold cool crisp
curious damp dark deep dizzy dry dusty eager early easy empty fair fancy fast fierce flat fresh friendly
gentle giant glad golden grand gray great green happy hard heavy hollow honest huge humble icy jolly kind
large late lazy light little lively long loud lucky mellow mighty modern narrow neat nervous noble odd
old orange pale plain polite proud purple quick quiet rapid rare raw red rich rough round royal rusty sad
salty sharp shiny short shy silent silly simple slow small smooth soft solid sour spicy steady steep
sticky stormy strange strict strong sunny sweet swift tall tame thick thin tidy tiny tough vast velvet
warm weak wet white wide wild windy wise wooden young zealous
"""
_NOUNS = """
acorn anchor apple arrow badge barrel basket beacon bell blanket boat bottle bridge brook brush bucket
cabin candle canyon carpet castle cedar chair cloud clover comet compass cookie copper cottage crayon
crown cup daisy desk diamond dolphin door dragon drum eagle engine falcon feather fence fern fiddle
flag flute forest fountain garden gate glove harbor helmet hill horse island jacket jewel kettle kite
ladder lake lantern leaf lemon letter lighthouse lily magnet maple marble meadow mirror mountain needle
nest ocean orchard otter owl paddle palace parrot pebble pencil pepper piano pillow planet pocket pond
puzzle quilt rabbit river robin rocket saddle sail shell shovel silver spoon spring statue stone
storm table teapot thistle thunder tiger towel tower trumpet tulip tunnel valley violin wagon walnut
whistle willow window wolf
"""
_KEY_WORDS = tuple(f"{a}-{n}" for a in sorted(set(_ADJECTIVES.split())) for n in sorted(set(_NOUNS.split())))
_DEPTHS = tuple(round(i * 100 / 39) for i in range(40))  # numpy.round(linspace(0, 100, 40)) as in RULER
_NIAH_TEMPLATE = ("Some special magic {type_v} are hidden within the following text. Make sure to memorize it. "
                  "I will quiz you about the {type_v} afterwards.\n"
                  "What are all the special magic {type_v} for {query} mentioned in the provided text?")
_NEEDLE = "One of the special magic {type_v} for {key} is: {value}."
_NIAH_SHAPES = {  # task: (keys, values per key, keys queried)
    "niah-single": (1, 1, 1),
    "niah-single-early": (1, 1, 1),
    "niah-multikey": (4, 1, 1),
    "niah-multivalue": (1, 4, 1),
    "niah-multiquery": (4, 1, 4),
}


@lru_cache(maxsize=1)
def _haystack_words() -> tuple[str, ...]:
    return tuple(re.sub(r"\s+", " ", data.essays()).strip().split(" "))


# RULER's niah.py repeats the essays when a length needs more words than they have (about 525,000 words,
# 650K Qwen tokens); so does memread, up to this many words (about 13M tokens).
_MAX_HAYSTACK_WORDS = 10_000_000


def _haystack(words: Sequence[str], count: int) -> Sequence[str]:
    """The first ``count`` words of the essays, repeated from the start as often as needed (RULER:
    ``(haystack * repeats)[:num_haystack]``)."""
    if count <= len(words):
        return words[:count]
    repeats = -(-count // len(words))
    return (tuple(words) * repeats)[:count]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _fit_words(length: int, tokenizer: Tokenizer, build: Callable[[int], str], available: int,
               per_unit: float) -> tuple[int, str]:
    """The largest number of haystack units whose context stays within ``length`` tokens (to ~2 %)."""
    units = max(1, min(available, int(length / per_unit)))
    context = build(units)
    for _ in range(6):
        tokens = tokenizer.count(context)
        if tokens <= length and (tokens >= length * 0.98 or units >= available):
            break
        units = max(1, min(available, int(units * length / max(1, tokens) * (0.995 if tokens > length else 1.0))))
        context = build(units)
    while tokenizer.count(context) > length and units > 1:
        units = int(units * 0.98)
        context = build(units)
    return units, context


def _niah(task: str, length: int, index: int, seed: int, tokenizer: Tokenizer) -> Sample:
    keys_n, values_n, queried_n = _NIAH_SHAPES[task]
    rng = _rng(task, length, index, seed)
    keys = rng.sample(_KEY_WORDS, keys_n)
    values = [[str(rng.randint(1_000_000, 9_999_999)) for _ in range(values_n)] for _ in keys]
    needles = [_NEEDLE.format(type_v="numbers", key=key, value=value) for key, vs in zip(keys, values, strict=True)
               for value in vs]
    rng.shuffle(needles)
    depths_pool = [d for d in _DEPTHS if d <= EARLY_FRACTION * 100] if task.endswith("-early") else list(_DEPTHS)
    depths = sorted(rng.sample(depths_pool, len(needles)))
    words = _haystack_words()

    def build(count: int) -> str:
        sentences = _SENTENCE_END.split(" ".join(_haystack(words, count)).strip())
        cuts = [0] + [int(len(sentences) * depth / 100) for depth in depths] + [len(sentences)]
        parts: list[str] = []
        for i in range(1, len(cuts)):
            parts.append(" ".join(sentences[cuts[i - 1]:cuts[i]]))
            if i - 1 < len(needles):
                parts.append(needles[i - 1])
        return " ".join(p for p in parts if p)

    count, context = _fit_words(length, tokenizer, build, _MAX_HAYSTACK_WORDS, per_unit=1.3)
    queried = rng.sample(range(keys_n), queried_n)
    query_keys = [keys[i] for i in queried]
    golds = tuple(v for i in queried for v in values[i])
    query = ", ".join(query_keys[:-1]) + ", and " + query_keys[-1] if len(query_keys) > 1 else query_keys[0]
    template, type_v = _NIAH_TEMPLATE, "numbers"
    if queried_n * values_n == 1:  # RULER's singular wording
        template = template.replace("Some", "A").replace("are all", "is").replace("are", "is")
        type_v = "number"
    question = template.format(type_v=type_v, query=query)
    return Sample(task=task, length=length, index=index, question=question, golds=golds, context=context,
                  metric="recall",
                  meta={"keys": keys, "depths": depths, "haystack_repeats": -(-count // len(words)),
                        "last_evidence_at": _last_evidence_fraction(
                            context, [n for n in needles if any(f" {k} " in n for k in query_keys)])})


# --- variable tracking ------------------------------------------------------------------------------------

_NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.\n"
_VT_QUESTION = ("Memorize and track the chain(s) of variable assignment hidden in the following text.\n"
                "Question: Find all variables that are assigned the value {query} in the text above.")


def _vt(length: int, index: int, seed: int, tokenizer: Tokenizer, hops: int = 4) -> Sample:
    rng = _rng("vt", length, index, seed)
    names: list[str] = []
    while len(names) < hops + 1:
        name = "".join(rng.choices(string.ascii_uppercase, k=5))
        if name not in names:
            names.append(name)
    value = str(rng.randint(10000, 99999))
    chain = [f"VAR {names[0]} = {value}"] + [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(hops)]
    fractions = sorted(rng.random() for _ in chain)

    def build(count: int) -> str:
        sentences = [_NOISE] * max(count, len(chain) + 1)
        positions = sorted(int(f * len(sentences)) for f in fractions)
        for offset, (position, statement) in enumerate(zip(positions, chain, strict=True)):
            sentences.insert(position + offset, statement)
        return " ".join(sentences).replace(". \n", ".\n")

    _units, context = _fit_words(length, tokenizer, build, 10_000_000, per_unit=24.0)
    return Sample(task="vt", length=length, index=index, question=_VT_QUESTION.format(query=value),
                  golds=tuple(names), context=context, metric="recall",
                  meta={"value": value, "last_evidence_at": _last_evidence_fraction(context, [chain[-1].strip()])})


# --- registry ---------------------------------------------------------------------------------------------


def _niah_builder(task: str) -> Callable[[int, int, int, Tokenizer], Sample]:
    return lambda length, index, seed, tokenizer: _niah(task, length, index, seed, tokenizer)


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("hqa", "docs", "qa", "RULER-HotpotQA (MemAgent): a question's paragraphs among N documents",
                 lambda n, i, s, t: _hqa(n, i, s, early=False)),
        TaskSpec("hqa-early", "docs", "qa", "RULER-HotpotQA with the gold paragraphs in the first 20%",
                 lambda n, i, s, t: _hqa(n, i, s, early=True)),
        TaskSpec("squad", "tokens", "qa", "RULER SQuAD QA: a paragraph's question among other paragraphs", _squad),
        *(TaskSpec(name, "tokens", "recall", f"RULER {name.replace('-', ' ')} over the essay haystack",
                   _niah_builder(name)) for name in _NIAH_SHAPES),
        TaskSpec("vt", "tokens", "recall", "RULER variable tracking: 1 chain, 4 hops", _vt),
        TaskSpec("docqa", "questions", "docqa", "45 questions about 5 real documents (a PDF manual, an EPUB, a "
                 "test log, an HTML folder, a changelog)", lambda n, i, s, t: _docqa(i)),
    )
}


def _docqa(index: int) -> Sample:
    from memread.bench import docqa

    every = docqa.questions()
    if not 0 <= index < len(every):
        raise UsageError(f"docqa has {len(every)} questions, not a question {index + 1}",
                         hint="choose them with --questions (all, design, held-out, a document, an id)")
    item = every[index]
    spec = docqa.DOCS[item["doc"]]
    return Sample(task="docqa", length=DOCQA_LENGTH, index=index, question=item["question"],
                  golds=tuple(item["golds"]), context="", metric="docqa",
                  meta={"id": item["id"], "doc": item["doc"], "kind": item["kind"], "split": docqa.split_of(item)},
                  source=str(docqa.document_path(item["doc"])), sha256=spec.sha256)


DOCQA_LENGTH = 1  # docqa's questions have no length: one "length" holds them all


def task_names() -> list[str]:
    return list(TASKS)


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise UsageError(f"unknown benchmark task {name!r}", hint=f"choose from: {', '.join(TASKS)}") from None


def build_sample(task: str, length: int, index: int, seed: int, tokenizer: Tokenizer) -> Sample:
    """Sample ``index`` of ``task`` at ``length`` (documents for hqa, tokens otherwise)."""
    return get_task(task).build(length, index, seed, tokenizer)


def parse_length(text: str) -> int:
    """``"8K"`` → 8192, ``"50"`` → 50, ``"1M"`` → 1048576; UsageError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*([kKmM]?)\s*", text)
    if not match or int(match.group(1)) < 1:
        raise UsageError(f"cannot read the length {text!r}", hint="give numbers like 50,200 or 8K,32K")
    scale = {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
    return int(match.group(1)) * scale
