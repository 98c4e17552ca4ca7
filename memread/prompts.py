"""Every prompt memread sends: the single source of truth, verbatim from the seed papers and code.

The RL-trained checkpoints (MemAgent, ReMemR1, GRU-Mem) were trained on exactly these strings, so they
are kept character for character, including MemAgent's trailing space after ``<problem>`` and the final
newline after ``Updated memory:`` / ``Your answer:``. Tests pin them (tests/test_prompts.py).

Sources:

* MemAgent (``recurrent/impls/memory.py``, ``taskutils/memory_eval/utils/recurrent*.py``): the memory
  template, the ``\\boxed{}`` final template (training and quickstart) and the "Therefore, the answer is"
  final template (what MemAgent's evaluation ``run.py`` used).
* ReMemR1 (``recurrent/impls/memory_revisit.py``, identical in its eval code): memory and final templates
  with a ``<recalled_memory>`` block, sentinel "No memory was recalled.".
* GRU-Mem (arXiv 2602.10560, appendix C, figure 10; no code was released): the paper's text exactly, with
  its one-line ``<problem> {prompt} </problem>`` / ``<memory> …`` / ``<section> …`` layout, no
  ``Updated memory:`` tail (figure 10a) and ``Your answer:`` after the answer prompt's two lines (figure
  10b). One deviation, forced by the extraction: the PDF text wraps every tag of the instruction in
  backticks and puts the blocks inside a markdown code fence; both are dropped, as ReMemR1's paper shows
  the same backticks around tags that its released code does not have (monospace rendering, not prompt).
  The answer prompt's "put the answer in boxed ." is ``\\boxed{}`` with the braces lost.

Layouts: ``"question-first"`` (default) is the papers' order: problem, [recalled memory,] memory,
section. ``"chunk-first"`` puts the section block first so that several questions reading the same
chunk share the long chunk prefix in an engine's prefix cache (vLLM, llama-server); it deviates from the
trained prompts, so it is an option for untrained models only.
"""

from __future__ import annotations

from typing import Literal

from memread.settings import FINAL_PROMPTS, LAYOUTS

Layout = Literal["question-first", "chunk-first"]
FinalPrompt = Literal["boxed", "therefore"]


NO_MEMORY = "No previous memory"
NO_RECALLED_MEMORY = "No memory was recalled."

# --- MemAgent (overwrite) ------------------------------------------------------------------------------

MEMAGENT_INSTRUCTION = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. Please read the provided section carefully and update the memory with the new "
    "information that helps to answer the problem. Be sure to retain all relevant details from the previous "
    "memory while adding any new, useful information."
)

FINAL_BOXED_INSTRUCTION = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    "memory and put the answer in \\boxed{}."
)

FINAL_THEREFORE_INSTRUCTION = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    'memory and format your response as follows "Therefore, the answer is (insert answer here)".'
)

# --- GRU-Mem (gated) -----------------------------------------------------------------------------------

GRUMEM_INSTRUCTION = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. Please read the provided section carefully. You should reason about whether the "
    "new section contains useful information about the problem, and then update the memory with the new "
    "information that helps to answer the problem.\n"
    "\n"
    "Be sure to retain all relevant details from the previous memory while adding any new, useful "
    "information. You should also carefully judge whether you have collected enough information to answer "
    "the problem.\n"
    "\n"
    "You should reason about whether the new section contains useful information, what to update, and what "
    "to do next first between <think> and </think>.\n"
    "\n"
    "If the new section contains useful information about the problem, you should first generate "
    "<check>yes</check>. After that, update the new memory between <update> and </update>.\n"
    "\n"
    "If the new section does not contain useful information about the problem, you should first generate "
    "<check>no</check>. After that, you should keep the previous memory unchanged between <update> and "
    "</update>.\n"
    "\n"
    "In the end, if you haven't collected enough information for the problem, return "
    "<next>continue</next>. ONLY when enough information is collected, return <next>end</next>."
)

# --- ReMemR1 (callback) --------------------------------------------------------------------------------

REMEMR1_INSTRUCTION = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. You should generate response in the following format:\n"
    "- Output your thinking process in <thinking>your_thinking_process</thinking>.\n"
    "- Read the provided section carefully and update the memory with the new information that helps to "
    "answer the problem in only one <update>the_updated_memory</update> action. Be sure to retain all "
    "relevant details from the previous memory while adding any new, useful information.\n"
    "- If you notice partial key evidence that is not enough to answer the problem, also output only one "
    "`<recall>query</recall>` (e.g. `<recall>who's the president of the United States?</recall>`) to "
    "retrieve information in previous memories."
)


def _problem(question: str) -> str:
    return f"<problem> \n{question}\n</problem>"  # the space after <problem> is in the trained template


def _block(tag: str, text: str) -> str:
    return f"<{tag}>\n{text}\n</{tag}>"


def _join(instruction: str, blocks: list[str], tail: str) -> str:
    return instruction + "\n\n" + "\n\n".join(blocks) + "\n\n" + tail + "\n"


def _memory_blocks(question: str, memory: str, chunk: str, recalled: str | None, layout: str) -> list[str]:
    head = [_problem(question)]
    if recalled is not None:
        head.append(_block("recalled_memory", recalled))
    head.append(_block("memory", memory))
    section = _block("section", chunk)
    if layout == "chunk-first":
        return [section, *head]
    if layout != "question-first":
        raise ValueError(f"unknown layout {layout!r}; choose one of {LAYOUTS}")
    return [*head, section]


def memagent_memory_prompt(question: str, memory: str, chunk: str, *, layout: str = "question-first") -> str:
    """MemAgent's memory-update prompt (the overwrite strategy)."""
    return _join(MEMAGENT_INSTRUCTION, _memory_blocks(question, memory, chunk, None, layout), "Updated memory:")


def grumem_memory_prompt(question: str, memory: str, chunk: str, *, layout: str = "question-first") -> str:
    """GRU-Mem's memory-agent prompt (the gated strategy, figure 10a): <think>, <check>, <update>, <next>."""
    lines = [f"<problem> {question} </problem>", f"<memory> {memory} </memory>"]
    section = f"<section> {chunk} </section>"
    lines = [section, *lines] if layout == "chunk-first" else [*lines, section]
    return GRUMEM_INSTRUCTION + "\n\n" + "\n".join(lines)


def grumem_final_prompt(question: str, memory: str) -> str:
    """GRU-Mem's answer-agent prompt (figure 10b)."""
    return (FINAL_BOXED_INSTRUCTION + f"\n\n<problem> {question} </problem>\n<memory> {memory} </memory>"
            "\n\nYour answer:")


def rememr1_memory_prompt(question: str, memory: str, chunk: str, recalled: str,
                          *, layout: str = "question-first") -> str:
    """ReMemR1's memory prompt (the callback strategy), with the memory recalled at the previous step."""
    return _join(REMEMR1_INSTRUCTION, _memory_blocks(question, memory, chunk, recalled, layout),
                 "Updated memory:")


def final_prompt(question: str, memory: str, *, style: str = "boxed", recalled: str | None = None) -> str:
    """The answer prompt. ``style`` "boxed" (trained; MemAgent quickstart, GRU-Mem, ReMemR1) or
    "therefore" (MemAgent's evaluation). ``recalled`` adds ReMemR1's ``<recalled_memory>`` block."""
    if style == "boxed":
        instruction = FINAL_BOXED_INSTRUCTION
    elif style == "therefore":
        instruction = FINAL_THEREFORE_INSTRUCTION
    else:
        raise ValueError(f"unknown final prompt {style!r}; choose one of {FINAL_PROMPTS}")
    blocks = [_problem(question)]
    if recalled is not None:
        blocks.append(_block("recalled_memory", recalled))
    blocks.append(_block("memory", memory))
    return _join(instruction, blocks, "Your answer:")
