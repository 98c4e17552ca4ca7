"""Would `evidence`'s identifier rule fire on a question the document answers? Design samples only.

The rule: a lookup naming an identifier (a name with a digit in it, or a Debian version with its revision) that no
passage of the document holds, case and punctuation aside, is answered at once that the document does not say.
It must never fire on an answerable question. This checks every design question that names one: docqa's
even-numbered questions against their documents' text, and RULER-HotpotQA data seed 11 (the design seed) at 50
documents against each sample's haystack. No model is run.

    python -m benchmarks.studies.identifiers_held [--out FILE.md]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from benchmarks._helpers.result_files import emit


def rows() -> list[tuple[str, str, list[str], list[str]]]:
    """(set, sample, identifiers, those not held) for each design sample naming an identifier."""
    from memread.bench import docqa, tasks
    from memread.ingest import open_document
    from memread.strategies.evidence.ranking import identifiers
    from memread.strategies.evidence.reading import snap
    from memread.tokens import CharTokenizer

    found = []
    texts: dict[str, str] = {}
    for question in docqa.questions():
        names = identifiers(question["question"]) if docqa.split_of(question) == "design" else []
        if names:
            if question["doc"] not in texts:
                document = open_document(str(docqa.document_path(question["doc"])))
                texts[question["doc"]] = "".join(segment.text for segment in document.segments())
            found.append(("docqa design", question["id"], names,
                          [n for n in names if snap(n, texts[question["doc"]]) is None]))
    for index in range(48):
        sample = tasks.build_sample("hqa", 50, index, 11, CharTokenizer())
        names = identifiers(sample.question)
        if names:
            found.append(("HotpotQA seed 11", f"hqa/50/{index}", names,
                          [n for n in names if snap(n, sample.context) is None]))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    found = rows()
    lines = ["| set | sample | identifiers | not held (the rule fires) |", "|---|---|---|---|"]
    lines += [f"| {where} | {sample} | {', '.join(names)} | {', '.join(missing) or '—'} |"
              for where, sample, names, missing in found]
    fired = sum(1 for *_, missing in found if missing)
    lines += ["", f"Design samples naming an identifier: {len(found)} (20 docqa questions, 48 HotpotQA samples "
              f"searched); the rule fires on {fired}."]
    return emit("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    raise SystemExit(main())
