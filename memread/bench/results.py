"""Scores and the results file: one JSON line per (task, length, sample, method), appended as each finishes.

Scoring (:mod:`memread.answer`'s verifiers, which say where they depart from MemAgent's). The
answer is *extracted* as the papers' evaluation does it: the last ``\\boxed{}`` of the final reply (with
``--final-prompt therefore``, else the text after "the answer is"), after any ``</think>``:

* ``lenient`` — the paper's test metric, sub-exact match after SQuAD normalisation of the extracted answer,
  max over every gold, an empty prediction never matching;
* ``strict`` — the training verifier on the raw final reply (last 300 characters, last ``\\boxed{}``,
  equality); not defined (None) when a sample has several gold values to find;
* ``f1`` — token F1 of the extracted answer, max over golds;
* ``recall`` — the fraction of gold values found in the extracted answer (RULER's ``string_match_all``), the
  primary score of the NIAH and variable-tracking tasks (for QA, whose golds are alternatives: whether any
  gold is contained);
* ``whole_reply`` — the primary score (lenient for QA, recall otherwise) of the answer ``memread ask`` shows:
  the extracted answer, or the whole reply when nothing was extracted. RULER's own scorer reads the whole
  reply this way (it asks for no box); it is a separate column, never the headline.

A final reply without an extracted answer ("unboxed") scores 0 on every score but ``whole_reply``: MemAgent's
``ruler_hqa.py`` and ``ruler_general.py`` set f1, em and sub-EM to 0 when ``extract_boxed_answer`` (or
``extract_answer``) returns None, and ReMemR1's ``test_qa.py`` does the same. Reports count those replies
beside every score ("unboxed"), because with an untrained model they measure format more than reading. A
failed run (the backend gave up) scores 0 on everything and stays in the denominator (MemAgent's script
dropped such items). A ``n/a`` record (full context that does not fit the window) is kept out of accuracy and
shown as N/A.

Resuming: a record is written (and fsynced) only when its sample is finished, so the file never holds half a
sample; on a second run every key already in the file is skipped. Every record carries the run's config
fingerprint, and a results folder refuses to mix runs made with different models or settings.

Two files per folder: ``results.jsonl`` holds the whole record (question, golds, reply: the benchmarks'
third-party text, never committed) and ``scores.jsonl`` the same record without any text (:data:`TEXT_FIELDS`):
key, scores, status, whether the answer was boxed, seconds, tokens, and hashes of the sample. The scores file is
what a repository commits: the tables, the paired differences and resuming work from it alone, so a sweep
carries on, on another machine, from the scores of the samples it finished (its records cannot be re-scored
with later rules, having no reply: they keep the scores they were made with).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memread.answer import (
    f1_score,
    final_answer,
    lenient_match,
    multi_value_recall,
    strict_match,
    unwrap_text_commands,
)
from memread.bench.methods import Outcome
from memread.bench.tasks import Sample
from memread.errors import TraceError, UsageError

SCHEMA = 1
RESULTS_NAME = "results.jsonl"
SCORES_NAME = "scores.jsonl"
CONFIG_NAME = "run.json"
PARTIAL_NAME = "partial"  # the traces of the samples being read (benchmark text: never committed)
# The fields of a record that hold a benchmark's text (or text a model wrote from it): left out of scores.jsonl.
TEXT_FIELDS = ("question", "golds", "prediction", "reply", "kept", "steps", "meta", "error", "note")


SCORES = ("lenient", "strict", "f1", "recall", "whole_reply", "kept")


def score(sample: Sample, outcome: Outcome) -> dict[str, float | None]:
    """Every score of one outcome, each in [0, 1] (``strict`` None for multi-value samples)."""
    return score_values(sample.metric, sample.golds, status=outcome.status, prediction=outcome.prediction,
                        reply=outcome.reply, boxed=outcome.boxed, kept=outcome.kept)


def score_values(metric: str, golds: Sequence[str], *, status: str, prediction: str | None, reply: str,
                 boxed: bool, kept: str | None = None) -> dict[str, float | None]:
    """The scores from what a record stores, so a report can re-score old results with today's rules.

    ``prediction`` is the answer ``memread ask`` shows and ``boxed`` whether it was extracted (a box, or "the
    answer is" with the "therefore" prompt) rather than the whole reply. A failed call scores 0 everywhere;
    an unextracted answer scores 0 everywhere but ``whole_reply`` (see the module's docstring); an empty
    prediction matches nothing. ``kept`` (the final memory, or BM25's passages) is scored like ``recall``: is
    the gold still in what the answer was given from (None when there is no such text, or the call failed)."""
    multi = len(golds) > 1 and metric == "recall"
    if metric == "docqa":
        return _docqa_scores(golds, status=status, prediction=prediction, reply=reply, boxed=boxed, kept=kept)
    if status != "ok":
        return {"lenient": 0.0, "strict": None if multi else 0.0, "f1": 0.0, "recall": 0.0, "whole_reply": 0.0,
                "kept": None}
    extracted = prediction if boxed else None
    shown = prediction if prediction else reply
    return {
        "lenient": float(lenient_match(extracted, golds)),
        "strict": None if multi else float(strict_match(reply, golds)),
        "f1": f1_score(extracted, golds),
        "recall": _recall(metric, extracted, golds),
        "whole_reply": float(lenient_match(shown, golds)) if metric == "qa" else _recall(metric, shown, golds),
        "kept": None if kept is None else _recall(metric, kept, golds),
    }


def _docqa_scores(golds: Sequence[str], *, status: str, prediction: str | None, reply: str, boxed: bool,
                  kept: str | None) -> dict[str, float | None]:
    """docqa's scores: ``lenient`` is its own rule (:func:`memread.bench.docqa.docqa_match`: the gold's tokens
    in the answer's, in a row; an absent question answered as absent); there is no training verifier (strict)."""
    from memread.bench.docqa import ABSENT_GOLD, docqa_match

    absent = list(golds) == [ABSENT_GOLD]
    if status != "ok":
        return {"lenient": 0.0, "strict": None, "f1": 0.0, "recall": 0.0, "whole_reply": 0.0, "kept": None}
    extracted = prediction if boxed else None
    shown = prediction if prediction else reply
    right = float(docqa_match(extracted, golds))
    return {"lenient": right, "strict": None, "f1": right if absent else f1_score(extracted, golds),
            "recall": right, "whole_reply": float(docqa_match(shown, golds)),
            "kept": None if kept is None or absent else float(docqa_match(kept, golds))}


def _recall(metric: str, text: str | None, golds: Sequence[str]) -> float:
    # Golds of a QA item are alternatives (any one is right); those of NIAH/VT are all to be found.
    if metric == "recall":
        return multi_value_recall(text, golds)
    return max((multi_value_recall(text, [gold]) for gold in golds), default=0.0)


def rescore(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with ``scores`` and ``score`` recomputed by :func:`score_values` from its stored reply; a
    record of scores.jsonl (no reply stored) as it is."""
    if "reply" not in record:
        return record
    boxed = bool(record.get("boxed"))
    scores = score_values(record.get("metric", "qa"), record.get("golds") or [], status=record.get("status", "error"),
                          prediction=_today(record), reply=record.get("reply") or "", boxed=boxed,
                          kept=record.get("kept"))
    main = None if record.get("status") == "n/a" else scores[primary(record.get("metric", "qa"))]
    return {**record, "scores": scores, "score": main}


def _today(record: dict[str, Any]) -> str | None:
    """A stored prediction as today's answer extraction gives it: a box is extracted again from the stored
    reply (LaTeX text commands unwrapped); a "the answer is" answer (whose prompt style the record does not
    hold) and an unextracted whole reply are kept as stored."""
    prediction: str | None = record.get("prediction")
    if not record.get("boxed"):
        return prediction
    answer, found = final_answer(record.get("reply") or "", style="boxed")
    if found:
        return answer
    return unwrap_text_commands(prediction) if prediction else prediction


def primary(metric: str) -> str:
    """The score a task's accuracy is reported in."""
    return "lenient" if metric in ("qa", "docqa") else "recall"


def fingerprint(config: dict[str, Any]) -> str:
    blob = json.dumps(config, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:12]


def record_key(task: str, length: int, index: int, method: str) -> str:
    return f"{task}/{length}/{index}/{method}"


def context_digest(sample: Sample) -> str:
    """The sha256 of a sample's document: records keep it instead of the (third-party) text."""
    if sample.sha256:
        return sample.sha256
    return hashlib.sha256(sample.context.encode("utf-8")).hexdigest()


def sample_digest(question: str, golds: Sequence[str], context_sha256: str) -> str:
    """One hash of what a sample is (question, golds, document): two records answered the same sample when
    their digests are equal, even when neither holds the text."""
    blob = json.dumps([question, list(golds), context_sha256], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def scores_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without its text (:data:`TEXT_FIELDS`), as scores.jsonl holds it."""
    public = {name: value for name, value in record.items() if name not in TEXT_FIELDS}
    if "sample_sha256" not in public and "question" in record and "context_sha256" in record:
        public["sample_sha256"] = sample_digest(record["question"], record.get("golds") or [],
                                                record["context_sha256"])
    return public


def make_record(sample: Sample, method: str, outcome: Outcome, *, doc_tokens: int, unit: str,
                config_id: str, run_info: dict[str, Any]) -> dict[str, Any]:
    scores = score(sample, outcome)
    main = scores[primary(sample.metric)]
    context_sha256 = context_digest(sample)
    return {
        "schema": SCHEMA,
        "key": record_key(sample.task, sample.length, sample.index, method),
        "task": sample.task,
        "length": sample.length,
        "unit": unit,
        "index": sample.index,
        "method": method,
        "metric": sample.metric,
        "question": sample.question,
        "golds": list(sample.golds),
        "doc_tokens": doc_tokens,
        # The document itself is not stored (third-party text); its hash tells, across results folders,
        # whether two records answered the same sample.
        "context_sha256": context_sha256,
        "sample_sha256": sample_digest(sample.question, sample.golds, context_sha256),
        **outcome.to_dict(),
        "scores": scores,
        "score": None if outcome.status == "n/a" else main,
        "meta": sample.meta,
        # docqa: which question, document, kind and split (design / held-out): no document text, kept in scores.
        **({"docqa": {k: sample.meta[k] for k in ("id", "doc", "kind", "split")}} if sample.metric == "docqa"
           else {}),
        "config": config_id,
        **run_info,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


_MISSING = object()


# Reading-loop settings added after results were first kept whose default changed what a run does: a config
# written before one existed ran with it at this value, so a folder holding such results continues only at it.
BEFORE_THEY_EXISTED: dict[str, Any] = {"answer_start": ""}  # the final reply was not begun for the model


def default_config() -> dict[str, Any]:
    """The defaults a stored config is completed with: today's reading-loop settings (``run_config``'s
    ``loop``), except those of :data:`BEFORE_THEY_EXISTED`. A caller whose config has other defaulted parts
    passes its own to :meth:`ResultsFolder.open`."""
    from memread.loop import LoopSettings

    return {"loop": {**LoopSettings().to_dict(), **BEFORE_THEY_EXISTED}}


def compare_configs(stored: dict[str, Any], config: dict[str, Any],
                    defaults: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """How ``config`` differs from ``stored``: the settings that changed (dotted paths), and those absent
    from ``stored`` that ``config`` has at their default (path → value), which do not count as changes."""
    changed: list[str] = []
    added: dict[str, Any] = {}

    def walk(old: Any, new: Any, default: Any, path: str) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted({*old, *new}):
                below = default.get(key, _MISSING) if isinstance(default, dict) else _MISSING
                walk(old.get(key, _MISSING), new.get(key, _MISSING), below, f"{path}.{key}" if path else key)
        elif old is _MISSING and new is not _MISSING and default is not _MISSING and new == default:
            added[path] = new
        elif old != new:
            changed.append(path)

    walk(stored, config, defaults, "")
    return changed, added


class ResultsFolder:
    """``DIR/run.json`` (the run's config), ``DIR/results.jsonl`` (one whole record per finished sample),
    ``DIR/scores.jsonl`` (the same records without their text) and, while a sample is being read by a
    strategy, its trace in ``DIR/partial/`` (removed once its record is written)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.results = folder / RESULTS_NAME
        self.scores = folder / SCORES_NAME
        self.config_path = folder / CONFIG_NAME
        self.partial_dir = folder / PARTIAL_NAME

    def partial_path(self, key: str) -> Path:
        """Where the sample ``key`` keeps its trace while it is read."""
        return self.partial_dir / (key.replace("/", "-") + ".jsonl")

    def drop_partial(self, key: str) -> None:
        """Remove the trace of ``key`` (its record is written), and the partial folder once empty."""
        try:
            self.partial_path(key).unlink(missing_ok=True)
            if self.partial_dir.is_dir() and not any(self.partial_dir.iterdir()):
                self.partial_dir.rmdir()
        except OSError:
            pass  # a leftover trace costs nothing: the sample is done, and the next run removes it

    def records(self) -> list[dict[str, Any]]:
        """Every complete record (a torn last line from a crash is ignored): the whole records of results.jsonl,
        then, for the samples it lacks (a folder copied without it), those of scores.jsonl."""
        whole = list(self._iter(self.results))
        have = {r["key"] for r in whole}
        return whole + [r for r in self._iter(self.scores) if r["key"] not in have]

    def write_scores(self) -> Path:
        """Rewrite scores.jsonl from the folder's records (for a folder made before it existed); atomic."""
        lines = "".join(json.dumps(scores_record(r), ensure_ascii=False) + "\n" for r in self.records())
        partial = self.scores.with_name(self.scores.name + ".partial")
        try:
            partial.write_text(lines, encoding="utf-8")
            os.replace(partial, self.scores)
        except OSError as error:
            raise TraceError(f"cannot write {self.scores}: {error.strerror}",
                             hint="choose a writable --out folder") from None
        return self.scores

    @staticmethod
    def _iter(path: Path) -> Iterator[dict[str, Any]]:
        if not path.exists():
            return
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    break  # torn write: the sample is run again
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and "key" in record:
                    yield record

    def open(self, config: dict[str, Any], *, defaults: dict[str, Any] | None = None,
             upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
             partial: Sequence[str] = ()) -> tuple[str, set[str]]:
        """Start or continue a run with ``config``: returns its id and the keys already finished.

        A folder keeps the id it was created with. A config that differs from the stored one only by settings
        the stored one does not have, each at its default (``defaults``, same shape as ``config``; by default
        the reading loop's, :func:`default_config`), continues the run: a setting added to memread since does
        not orphan the results made without it, which were made as if at its default. run.json then records
        the new settings. UsageError when any setting has another value (another model, or settings).

        ``upgrade`` first brings a stored config of an older shape to today's (what its runs did, in today's
        terms). ``partial`` names parts of the config (a dict of entries) of which a run gives only those it
        uses: the stored entries it does not give are kept, those the folder has not recorded are added, and
        only those both have are compared (the options of the strategies a sweep runs, when several sweeps
        share a folder)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not self.config_path.exists():
                config_id = fingerprint(config)
                self._write_config({"id": config_id, "config": config})
            else:
                stored = json.loads(self.config_path.read_text(encoding="utf-8"))
                config_id = str(stored.get("id"))
                old = original = stored.get("config", {})
                if upgrade is not None:
                    old = upgrade(old)
                for part in partial:
                    if isinstance(old.get(part), dict) and isinstance(config.get(part), dict):
                        config = {**config, part: {**old[part], **config[part]}}
                        old = {**old, part: {**config[part], **old[part]}}
                changed, added = compare_configs(old, config, default_config() if defaults is None else defaults)
                if changed:
                    raise UsageError(
                        f"{self.folder} holds results of a run with other settings (differs in: "
                        f"{', '.join(changed)})",
                        hint="use another --out folder, or the same model and settings to continue that run")
                if config != original:
                    content = {**stored, "config": config}
                    if added:
                        content["added_at_default"] = {**stored.get("added_at_default", {}), **added}
                    self._write_config(content)
        except OSError as error:
            raise TraceError(f"cannot write benchmark results in {self.folder}: {error.strerror}",
                             hint="choose a writable --out folder") from None
        except ValueError:
            raise UsageError(f"{self.config_path} is not valid JSON",
                             hint="delete it (the results stay) or use another --out folder") from None
        for path in (self.results, self.scores):
            self._heal_torn_tail(path)
        done = {r["key"] for r in self.records() if r.get("config") == config_id}
        if self.partial_dir.is_dir():  # a crash after a record was written, before its trace was removed
            for key in done:
                self.drop_partial(key)
        return config_id, done

    def _write_config(self, content: dict[str, Any]) -> None:
        partial = self.config_path.with_name(self.config_path.name + ".partial")
        partial.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(partial, self.config_path)

    @staticmethod
    def _heal_torn_tail(path: Path) -> None:
        """Cut a partial last line (a crash mid-write) so the next record starts on its own line."""
        if not path.exists():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(path, "r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)

    def append(self, record: dict[str, Any]) -> None:
        """Write one finished sample: its whole record, then its scores (a crash between the two leaves the
        sample in results.jsonl, whose records win, and the next report's scores file has it)."""
        for path, content in ((self.results, record), (self.scores, scores_record(record))):
            try:
                with open(path, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(content, ensure_ascii=False) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as error:
                raise TraceError(f"cannot write {path}: {error.strerror}",
                                 hint="free some disk space; finished samples are kept and skipped on the next "
                                 "run") from None
