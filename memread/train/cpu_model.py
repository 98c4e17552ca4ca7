"""SmolLM2-135M-Instruct on the CPU for ``memread train check``: loaded by transformers from the GGUF memread already
uses (no model hub), and a stand-in for verl's rollout server that generates with it from token ids."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def _offline() -> Iterator[None]:
    """Nothing may come from a model hub: transformers and huggingface_hub are told so for the check."""
    saved = {name: os.environ.get(name) for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_smollm2() -> tuple[Path, Any, Any]:
    """SmolLM2-135M-Instruct's GGUF path, and its tokenizer and float32 model loaded by transformers from it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from memread import models

    path = models.resolve("smollm2-135m")
    with _offline():
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    model.eval()
    return path, tokenizer, model


class HFServer:
    """verl's rollout client (``server_manager.generate``) answered by ``model.generate`` on the CPU: token ids in,
    token ids and their log-probabilities out."""

    def __init__(self, model: Any, end_ids: list[int], pad_id: int, seed: int = 0) -> None:
        self.model, self.end_ids, self.pad_id = model, end_ids, pad_id
        self.calls = 0
        self.seed = seed

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **_kwargs: Any) -> Any:
        import torch
        from verl.workers.rollout.replica import TokenOutput

        self.calls += 1
        torch.manual_seed(self.seed + self.calls)
        inputs = torch.tensor([prompt_ids])
        with torch.no_grad():
            out = self.model.generate(
                inputs, attention_mask=torch.ones_like(inputs), do_sample=True,
                temperature=float(sampling_params.get("temperature", 1.0)) or 1.0,
                top_p=float(sampling_params.get("top_p", 1.0)), top_k=0,
                max_new_tokens=int(sampling_params["max_tokens"]), eos_token_id=self.end_ids,
                pad_token_id=self.pad_id, return_dict_in_generate=True, output_scores=True)
            scores = self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
        ids = out.sequences[0, len(prompt_ids):].tolist()
        return TokenOutput(token_ids=ids, log_probs=[float(x) for x in scores.tolist()[:len(ids)]])
