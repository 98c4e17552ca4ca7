"""Record raw replies of real small models to the gated and callback prompts (fixtures for the parser tests).

Run by hand (not by the test suite): ``python tests/data/replies/record.py MODEL.gguf NAME [--stop]``. It
writes ``NAME-<strategy>-<n>.json`` next to this file: the prompt inputs, sampling settings and the raw
reply. ``--stop`` records gated replies generated with the early-stop strings (``NAME-gated-stop-<n>``)
and callback replies cut by a small token limit (``NAME-callback-cut-<n>``), as llama.cpp returns them.
The sections are made up for this purpose; the replies are our own generated text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from llama_cpp import Llama

from memread import prompts
from memread.strategies.gated import CHECK_NO_STOPS

HERE = Path(__file__).parent
CASES = [
    ("What is the special magic number for quiet-harbour?",
     "The ferry left at nine. Gulls followed it across the bay. One of the special magic numbers for "
     "quiet-harbour is: 4417302. The captain logged the weather and the tide tables before noon.",
     prompts.NO_MEMORY),
    ("Who repaired the lighthouse lamp?",
     "Tourism numbers rose in the summer; the ferry added a second crossing. The fish market moved to the "
     "north quay and the town council approved a new car park.",
     prompts.NO_MEMORY),
    ("Who repaired the lighthouse lamp?",
     "In October the lighthouse lamp failed during a storm. It was repaired two days later by Ada Quist, "
     "the harbour engineer, who replaced the burnt-out bulb and the lens seal.",
     "The lighthouse is at the end of the north quay. No repair has been mentioned yet."),
    ("In which city was the 122nd SS-Standarte formed, and how many inhabitants did it have in 2014?",
     "The 122nd SS-Standarte was a regimental command of the Allgemeine-SS that was formed in the city of "
     "Strasbourg during World War II. It was activated on November 12, 1940.",
     "No previous memory"),
]


def main(model: str, name: str, stop: bool = False) -> None:
    llm = Llama(model_path=model, n_ctx=4096, n_threads=1, verbose=False, seed=1)
    for strategy in ("gated", "callback"):
        kind = strategy + ("-stop" if strategy == "gated" else "-cut") if stop else strategy
        for i, (question, section, memory) in enumerate(CASES):
            if strategy == "gated":
                prompt = prompts.grumem_memory_prompt(question, memory, section)
            else:
                prompt = prompts.rememr1_memory_prompt(question, memory, section, prompts.NO_RECALLED_MEMORY)
            settings = {"temperature": 0.7, "top_p": 0.95, "seed": 100 + i, "max_tokens": 320}
            if stop and strategy == "gated":
                settings["stop"] = list(CHECK_NO_STOPS)
            elif stop:
                settings["max_tokens"] = 90
            out = llm.create_chat_completion(messages=[{"role": "user", "content": prompt}], **settings)
            choice = out["choices"][0]
            record = {"model": name, "strategy": strategy, "question": question, "memory": memory,
                      "section": section, "settings": settings, "finish_reason": choice["finish_reason"],
                      "reply": choice["message"]["content"]}
            (HERE / f"{name}-{kind}-{i}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
            print(name, kind, i, choice["finish_reason"], repr(choice["message"]["content"][:200]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--stop" in sys.argv[3:])
