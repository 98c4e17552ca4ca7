"""The prompts are the contract with the trained checkpoints: pinned character for character."""

from __future__ import annotations

import pytest

from memread import prompts

# MemAgent, recurrent/impls/memory.py, note "<problem> " with a space.
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


# GRU-Mem, arXiv 2602.10560, appendix C, figure 10a, as the paper prints it (its backticks around tags and the
# code fence around the three lines left out: a rendering of monospace text, see memread/prompts.py).
GRUMEM_FIGURE_10A = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, and a "
    "previous memory. Please read the provided section carefully. You should reason about whether the new section "
    "contains useful information about the problem, and then update the memory with the new information that helps "
    "to answer the problem.\n\nBe sure to retain all relevant details from the previous memory while adding any new, "
    "useful information. You should also carefully judge whether you have collected enough information to answer "
    "the problem.\n\nYou should reason about whether the new section contains useful information, what to update, "
    "and what to do next first between <think> and </think>.\n\nIf the new section contains useful information about "
    "the problem, you should first generate <check>yes</check>. After that, update the new memory between <update> "
    "and </update>.\n\nIf the new section does not contain useful information about the problem, you should first "
    "generate <check>no</check>. After that, you should keep the previous memory unchanged between <update> and "
    "</update>.\n\nIn the end, if you haven't collected enough information for the problem, return "
    "<next>continue</next>. ONLY when enough information is collected, return <next>end</next>.\n\n"
    "<problem> {prompt} </problem>\n<memory> {memory} </memory>\n<section> {chunk} </section>"
)
GRUMEM_FIGURE_10B = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    "memory and put the answer in \\boxed{}.\n\n<problem> {prompt} </problem>\n<memory> {memory} </memory>\n\n"
    "Your answer:"
)


def test_grumem_prompts_are_the_papers_figure_10_word_for_word() -> None:
    assert prompts.grumem_memory_prompt("{prompt}", "{memory}", "{chunk}") == GRUMEM_FIGURE_10A
    assert prompts.grumem_final_prompt("{prompt}", "{memory}") == GRUMEM_FIGURE_10B
    assert "Updated memory:" not in GRUMEM_FIGURE_10A
    chunk_first = prompts.grumem_memory_prompt("Q?", "M", "C", layout="chunk-first")
    assert chunk_first.endswith("<section> C </section>\n<problem> Q? </problem>\n<memory> M </memory>")


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


def test_each_strategy_gives_its_templates_for_the_trace_header_with_the_holes() -> None:
    from memread.settings import Settings
    from memread.strategies import create_strategy

    t = create_strategy(Settings(strategy="callback", final_prompt="therefore")).templates()
    assert "{recalled_memory}" in t["memory"] and "{chunk}" in t["memory"]
    assert "Therefore, the answer is" in t["final"] and "{recalled_memory}" in t["final"]
    assert create_strategy(Settings(strategy="overwrite")).templates()["memory"] == MEMAGENT
    gated = create_strategy(Settings(strategy="gated")).templates()
    assert gated == {"memory": GRUMEM_FIGURE_10A, "final": GRUMEM_FIGURE_10B}
