"""Contract test of the vLLM backend against a fake ``vllm`` package (tests/fakes/vllm): no GPU can run here,
so this checks what memread asks of vLLM and how it reads the answers. The real route to vLLM that is tested
end to end is ``vllm serve`` + the openai backend (tests/test_backend_openai.py)."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import pytest

from memread.backends import create_backend
from memread.backends.base import ChatRequest, Message
from memread.errors import BackendError, BudgetError, ExitStatus, UsageError


def user(text: str, **options: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), **options)


def test_the_engine_is_built_for_memreads_budget_and_parallelism(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="Qwen/Qwen2.5-7B-Instruct", context_length=9000,
                             tensor_parallel_size=2, pipeline_parallel_size=2,
                             distributed_executor_backend="ray", seed=3, n_threads=None, base_url=None)
    [(kind, engine)] = fake_vllm.calls
    assert kind == "LLM"
    assert engine == {
        "model": "Qwen/Qwen2.5-7B-Instruct", "tensor_parallel_size": 2, "pipeline_parallel_size": 2,
        "max_model_len": 9000, "enable_prefix_caching": True, "seed": 3, "gpu_memory_utilization": 0.9,
        "distributed_executor_backend": "ray",
    }
    assert backend.name == "vllm" and backend.context_length == 9000
    assert backend.capabilities.names_stop_strings  # the loop can trust stop_reason for </recall> and <check>no</check>


def test_the_default_engine_leaves_the_executor_to_vllm(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="m", n_ctx=16384)
    engine = fake_vllm.calls[0][1]
    assert "distributed_executor_backend" not in engine
    assert engine["max_model_len"] == backend.context_length == 16384
    assert engine["enable_prefix_caching"] is True


def test_a_step_is_one_chat_call_for_all_lanes_with_answers_in_order(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="m")
    requests = [
        user("lane zero reads", max_tokens=900, temperature=0.0, seed=1),
        user("lane one STOP:</recall> now", max_tokens=900, stop=("</recall>",), top_p=0.9),
        user("lane two is cut", max_tokens=2, temperature=0.7, seed=5),
    ]
    done = backend.complete(requests)
    chats = [call for call in fake_vllm.calls if call[0] == "chat"]
    assert len(chats) == 1
    conversations, params, kwargs = chats[0][1]
    assert kwargs == {"use_tqdm": False}
    # user-only messages, as the papers sent them
    assert conversations == [[{"role": "user", "content": r.messages[0].content}] for r in requests]
    assert [p.kwargs for p in params] == [
        {"max_tokens": 900, "temperature": 0.0, "top_p": 1.0, "seed": 1, "stop": None},
        {"max_tokens": 900, "temperature": 0.0, "top_p": 0.9, "seed": None, "stop": ["</recall>"]},
        {"max_tokens": 2, "temperature": 0.7, "top_p": 1.0, "seed": 5, "stop": None},
    ]
    assert [c.text for c in done] == ["reply to lane zero re", "reply to lane one STO", "cut"]
    assert [c.finish_reason for c in done] == ["stop", "stop", "length"]
    # the stop string that fired is reported; an EOS token id is not a stop string
    assert [c.stop_reason for c in done] == [None, "</recall>", None]
    assert [c.completion_tokens for c in done] == [3, 2, 2]
    assert [c.cached_prompt_tokens for c in done] == [0, 4, 8]
    assert done[0].prompt_tokens == backend.count_prompt(requests[0].messages) > 0


def test_budgets_use_the_engines_tokenizer_and_chat_template(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="m")
    assert backend.tokenizer.name == "vllm:m"
    assert backend.tokenizer.encode("three small words") == [5, 5, 5]  # no BOS added
    assert backend.tokenizer.count("three small words") == 3
    # "<|im_start|> user hello <|im_end|> <|im_start|> assistant" -> 6 words
    assert backend.count_prompt([Message("user", "hello")]) == 6


def test_a_system_message_only_when_asked(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="m", system="Be brief.")
    backend.complete([user("hi", max_tokens=10)])
    conversations = fake_vllm.calls[-1][1][0]
    assert conversations == [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]]


def test_engine_failures_become_one_line_errors(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="m")
    fake_vllm.fail_with = ValueError("The decoder prompt (length 20000) is longer than the maximum model length of 12288.")
    with pytest.raises(BudgetError) as too_long:
        backend.complete([user("x", max_tokens=10)])
    assert too_long.value.exit_status == ExitStatus.BUDGET and "--context-length" in (too_long.value.hint or "")
    fake_vllm.fail_with = RuntimeError("CUDA error: an illegal memory access was encountered\nmore")
    with pytest.raises(BackendError) as crashed:
        backend.complete([user("x", max_tokens=10)])
    assert crashed.value.message == "vLLM failed: CUDA error: an illegal memory access was encountered"


def test_without_vllm_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(BackendError) as missing:
        create_backend("vllm", model="Qwen/Qwen2.5-7B-Instruct")
    assert missing.value.exit_status == ExitStatus.BACKEND
    assert "pip install 'memread[vllm]'" in (missing.value.hint or "")
    assert "GPU" in (missing.value.hint or "")


def test_options_of_other_backends_and_a_missing_model_are_usage_errors(fake_vllm: ModuleType) -> None:
    with pytest.raises(UsageError, match="base_url"):
        create_backend("vllm", model="m", base_url="http://x")
    with pytest.raises(UsageError, match="--model"):
        create_backend("vllm", model=None)
    with pytest.raises(UsageError, match="executor"):
        create_backend("vllm", model="m", distributed_executor_backend="slurm")
    assert not [call for call in fake_vllm.calls if call[0] == "LLM"]
