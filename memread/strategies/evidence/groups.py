"""The groups a whole-document question's units are collected into (units of one shape), and the model's step
choosing among them: how the groups are shown, the prompt, the group numbers its reply names."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memread.strategies.evidence import keeping

MAX_GROUPS = 12  # groups shown to the model
EXAMPLES = 3  # items shown per group
MAX_ITEMS = 2000  # items collected per group at most (a 2 GB log's "ERROR" lines): counted beyond, not kept


@dataclass
class Group:
    """Units of one shape: how they begin, how many, and the first ones (verbatim, with their places)."""

    key: str
    count: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)
    parts: bool = False  # headings: the document's parts, counted from its structure, never read off a line
    numbering: str = ""  # the headings' numbering pattern ("#", "#.#", "A"), "" for none; "again": a second run
    level: int = 0  # an outline's heading level (0: the outermost)
    scope: str = ""  # the part the headings are under, when the question names one
    held: int = 0  # how many of the question's words its units hold (0: not ranked by them)
    shape: str = ""  # how its units begin ("FAIL:", "-- Galen")
    words: tuple[str, ...] = ()  # the question's words its units hold

    def add(self, item: dict[str, Any]) -> None:
        self.count += 1
        if len(self.items) < MAX_ITEMS:
            self.items.append(item)


def summary(groups: Sequence[Group]) -> str:
    """The groups as the model is shown them: number, count, how they begin, and the first ones."""
    lines = []
    for number, group in enumerate(groups, 1):
        examples = "; ".join(f"\"{item['text'][:100]}\" ({keeping.short_place(str(item['where']))})"
                             for item in group.items[:EXAMPLES])
        more = ", …" if group.count > EXAMPLES else ""
        lines.append(f"Group {number}: {group.count} line{'s' if group.count != 1 else ''} ({group.key}), "
                     f"e.g. {examples}{more}")
    return "\n".join(lines)


def step_prompt(question: str, groups: str) -> str:
    return (f"memread read the whole document and grouped the lines that hold the question's words:\n\n{groups}\n\n"
            f"Question: {question}\n\nWhich group or groups of lines is the question about? Answer with the group "
            "numbers in \\boxed{}, e.g. \\boxed{2}.")


def chosen_groups(reply: str, count: int) -> tuple[list[int], list[str]]:
    """The group numbers a reply names (valid, distinct), and what was odd about it."""
    from memread.answer import final_answer

    text, boxed = final_answer(reply, style="boxed")
    numbers = [int(n) for n in re.findall(r"\d+", text if boxed else reply)]
    chosen = [n for n in dict.fromkeys(numbers) if 1 <= n <= count]
    issues = [f"group {n} does not exist" for n in numbers if not 1 <= n <= count]
    return chosen, issues
