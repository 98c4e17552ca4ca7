"""Final answers: pulling the answer out of a reply, and the verifiers the benchmarks score with.

Extraction follows the seed code (MemAgent's ``last_boxed_only_string``): the **last** ``\\boxed{…}``
with nested braces counted, also the ``\\boxed x`` form and ``\\fbox{…}``. With the "therefore" final
prompt the answer is what follows the last "the answer is". When nothing is found the whole reply is the
answer and the caller warns (``Answered.boxed`` is False).

Verifiers (each says where it departs from the seed code's):

* :func:`lenient_match` — MemAgent's test metric, sub-exact-match over SQuAD-normalised text, but an
  empty normalised prediction (e.g. "the", "…") never matches, and the score is the max over all golds.
* :func:`strict_match` — the training verifier: last 300 characters, lower-cased, last box, hendrycks
  ``strip_string`` on both sides, equality, max over golds.
* :func:`f1_score` — token F1 over normalised text (max over golds; yes/no/noanswer must agree exactly).
* :func:`multi_value_recall` — RULER's ``string_match_all``: the fraction of golds found, case-insensitive.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_THINK_END = "</think>"


def strip_thinking(text: str) -> str:
    """The text after the last ``</think>`` if there is one (MemAgent's ``extract_solution``), else all."""
    if _THINK_END in text:
        return text.rsplit(_THINK_END, 1)[1]
    return text


def last_boxed_only_string(text: str) -> str | None:
    """The last ``\\boxed{…}`` (or ``\\fbox{…}``, or ``\\boxed x``) including the command, or None.

    Braces are counted, so ``\\boxed{\\frac{1}{2}}`` is whole; an unbalanced box gives None.
    """
    idx = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if idx < 0:
        return None
    if text.startswith("\\boxed ", idx):
        # "\boxed 5$": up to the next "$" (or the end of the line).
        rest = text[idx + len("\\boxed "):]
        return "\\boxed " + re.split(r"[$\n]", rest, maxsplit=1)[0]
    depth = 0
    opened = False
    for i in range(idx, len(text)):
        char = text[i]
        if char == "{":
            depth += 1
            opened = True
        elif char == "}":
            if not opened:
                return None
            depth -= 1
            if depth == 0:
                return text[idx:i + 1]
        elif not opened and not char.isalpha() and char != "\\" and not char.isspace():
            return None  # "\boxed" followed by something that is not a brace
    return None


def remove_boxed(boxed: str) -> str:
    """``\\boxed{x}`` → ``x``; ``\\boxed x`` → ``x``; ``\\fbox{x}`` → ``x``."""
    if boxed.startswith("\\boxed "):
        return boxed[len("\\boxed "):]
    start = boxed.index("{")
    return boxed[start + 1:-1]


def extract_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{…}`` in ``text`` (nested braces kept), or None."""
    boxed = last_boxed_only_string(text)
    return remove_boxed(boxed).strip() if boxed is not None else None


_SPECIAL_TOKENS = ("<｜Assistant｜>", "<｜end▁of▁sentence｜>")


def extract_therefore(text: str) -> str | None:
    """What follows the last "the answer is" (MemAgent's ``extract_answer``), or None.

    Markdown bold stars are removed first; trailing periods and spaces are trimmed. The match is
    case-insensitive (MemAgent's is not, and then misses "The answer is X" at the start of a reply).
    """
    cleaned = text.replace("*", "")
    lowered = cleaned.lower()
    idx = lowered.rfind("the answer is")
    if idx < 0:
        return None
    answer = cleaned[idx + len("the answer is"):]
    for token in _SPECIAL_TOKENS:
        answer = answer.replace(token, "")
    answer = answer.strip().strip(".").strip()
    if answer.startswith(":"):
        answer = answer[1:].strip()
    return answer


def final_answer(reply: str, *, style: str = "boxed") -> tuple[str, bool]:
    """The answer in a final reply and whether the expected form was found.

    ``style`` "boxed": the last ``\\boxed{}``; "therefore": a box if there is one (models box anyway),
    else the text after the last "the answer is". Thinking before ``</think>`` is ignored. When
    nothing is found the reply after its thinking (or, if that is empty, the whole reply), stripped, is
    returned with False, and the caller warns.
    """
    text = strip_thinking(reply)
    boxed = extract_boxed(text)
    if boxed is not None:
        return unwrap_text_commands(boxed), True
    if style == "therefore":
        after = extract_therefore(text)
        if after:
            return unwrap_text_commands(extract_boxed(after) or after), True
    # Nothing after the thinking (a reply cut off at "</think>"): show the whole reply rather than nothing.
    return text.strip() or reply.strip(), False


_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mbox|emph)\s*\{([^{}]*)\}")


def unwrap_text_commands(answer: str) -> str:
    """``\\text{Discovery Zone}`` → ``Discovery Zone``: models box words inside LaTeX text commands, which
    mean nothing to a reader (or to the F1 score). Other LaTeX is left as it is."""
    previous = None
    while previous != answer:
        previous, answer = answer, _TEXT_COMMAND.sub(lambda match: match.group(1), answer)
    return answer.strip()


# --- verifiers -------------------------------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation, drop articles, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _golds(golds: str | Sequence[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else list(golds)


def lenient_match(prediction: str | None, golds: str | Sequence[str]) -> bool:
    """Sub-exact-match (either normalised string contains the other), max over golds.

    Unlike MemAgent's test metric, a prediction that normalises to "" (None, "", "The.") matches nothing,
    and every gold counts, not only the first.
    """
    if prediction is None:
        return False
    pred = normalize_answer(prediction)
    if not pred:
        return False
    for gold in _golds(golds):
        norm = normalize_answer(gold)
        if norm and (norm in pred or pred in norm):
            return True
    return False


def f1_score(prediction: str | None, golds: str | Sequence[str]) -> float:
    """Token-level F1 over normalised text, max over golds (SQuAD / MemAgent)."""
    if prediction is None:
        return 0.0
    best = 0.0
    for gold in _golds(golds):
        pred_n, gold_n = normalize_answer(prediction), normalize_answer(gold)
        special = ("yes", "no", "noanswer")
        if (pred_n in special or gold_n in special) and pred_n != gold_n:
            continue
        pred_tokens, gold_tokens = pred_n.split(), gold_n.split()
        common = Counter(pred_tokens) & Counter(gold_tokens)
        same = sum(common.values())
        if same == 0:
            continue
        precision, recall = same / len(pred_tokens), same / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def multi_value_recall(prediction: str | None, golds: str | Sequence[str]) -> float:
    """The fraction of gold values found in the prediction as case-insensitive substrings (RULER)."""
    values = _golds(golds)
    if prediction is None or not values:
        return 0.0
    lowered = prediction.lower()
    return sum(1.0 for v in values if v.lower() in lowered) / len(values)


# --- the training verifier (strict) ----------------------------------------------------------------------


def _fix_fracs(text: str) -> str:
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{") or len(part) < 2:
            out += part
            continue
        a, b = part[0], part[1]
        out += ("{" + a + "}{" + b + "}" + part[2:]) if b != "{" else ("{" + a + "}" + b + part[2:])
    return out


def _fix_a_slash_b(text: str) -> str:
    if len(text.split("/")) != 2:
        return text
    a, b = text.split("/")
    if a.isdigit() and b.isdigit():
        return "\\frac{" + a + "}{" + b + "}"
    return text


def _remove_right_units(text: str) -> str:
    if "\\text{ " in text:
        return text.split("\\text{ ")[0]
    return text


def _fix_sqrt(text: str) -> str:
    if "\\sqrt" not in text:
        return text
    parts = text.split("\\sqrt")
    out = parts[0]
    for part in parts[1:]:
        out += "\\sqrt" + (part if part.startswith("{") or not part else "{" + part[0] + "}" + part[1:])
    return out


def strip_string(text: str) -> str:
    """The hendrycks-math normalisation the training verifier applies to both sides."""
    text = text.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    text = text.replace("tfrac", "frac").replace("dfrac", "frac")
    text = text.replace("\\left", "").replace("\\right", "")
    text = text.replace("^{\\circ}", "").replace("^\\circ", "")
    text = text.replace("\\$", "")
    text = _remove_right_units(text)
    text = text.replace("\\%", "").replace("%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    if len(text.split("=")) == 2 and len(text.split("=")[0]) <= 2:
        text = text.split("=")[1]
    text = _fix_sqrt(text)
    text = text.replace(" ", "")
    text = _fix_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_a_slash_b(text)


def strict_match(reply: str, golds: str | Sequence[str]) -> bool:
    """MemAgent's training verifier on a raw final reply: only the last 300 characters, lower-cased,
    the last box, ``strip_string`` equality, max over golds. A reply without a box scores False."""
    window = reply[-300:].lower()
    boxed = last_boxed_only_string(window)
    if boxed is None:
        return False
    try:
        answer = remove_boxed(boxed)
    except ValueError:
        return False
    return any(strip_string(answer) == strip_string(gold.lower()) for gold in _golds(golds))
