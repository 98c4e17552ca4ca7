"""The prompts are the contract with the trained checkpoints: pinned character for character."""

from __future__ import annotations

import pytest

from memread import prompts

# MemAgent, recurrent/impls/memory.py (as quoted in the reference notes), note "<problem> " with a space.
MEMAGENT = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. Please read the provided section carefully and update the memory with the new "
    "information that helps to answer the problem. Be sure to retain all relevant details from the previous "
    "memory while adding any new, useful information.\n\n"
    "<problem> \n{prompt}\n</problem>\n\n<memory>\n{memory}\n</memory>\n\n<section>\n{chunk}\n</section>\n\n"
    "Updated memory:\n"
)
FINAL_BOXED = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    "memory and put the answer in \\boxed{{}}.\n\n"
    "<problem> \n{prompt}\n</problem>\n\n<memory>\n{memory}\n</memory>\n\nYour answer:\n"
)
FINAL_THEREFORE = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    "memory and format your response as follows \"Therefore, the answer is (insert answer here)\".\n\n"
    "<problem> \n{prompt}\n</problem>\n\n<memory>\n{memory}\n</memory>\n\nYour answer:\n"
)
REMEMR1 = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. You should generate response in the following format:\n"
    "- Output your thinking process in <thinking>your_thinking_process</thinking>.\n"
    "- Read the provided section carefully and update the memory with the new information that helps to answer "
    "the problem in only one <update>the_updated_memory</update> action. Be sure to retain all relevant details "
    "from the previous memory while adding any new, useful information.\n"
    "- If you notice partial key evidence that is not enough to answer the problem, also output only one "
    "`<recall>query</recall>` (e.g. `<recall>who's the president of the United States?</recall>`) to retrieve "
    "information in previous memories.\n\n"
    "<problem> \n{prompt}\n</problem>\n\n<recalled_memory>\n{recalled_memory}\n</recalled_memory>\n\n"
    "<memory>\n{memory}\n</memory>\n\n<section>\n{chunk}\n</section>\n\nUpdated memory:\n"
)
REMEMR1_FINAL = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    "memory and put the answer in \\boxed{{}}.\n\n"
    "<problem> \n{prompt}\n</problem>\n\n<recalled_memory>\n{recalled_memory}\n</recalled_memory>\n\n"
    "<memory>\n{memory}\n</memory>\n\nYour answer:\n"
)


def test_memagent_memory_prompt_is_the_trained_template() -> None:
    built = prompts.memagent_memory_prompt("Q?", "M", "C")
    assert built == MEMAGENT.format(prompt="Q?", memory="M", chunk="C")
    assert "<problem> \nQ?" in built and built.endswith("Updated memory:\n")


def test_first_memory_and_recall_sentinels() -> None:
    assert prompts.NO_MEMORY == "No previous memory"
    assert prompts.NO_RECALLED_MEMORY == "No memory was recalled."


def test_final_prompts_boxed_and_therefore() -> None:
    assert prompts.final_prompt("Q?", "M") == FINAL_BOXED.format(prompt="Q?", memory="M")
    assert prompts.final_prompt("Q?", "M", style="therefore") == FINAL_THEREFORE.format(prompt="Q?", memory="M")
    with pytest.raises(ValueError):
        prompts.final_prompt("Q?", "M", style="fancy")


def test_rememr1_prompts_show_the_recalled_memory() -> None:
    assert prompts.rememr1_memory_prompt("Q?", "M", "C", "R") == REMEMR1.format(
        prompt="Q?", memory="M", chunk="C", recalled_memory="R")
    assert prompts.final_prompt("Q?", "M", recalled="R") == REMEMR1_FINAL.format(
        prompt="Q?", memory="M", recalled_memory="R")


def test_grumem_prompt_asks_for_the_four_tags_in_memagent_layout() -> None:
    built = prompts.grumem_memory_prompt("Q?", "M", "C")
    assert built.startswith(
        "You are presented with a problem, a section of an article that may contain the answer to the problem, "
        "and a previous memory. Please read the provided section carefully. You should reason about whether")
    for phrase in ("between <think> and </think>.", "you should first generate <check>yes</check>.",
                   "you should first generate <check>no</check>.", "return <next>continue</next>.",
                   "ONLY when enough information is collected, return <next>end</next>."):
        assert phrase in built
    assert "`" not in built  # the paper's backticks are a PDF rendering of monospace text
    assert built.endswith("<problem> \nQ?\n</problem>\n\n<memory>\nM\n</memory>\n\n<section>\nC\n</section>\n\n"
                          "Updated memory:\n")


def test_chunk_first_layout_moves_only_the_section_block() -> None:
    question_first = prompts.memagent_memory_prompt("Q?", "M", "C")
    chunk_first = prompts.memagent_memory_prompt("Q?", "M", "C", layout="chunk-first")
    assert chunk_first == question_first.replace(
        "<problem> \nQ?\n</problem>\n\n<memory>\nM\n</memory>\n\n<section>\nC\n</section>",
        "<section>\nC\n</section>\n\n<problem> \nQ?\n</problem>\n\n<memory>\nM\n</memory>")
    callback = prompts.rememr1_memory_prompt("Q?", "M", "C", "R", layout="chunk-first")
    assert callback.index("<section>") < callback.index("<problem>") < callback.index("<recalled_memory>")
    # Two questions over the same chunk now share everything up to the end of the section.
    other = prompts.memagent_memory_prompt("Other?", "N", "C", layout="chunk-first")
    assert other[:other.index("</section>")] == chunk_first[:chunk_first.index("</section>")]


def test_templates_for_the_trace_header_have_the_holes() -> None:
    t = prompts.templates("callback", final_style="therefore")
    assert "{recalled_memory}" in t["memory"] and "{chunk}" in t["memory"]
    assert "Therefore, the answer is" in t["final"] and "{recalled_memory}" in t["final"]
    assert prompts.templates("overwrite")["memory"] == MEMAGENT
