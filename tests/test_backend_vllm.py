"""Contract test of the vLLM backend against a fake ``vllm`` package (tests/fakes/vllm): no GPU can run here,
so this checks what memread asks of vLLM and how it reads the answers, and that vLLM's logging (on stdout by
default) stays off memread's stdout. ``vllm serve`` + the openai backend is checked against a fake server that
speaks vLLM's routes (tests/test_backend_openai.py); no real vLLM runs in the suite."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memread.backends import create_backend
from memread.backends.base import ChatRequest, Message
from memread.errors import BackendError, BudgetError, ExitStatus, UsageError


def user(text: str, **options: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), **options)


@pytest.fixture(autouse=True)
def _vllm_logging_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """vLLM's logging is configured from the environment, and the backend changes VLLM_LOGGING_STREAM: each
    test starts without it and leaves none behind (setenv then delenv restores "absent" at teardown)."""
    for name in ("VLLM_LOGGING_STREAM", "VLLM_CONFIGURE_LOGGING", "VLLM_LOGGING_CONFIG_PATH"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    yield


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


def test_requests_that_begin_their_reply_continue_an_assistant_message(fake_vllm: ModuleType) -> None:
    backend = create_backend("vllm", model="m")
    assert backend.capabilities.continues_replies
    requests = [user("lane zero reads", max_tokens=900), user("answer lane one", max_tokens=900, reply_start="\\boxed{"),
                user("lane two reads", max_tokens=900)]
    done = backend.complete(requests)
    chats = [call[1] for call in fake_vllm.calls if call[0] == "chat"]
    assert len(chats) == 2  # continue_final_message applies to a whole chat() call
    (plain, _, plain_kwargs), (begun, _, begun_kwargs) = chats
    assert plain_kwargs == {"use_tqdm": False}
    assert plain == [[{"role": "user", "content": "lane zero reads"}], [{"role": "user", "content": "lane two reads"}]]
    assert begun_kwargs == {"use_tqdm": False, "add_generation_prompt": False, "continue_final_message": True}
    assert begun == [[{"role": "user", "content": "answer lane one"}, {"role": "assistant", "content": "\\boxed{"}]]
    # in request order, the begun reply whole
    assert [c.text for c in done] == ["reply to lane zero re", "\\boxed{reply to \\boxed{", "reply to lane two rea"]


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


@pytest.mark.parametrize(("option", "value"), [("top_p", 0.0), ("temperature", 2.5), ("temperature", -0.1)])
def test_sampling_settings_vllm_refuses_are_a_usage_error(fake_vllm: ModuleType, option: str,
                                                          value: float) -> None:
    backend = create_backend("vllm", model="m")
    with pytest.raises(UsageError) as refused:
        backend.complete([user("x", max_tokens=10, **{option: value})])
    assert refused.value.exit_status == ExitStatus.USAGE
    assert option in refused.value.message and "--top-p" in (refused.value.hint or "")
    assert not [call for call in fake_vllm.calls if call[0] == "chat"]


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


# -- vLLM's logs do not mix with memread's stdout ----------------------------------------------------------

FAKES = Path(__file__).parent / "fakes"
ROOT = Path(__file__).parent.parent


def run_ask_json(tmp_path: Path, **environ: str) -> subprocess.CompletedProcess[str]:
    """``memread ask --backend vllm --json`` in a fresh process that imports the fake vLLM, as a user runs it."""
    document = tmp_path / "harbour.txt"
    document.write_text("The harbour had seven boats.\nThe cook was called Aurelio.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env.update(PYTHONPATH=os.pathsep.join([str(FAKES), str(ROOT)]), **environ)
    return subprocess.run(
        [sys.executable, "-m", "memread", "ask", "--backend", "vllm", "--model", "Qwen/Qwen2.5-7B-Instruct",
         "--json", str(document), "Who was the cook?"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )


@pytest.mark.parametrize("setting", ["vLLM's default", "VLLM_LOGGING_STREAM=stdout", "a logging config on stdout"])
def test_ask_json_prints_one_json_object_and_vllms_logs_go_to_stderr(tmp_path: Path, setting: str) -> None:
    environ: dict[str, str] = {}
    if setting == "VLLM_LOGGING_STREAM=stdout":
        environ["VLLM_LOGGING_STREAM"] = "ext://sys.stdout"
    elif setting == "a logging config on stdout":
        # The user's own config (VLLM_LOGGING_CONFIG_PATH) is used by the engine's child process as well, where
        # memread's handler retargeting cannot reach: the child inherits a file descriptor 1 that points at stderr.
        config = tmp_path / "logging.json"
        config.write_text(json.dumps({
            "version": 1, "disable_existing_loggers": False,
            "handlers": {"out": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout"}},
            "loggers": {"vllm": {"handlers": ["out"], "level": "INFO", "propagate": False}},
        }))
        environ["VLLM_LOGGING_CONFIG_PATH"] = str(config)
    done = run_ask_json(tmp_path, **environ)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)  # the whole of stdout is one JSON document, or this raises
    assert result["status"] == "ok" and result["answer"]
    assert "Initializing a V1 LLM engine" in done.stderr  # logged in this process while the engine starts
    assert "EngineCore started" in done.stderr  # logged by the engine's child process
    assert "Avg prompt throughput" in done.stderr  # logged after a batch


def test_logs_go_to_stderr_when_vllm_was_imported_first(capsys: pytest.CaptureFixture[str],
                                                       fake_vllm: ModuleType) -> None:
    from vllm.logger import configure_root_logger

    configure_root_logger()  # what `import vllm` did, here under pytest's capture of sys.stdout
    # The handler writes to stdout, as vLLM's does. (pytest adds capturing handlers of its own to loggers that
    # do not propagate; they are not vLLM's.)
    [handler] = [h for h in logging.getLogger("vllm").handlers if type(h) is logging.StreamHandler]
    assert isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout
    backend = create_backend("vllm", model="m")
    assert handler.stream is sys.stderr
    assert os.environ["VLLM_LOGGING_STREAM"] == "ext://sys.stderr"  # for the engine's child processes
    capsys.readouterr()
    backend.complete([user("hi", max_tokens=10)])
    out, err = capsys.readouterr()
    assert out == ""
    assert "Avg prompt throughput" in err


def test_a_logging_stream_other_than_stdout_is_left_alone(monkeypatch: pytest.MonkeyPatch,
                                                         fake_vllm: ModuleType) -> None:
    from memread.backends.vllm import route_vllm_logs_to_stderr

    monkeypatch.setenv("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    route_vllm_logs_to_stderr()
    assert os.environ["VLLM_LOGGING_STREAM"] == "ext://sys.stderr"
    # A file handler is the user's choice, even on a "vllm" logger.
    log_file = logging.FileHandler(os.devnull)
    logging.getLogger("vllm.engine").addHandler(log_file)
    try:
        route_vllm_logs_to_stderr()
        assert log_file.stream.name == os.devnull
    finally:
        logging.getLogger("vllm.engine").removeHandler(log_file)
        log_file.close()
