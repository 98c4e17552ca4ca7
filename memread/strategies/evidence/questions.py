"""What a question asks of the whole document, read from its words alone: a lookup (the best passages answer
it) or a whole-document question (how many, list every, the first or the last), and then what a unit must hold
to be collected (its identifiers and content words), what it counts, and the parts it names."""

from __future__ import annotations

import re

from memread.recall import query_terms
from memread.strategies.evidence.keeping import stems

COUNT, FIRST, LAST, LIST, LOOKUP = "count", "first", "last", "list", "lookup"

_COUNTING = re.compile(r"^\s*(?:how\s+many|how\s+often|count\b|(?:what|which)\s+is\s+the\s+(?:total\s+)?number\s+of|"
                       r"(?:what|which)\s+(?:is|are)\s+the\s+number)", re.IGNORECASE)
_LISTING = re.compile(r"^\s*list\s+(?!of\b)|^\s*(?:name|enumerate)\s+(?:all|every|each)\b|\b(?:list|name)\s+(?:all|every)\b|"
                      r"^\s*which\s+\w+(?:\s+\w+)?\s+(?:all\s+)?(?:failed|passed|crashed)\b", re.IGNORECASE)
_ORDINAL_WORDS = "first|earliest|last|latest|final"
_ORDINAL = re.compile(rf"^\s*(?:which|what)\b.*?\bthe\s+({_ORDINAL_WORDS})\b", re.IGNORECASE)
PARTS = {"chapter", "section", "subsection", "appendix", "appendice", "part", "heading", "title"}
_QUOTED = re.compile(r"[\"“‘']([^\"”’']{3,80})[\"”’']")
# Words that say how to count or where, not what: left out of what a unit must hold.
_SCAFFOLD = set(["how", "many", "much", "often", "count", "number", "total", "first", "earliest", "last", "latest", "final", "list", "name", "enumerate", "every", "each", "whole", "entire", "document", "manual", "book", "log", "file", "text", "listed", "described", "mentioned", "reported", "report", "reports", "describe", "describes", "mention", "mentions", "show", "shows", "shown", "say", "says", "said", "state", "states", "stated", "appear", "appears", "appearing", "given", "contain", "contains", "containing", "record", "records", "recorded", "does", "do", "did", "made", "make", "changelog", "are", "is", "was", "were", "there", "this", "that", "these", "those", "which", "what", "its", "their", "at", "least", "one", "according"])
# "How many days/seconds/bytes …" asks for a quantity the text states, not for items of the document to count.
_MEASURE = re.compile(r"^\s*how\s+(?:many|much)\s+(?:\w+\s+)?(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|"
                      r"times|bytes|kilobytes|megabytes|gigabytes|[kmgt]i?b|percent|kilometres|kilometers|miles|"
                      r"metres|meters|euros|dollars|people|copies)\b", re.IGNORECASE)
# A question that offers its answers ("Which band was formed the earliest, CKY or Violent Femmes?") compares the
# things it names: a lookup, whatever it orders by. Not a list of conditions: "… reported as FAIL in gcc, g++ or
# gfortran?" (a preposition just before the list).
_CHOICE = re.compile(r",\s*(?:[^,?]+,\s*)*[^,?]+\s+or\s+[^,?]+\?\s*$", re.IGNORECASE)
_CONDITION_LIST = re.compile(r"\b(?:in|on|of|for|from|by|with|at|among|between|under|to|into|across)(?:\s+\S+){1,3}$",
                             re.IGNORECASE)
# "The first name of …", "the last name Saravanan": a kind of name, no ordinal ("the first name in the list" is one).
_NAME = re.compile(r"\bthe\s+(?:first|last)\s+names?\b(?!\s+(?:in|on|from|among|at)\b)", re.IGNORECASE)


def offers_answers(question: str) -> bool:
    """Whether the question ends by offering its answers ("…, A or B?")."""
    choice = _CHOICE.search(question)
    return choice is not None and not _CONDITION_LIST.search(question[:choice.start()])


# "How many times does the log mention gfortran?", "… is objc mentioned …", "… does segfault appear …": the
# document's own occurrences of a word, in the present tense, not a quantity a passage states ("how many times
# did … win", "… did she appear in …")
_MENTIONS = (re.compile(r"^\s*how\s+many\s+times\s+(?:does|do)\s+.*?\b(?:mentions?|says?|contains?|cites?)\s+"
                        r"(?:the\s+(?:word|term|name|string)\s+)?(.+?)\s*[?.!]?\s*$", re.IGNORECASE),
             re.compile(r"^\s*how\s+many\s+times\s+(?:is|are)\s+(.+?)\s+(?:mentioned|said|cited|named|"
                        r"written)\b", re.IGNORECASE),
             re.compile(r"^\s*how\s+many\s+times\s+(?:does|do)\s+(.+?)\s+(?:appears?|occurs?)\b", re.IGNORECASE))


def mentioned(question: str) -> str | None:
    """The word or phrase whose occurrences a "how many times does … mention …" question counts, as written
    ("gfortran"); None for other questions."""
    for pattern in _MENTIONS:
        if match := pattern.search(question):
            words = re.split(r"\s+", match.group(1).strip().strip("\"'“”‘’"))
            cut = next((i for i, word in enumerate(words) if i and word.lower() in _COUNTED_ENDS), len(words))
            term = " ".join(words[:cut]).strip("\"'“”‘’")
            return re.sub(r"^(?:the|a|an)\s+", "", term, flags=re.IGNORECASE) or None
    return None


def question_kind(question: str) -> str:
    """COUNT, LIST, FIRST, LAST or LOOKUP (a question the best passages answer)."""
    if mentioned(question):
        return COUNT
    if _MEASURE.search(question):
        return LOOKUP
    if _COUNTING.search(question):
        return COUNT
    if offers_answers(question):  # which of the named ones (a count over several stays a count)
        return LOOKUP
    if _LISTING.search(question):
        return LIST
    ordinal = _ORDINAL.search(_NAME.sub("the name", question))
    if ordinal:
        return FIRST if ordinal.group(1).lower() in ("first", "earliest") else LAST
    return LOOKUP


def _identifiers(question: str) -> list[tuple[str, str]]:
    """Each identifier of the question as written and as the phrase of words the index holds it as."""
    found: list[tuple[str, str]] = []
    for token in re.findall(r"[\w.+-]*\w[=./:+-]+[\w.+/-]*|\b[A-Z][A-Z0-9_]{2,}\b", question):
        if token.endswith(".") and not re.search(r"[=./:+-]|^[A-Z][A-Z0-9_]{2,}$", token := token.rstrip(".")):
            continue  # a sentence's full stop ("… in the g++ testsuite.") makes no word an identifier
        phrase = " ".join(re.findall(r"\w+", token.lower()))
        if phrase and phrase not in [p for _, p in found]:
            found.append((token, phrase))
    return found


_DISTINCT = re.compile(r"^\s*how\s+many\s+(?:different|distinct|unique)\s+(\S+)", re.IGNORECASE)


def distinct_identifier(question: str) -> str | None:
    """The identifier, as written, whose different tokens a count asks for: "CVE" in "How many different CVE
    identifiers does the changelog mention?"; None for other questions."""
    match = _DISTINCT.search(question)
    if not match:
        return None
    return next((token for token, _ in _identifiers(match.group(1))), None)


def identifiers(question: str) -> list[str]:
    """The question's identifiers (``urgency=high``, ``libgomp.fortran/``, ``XPASS``, a version such as ``2.7-3``),
    each as the phrase of words the index holds it as ("urgency high", "2 7 3")."""
    return [phrase for _, phrase in _identifiers(question)]


def written(question: str) -> dict[str, str]:
    """The identifiers whose words are all of one or two characters, a letter among them, by phrase, as written
    (lower case): "g++" is the phrase "g", which the "-g" of a compiler flag holds too, so a line holds it only as
    written. (A version's words are digits: "2.7-3" stays the phrase "2 7 3".)"""
    return {phrase: token.lower() for token, phrase in _identifiers(question)
            if all(len(word) <= 2 for word in phrase.split()) and re.search(r"[a-z]", phrase)}


def anchors(question: str) -> list[str]:
    """What a unit must hold to be collected: the question's identifiers as phrases, then its other content
    words, the scaffolding of counting left out."""
    found = identifiers(question)
    inside = {word for phrase in found for word in phrase.split()}
    for word in query_terms(question):
        if word not in _SCAFFOLD and word not in inside and word not in found:
            found.append(word)
    return found


_COUNTED_ENDS = {"in", "of", "on", "to", "for", "by", "with", "from", "at", "as", "per", "across", "over", "under",
                 "among", "between", "since", "before", "after", "that", "which", "who", "whose", "where", "when",
                 "did", "does", "do", "has", "have", "had", "is", "are", "was", "were", "be", "been", "can", "could",
                 "will", "would", "should", "must", "may"}
# what a list lists: "List every upload …", "Name all …", "Which tests failed …"
_LIST_RUN = re.compile(r"^\s*(?:please\s+)?(?:(?:list|name|enumerate)\s+(?:(?:all|every|each)\s+(?:of\s+)?)?"
                       r"(?:the\s+)?|which\s+)", re.IGNORECASE)
# the words around the ordinal: "Which test is the first one …", "What is the earliest binutils version …"
_ORDINAL_PARTS = re.compile(rf"^\s*(?:which|what)\s+(.*?)\b(?:is|are|was|were)\s+the\s+(?:{_ORDINAL_WORDS})\b(.*)$",
                            re.IGNORECASE)


def counted(question: str) -> list[str]:
    """The words naming what a whole-document question counts, lists or orders: "uploads" in "How many uploads
    were made to experimental?" and in "List every upload made to experimental.", "binutils version" in "What is
    the earliest binutils version in the changelog?", each run of words ending where a preposition or a verb
    begins the condition."""
    runs: list[str] = []
    if match := _COUNTING.match(question):
        runs.append(question[match.end():])
    elif match := _ORDINAL_PARTS.match(question):
        runs.extend(match.groups())
    elif _LISTING.search(question) and (match := _LIST_RUN.match(question)):
        runs.append(question[match.end():])
    words: list[str] = []
    for run in runs:
        found = re.findall(r"[\w'’+.-]*\w", run.lower())
        for at, word in enumerate(found):
            if word in _COUNTED_ENDS or _verb_of_condition(found, at):
                break
            words.extend(term for term in query_terms(word) if term not in _SCAFFOLD)
    return words


def _verb_of_condition(words: list[str], at: int) -> bool:
    """Whether ``words[at]`` is a past form that begins the condition: after what is counted and just before a
    preposition or the question's end, or an adverb there ("tests failed in the g++ testsuite", "tests passed
    unexpectedly in …": the tests that failed, not "failed tests"; "unexpected failures" is counted, as "signed
    uploads" is)."""
    word, rest = words[at], words[at + 1:]
    if rest and len(rest[0]) > 4 and rest[0].endswith("ly"):
        rest = rest[1:]
    return at > 0 and len(word) > 4 and word.endswith("ed") and (not rest or rest[0] in _COUNTED_ENDS)


# "… in the libstdc++ testsuite?": a lower-case name or an identifier, then what kind of place it is
_PLACE = re.compile(r"\b(?:in|of|from|for|on|within|under)\s+the\s+([\w.+/-]+)\s+([a-z]+)\s*[?.!]?\s*$")


def place_kind(question: str) -> list[str]:
    """The noun saying what kind of place the question's last words name ("testsuite" in "… in the libstdc++
    testsuite?"): the document may call it otherwise (the log says "tests"), as what is counted. Not after a
    capitalised name ("… by Galen Hazelwood")."""
    match = _PLACE.search(question)
    if not match or match.group(1) != match.group(1).lower():
        return []
    return [term for term in query_terms(match.group(2)) if term not in _SCAFFOLD]


_PART_NUMBER = re.compile(r"\b(chapter|section|appendix|part)\s+((?:\d+|[A-Z])(?:\.\d+)*)\b", re.IGNORECASE)


def part_numbers(question: str) -> list[tuple[str, str]]:
    """The parts a question names by number, each with its part word: ("chapter", "8") for "… chapter 8 …",
    ("section", "4.2"), ("appendix", "B") for "Appendix B" (a one-letter number only in capitals: "part a" is no
    appendix)."""
    return [(m.group(1).lower(), m.group(2)) for m in _PART_NUMBER.finditer(question) if not m.group(2).islower()]


def parts_asked(question: str) -> bool:
    """Whether the question counts the document's parts (chapters, sections…) or the parts of a named one."""
    return bool(stems(query_terms(question)) & PARTS) or bool(_QUOTED.search(question))


def quoted(question: str) -> list[str]:
    return [text.strip() for text in _QUOTED.findall(question)]
