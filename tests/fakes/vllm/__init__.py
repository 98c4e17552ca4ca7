"""A stand-in for the ``vllm`` package, for the contract test of memread's vLLM backend (no GPU in CI).

It records every call and answers with canned outputs shaped like vLLM's ``RequestOutput``: the reply names
the last user message, a request whose message contains "STOP:<s>" ends on stop string <s>, and one whose
max_tokens is below 3 ends on "length". The tokenizer splits on spaces (one id per word).

It logs as vLLM does (see ``logger.py``): importing it configures a handler on stdout unless told otherwise,
the engine logs while it starts and after each batch, and, as vLLM's V1 engine runs its core in a child
process by default (``VLLM_ENABLE_V1_MULTIPROCESSING=1``), ``LLM()`` starts a short child process that sets
up the same logging from the inherited environment and logs one line through the inherited file descriptors.
``SamplingParams`` refuses what vLLM's ``SamplingParams._verify_args`` refuses for temperature and top_p.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm.logger import configure_root_logger, init_logger

configure_root_logger()  # vLLM: at import of vllm.logger, which `import vllm` imports
logger = init_logger("vllm.entrypoints.llm")

calls: list[tuple[str, Any]] = []  # ("LLM", engine kwargs) and ("chat", (conversations, params, kwargs))
fail_with: BaseException | None = None  # set by a test to make the next chat call raise

_ENGINE_CORE = (
    "import logging, os\n"
    "from vllm.logger import configure_root_logger\n"
    "configure_root_logger()\n"
    "logging.getLogger('vllm.v1.engine.core').info('EngineCore started (pid %d)', os.getpid())\n"
)


class SamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.max_tokens = kwargs.get("max_tokens", 16)  # vLLM's own default is 16
        self.stop = kwargs.get("stop")
        # vllm/sampling_params.py, SamplingParams._verify_args (VLLMValidationError subclasses ValueError)
        temperature, top_p = kwargs.get("temperature", 1.0), kwargs.get("top_p", 1.0)
        if not math.isfinite(temperature) or temperature < 0.0:
            raise ValueError(f"temperature must be non-negative, got {temperature}.")
        if temperature > 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {temperature}.")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}.")


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool = True
    num_cached_tokens: int | None = None


class FakeTokenizer:
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [len(word) for word in text.split()]
        return ([1] if add_special_tokens else []) + ids

    def decode(self, ids: list[int]) -> str:
        return " ".join("x" * i for i in ids)

    def apply_chat_template(self, messages: list[dict[str, str]], tokenize: bool = True,
                            add_generation_prompt: bool = False) -> str:
        assert not tokenize, "memread renders the template to text, then encodes"
        text = "".join(f"<|im_start|> {m['role']} {m['content']} <|im_end|> " for m in messages)
        return text + ("<|im_start|> assistant" if add_generation_prompt else "")


class LLM:
    def __init__(self, **engine: Any) -> None:
        self.engine = engine
        calls.append(("LLM", engine))
        logger.info("Initializing a V1 LLM engine with config: model=%r", engine.get("model"))
        if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") != "0":
            fakes = str(Path(__file__).resolve().parent.parent)
            path = os.pathsep.join(p for p in (fakes, os.environ.get("PYTHONPATH")) if p)
            subprocess.run([sys.executable, "-S", "-c", _ENGINE_CORE], env={**os.environ, "PYTHONPATH": path},
                           check=True, timeout=60)

    def get_tokenizer(self) -> FakeTokenizer:
        return FakeTokenizer()

    def chat(self, conversations: list[list[dict[str, str]]], sampling_params: Any,
             use_tqdm: bool = True, **kwargs: Any) -> list[RequestOutput]:
        global fail_with
        calls.append(("chat", (conversations, sampling_params, {"use_tqdm": use_tqdm, **kwargs})))
        if fail_with is not None:
            error, fail_with = fail_with, None
            raise error
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(conversations)
        tokenizer = FakeTokenizer()
        outputs = []
        for i, (messages, sp) in enumerate(zip(conversations, params, strict=True)):
            last = messages[-1]["content"]
            prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            stop = last.split("STOP:", 1)[1].split()[0] if "STOP:" in last else None
            if sp.max_tokens < 3:
                out = CompletionOutput(0, "cut", [7] * sp.max_tokens, "length")
            elif stop and stop in (sp.stop or []):
                out = CompletionOutput(0, f"reply to {last[:12]}", [5, 6], "stop", stop_reason=stop)
            else:
                out = CompletionOutput(0, f"reply to {last[:12]}", [5, 6, 2], "stop", stop_reason=2)
            outputs.append(RequestOutput(str(i), prompt, tokenizer.encode(prompt, add_special_tokens=False),
                                         [out], num_cached_tokens=4 * i))
        init_logger("vllm.v1.metrics.loggers").info("Engine 000: Avg prompt throughput: %d tokens/s", 1000)
        return outputs
