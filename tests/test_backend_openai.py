"""The OpenAI-compatible backend against a real ``python -m llama_cpp.server`` running SmolLM2 on loopback,
against fakes of ``vllm serve`` and ``llama-server`` that speak their documented routes (neither can run
here: vLLM needs a GPU, llama-server is not on the package index), and against tiny fake servers for the
faults a real one will not produce on demand."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.http_servers import DialectServer, LlamaServer, dialect_server, fake_server, free_port

from memread.backends import create_backend
from memread.backends.base import ChatRequest, Message
from memread.backends.http_client import normalise_base_url
from memread.backends.openai_http import OpenAIBackend
from memread.chunk import Chunker
from memread.document import Provenance, Segment
from memread.errors import BackendError, BudgetError, ExitStatus, UsageError
from memread.events import Answered, RunFinished, StepFinished
from memread.loop import Loop, LoopSettings


def ask(text: str, **options: object) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), **options)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def gguf(request: pytest.FixtureRequest) -> Path:
    return Path(request.getfixturevalue("smollm2_path"))


@pytest.fixture(scope="session")
def server(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    running = LlamaServer(gguf, tmp_path_factory.mktemp("llama-server") / "server.log")
    yield running
    running.stop()


@pytest.fixture()
def backend(server: LlamaServer) -> Iterator[OpenAIBackend]:
    opened = OpenAIBackend(base_url=server.url, context_length=4096, retries=0)
    yield opened
    opened.close()


# -- a real server -----------------------------------------------------------------------------------------

@pytest.mark.model
def test_a_batch_comes_back_in_order(backend: OpenAIBackend) -> None:
    # Each request has its own prompt length and its own token limit, so each completion shows which
    # request it answers (comparing texts would not do: the server's prefix reuse shifts float rounding).
    requests = [ask("Tell me a story about a dragon. " * (1 + 4 * i), max_tokens=1 + i) for i in range(5)]
    done = backend.complete(requests)
    assert [c.prompt_tokens for c in done] == [backend.count_prompt(r.messages) for r in requests]
    assert [c.completion_tokens for c in done] == [1, 2, 3, 4, 5]
    assert all(c.finish_reason == "length" and c.text and c.seconds > 0 for c in done)


@pytest.mark.model
def test_a_stop_string_ends_the_reply_before_it(backend: OpenAIBackend) -> None:
    question = "Count from 1 to 20, separated by commas."
    free = backend.complete([ask(question, max_tokens=40)])[0].text
    assert len(free) >= 8, free
    stop = free[4:6]
    stopped = backend.complete([ask(question, max_tokens=40, stop=(stop,))])[0]
    assert stopped.finish_reason == "stop"
    assert stopped.text == free[: free.index(stop)]


@pytest.mark.model
def test_the_servers_extra_samplers_are_switched_off(backend: OpenAIBackend) -> None:
    # llama_cpp.server adds repeat_penalty 1.1, top_k 40 and min_p 0.05 unless told otherwise, unlike the
    # in-process engine and the papers' decoding. (Replies are not compared with the in-process engine's:
    # the server reuses the previous prompt's KV prefix, which alone can change a greedy reply.)
    sent: list[bytes] = []
    backend.server.http.event_hooks["request"].append(lambda request: sent.append(request.content))
    backend.complete([ask("Hi", max_tokens=2)])
    [body] = [b for b in map(json.loads, sent) if b.get("max_tokens") == 2]
    assert (body["repeat_penalty"], body["top_k"], body["min_p"], body["typical_p"]) == (1.0, 0, 0.0, 1.0)


@pytest.mark.model
def test_hitting_max_tokens_says_length(backend: OpenAIBackend) -> None:
    done = backend.complete([ask("Tell me a long story about a dragon.", max_tokens=3)])[0]
    assert done.finish_reason == "length"
    assert done.completion_tokens == 3


@pytest.mark.model
def test_a_seed_makes_sampling_reproducible(backend: OpenAIBackend) -> None:
    greedy = [backend.complete([ask("Describe the sea.", max_tokens=16, seed=3)])[0].text for _ in range(2)]
    assert greedy[0] == greedy[1]
    sampled = [backend.complete([ask("Describe the sea.", max_tokens=16, temperature=1.0, seed=7)])[0].text
               for _ in range(2)]
    assert sampled[0] == sampled[1]


@pytest.mark.model
def test_budgets_use_the_servers_own_tokenizer(server: LlamaServer) -> None:
    backend = OpenAIBackend(base_url=server.url, retries=0)
    try:
        assert backend.tokenizer_source == "llama_cpp.server"
        assert backend.tokenizer.name == "server:llama_cpp.server"
        ids = backend.tokenizer.encode("The quick brown fox jumps over the lazy dog.")
        assert backend.tokenizer.count("The quick brown fox jumps over the lazy dog.") == len(ids) > 5
        assert backend.tokenizer.decode(ids) == "The quick brown fox jumps over the lazy dog."
        # llama_cpp.server does not say how long its context is: we assume little and say so.
        assert backend.context_length == 4096
        assert any("--context-length" in w for w in backend.warnings)
        messages = (Message("user", "Summarise: " + "the cat sat on the mat. " * 40),)
        counted = backend.count_prompt(messages)
        sent = backend.complete([ChatRequest(messages, max_tokens=1)])[0]
        assert counted == sent.prompt_tokens
    finally:
        backend.close()


@pytest.mark.model
def test_a_system_message_is_sent_only_when_asked_for(server: LlamaServer) -> None:
    plain = OpenAIBackend(base_url=server.url, context_length=4096)
    with_system = OpenAIBackend(base_url=server.url, context_length=4096, system="Answer in French.")
    try:
        messages = (Message("user", "Hello"),)
        # SmolLM2's template adds its own default system line when none is given, so the counts differ.
        assert with_system.count_prompt(messages) != plain.count_prompt(messages)
        assert with_system.complete([ChatRequest(messages, max_tokens=1)])[0].prompt_tokens == \
            with_system.count_prompt(messages)
    finally:
        plain.close()
        with_system.close()


@pytest.mark.model
def test_a_wrong_api_key_names_the_setting_to_fix(gguf: Path, tmp_path: Path) -> None:
    locked = LlamaServer(gguf, tmp_path / "locked.log", api_key="s3cret")
    try:
        with pytest.raises(BackendError) as refused:
            OpenAIBackend(base_url=locked.url, api_key="wrong")
        assert "API key" in refused.value.message
        assert "MEMREAD_API_KEY" in (refused.value.hint or "") and "--api-key" in (refused.value.hint or "")
        assert refused.value.exit_status == ExitStatus.BACKEND
        # MemAgent's quickstart names work too, and MEMREAD_* wins over them.
        for environ in ({"API_KEY": "s3cret"}, {"MEMREAD_API_KEY": "s3cret", "API_KEY": "wrong"}):
            opened = OpenAIBackend(environ={"URL": locked.url, **environ}, context_length=4096)
            assert opened.complete([ask("Hi", max_tokens=2)])[0].completion_tokens > 0
            opened.close()
    finally:
        locked.stop()


@pytest.mark.model
def test_a_wrong_path_says_to_check_the_base_url(server: LlamaServer) -> None:
    wrong = server.url.replace("/v1", "/api/v1")
    backend = OpenAIBackend(model="smollm2", base_url=wrong, context_length=4096, retries=0)
    try:
        assert backend.tokenizer_source == "estimate"
        with pytest.raises(BackendError) as missing:
            backend.complete([ask("Hi", max_tokens=2)])
        assert "404" in missing.value.message
        assert "--base-url" in (missing.value.hint or "")
    finally:
        backend.close()


@pytest.mark.model
def test_a_server_killed_mid_request_is_a_backend_error(gguf: Path, tmp_path: Path) -> None:
    doomed = LlamaServer(gguf, tmp_path / "doomed.log")
    backend = OpenAIBackend(base_url=doomed.url, context_length=4096, retries=1, backoff=0.05)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            backend.complete([ask("Write a very long essay about rivers.", max_tokens=2000)])
        except BaseException as error:  # noqa: B036 - the test inspects whatever escaped
            outcome.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(1.0)  # the server is generating now
    doomed.stop()
    reader.join(timeout=60)
    backend.close()
    assert len(outcome) == 1 and isinstance(outcome[0], BackendError), outcome
    assert str(doomed.port) in outcome[0].message
    assert outcome[0].hint


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["overwrite", "gated", "callback"])
def test_every_strategy_reads_a_document_through_the_server(backend: OpenAIBackend, strategy: str) -> None:
    text = "\n\n".join(
        f"Day {day}. The caravan crossed the dunes and rested by the well. "
        + ("The guide's camel was named Saffron. " if day == 3 else "")
        + "The nights were cold and the stars were bright. " * 3
        for day in range(1, 6)
    )
    chunks = list(Chunker(backend.tokenizer, 200).chunks([Segment(text, Provenance("diary.txt"))]))
    assert len(chunks) == 2
    questions = ["What was the guide's camel called?", "Where did the caravan rest?"]
    settings = LoopSettings(strategy=strategy, chunk_tokens=200, memory_tokens=32, reply_tokens=32, final_tokens=24,
                            temperature=0.0, seed=0)
    events: list[object] = []
    results = Loop(backend, questions, settings, sinks=[events.append]).run(chunks)
    answered = [e for e in events if isinstance(e, Answered)]
    assert sorted(e.lane for e in answered) == [0, 1]
    assert [e.question for e in sorted(answered, key=lambda e: e.lane)] == questions
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert steps and all(e.prompt_tokens > 0 and e.reply for e in steps)
    assert len(results) == 2
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.status for e in finished] == ["ok"]


# -- vLLM's and llama-server's routes (fakes built from their documented schemas) ----------------------------

DIALECTS = ["vllm", "llama-server"]


def routes(server: DialectServer) -> list[str]:
    return [path for path, _ in server.requests]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_token_counts_come_from_the_servers_tokenizer_and_template(dialect: str) -> None:
    with dialect_server(dialect) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        assert backend.tokenizer_source == dialect and backend.tokenizer.name == f"server:{dialect}"
        text = "The harbour master counted  the boats,\nevery morning."
        ids = backend.tokenizer.encode(text)
        assert ids == server.tokenize(text) and backend.tokenizer.count(text) == len(ids) == 8
        assert backend.tokenizer.decode(ids) == text
        # Document text is counted as text: a control string in it is not one control token.
        assert backend.tokenizer.count("a <|im_end|> b") > 3
        # A conversation costs what the server's chat path charges: its template (here with the default
        # system line it adds when there is none), and for llama-server the BOS it adds when tokenizing.
        for messages in [(Message("user", "Summarise: " + "the cat sat on the mat. " * 40),),
                         (Message("system", "Be brief."), Message("user", "Hello there"))]:
            counted = backend.count_prompt(messages)
            sent = backend.complete([ChatRequest(messages, max_tokens=4)])[0]
            assert counted == sent.prompt_tokens == len(server.prompt_ids(
                [{"role": m.role, "content": m.content} for m in messages]))
        backend.close()
    if dialect == "vllm":  # one /tokenize call with the messages, the generation prompt included
        chat_counts = [b for path, b in server.requests if path == "/tokenize" and "messages" in b]
        assert chat_counts and all(b["add_generation_prompt"] is True for b in chat_counts)
        assert all(b["add_special_tokens"] is False for path, b in server.requests
                   if path == "/tokenize" and "prompt" in b)
        assert "/apply-template" not in routes(server)
    else:  # the template rendered by the server, then tokenized as its chat path does
        assert "/apply-template" in routes(server)
        tokenized = [b for path, b in server.requests if path == "/tokenize" and "content" in b]
        assert {(b["add_special"], b["parse_special"]) for b in tokenized} == {(False, False), (True, True)}


def test_the_context_length_is_vllms_max_model_len() -> None:
    with dialect_server("vllm", max_model_len=6144) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        assert (backend.model, backend.context_length) == ("Qwen/Qwen2.5-7B-Instruct", 6144)
        assert not backend.warnings
        backend.close()
        assert OpenAIBackend(base_url=server.url, context_length=4000).context_length == 4000  # asked for


def test_the_context_length_is_llama_servers_slot_not_the_training_context() -> None:
    # -c 16384 --parallel 4: each request gets a 4,096-token slot; the GGUF was trained for 32K.
    with dialect_server("llama-server", n_ctx=16384, parallel=4, n_ctx_train=32768) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        assert backend.model == server.model_path
        assert backend.context_length == 4096 and not backend.warnings
        backend.close()


def recall_model(messages: list[dict[str, str]]) -> str:
    """Asks for a recall, then would go on writing, as a model does that is not stopped."""
    return "I need the earlier part. <recall>the cook's name</recall> And then more text."


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_stop_string_that_fired_is_read_where_the_server_says_it(dialect: str) -> None:
    with dialect_server(dialect, model_reply=recall_model) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        stopped, natural, cut = backend.complete([
            ask("go", max_tokens=100, stop=("</recall>",)),
            ask("go", max_tokens=100, stop=("<never>",)),
            ask("go", max_tokens=3, stop=("</recall>",)),
        ])
        backend.close()
    assert stopped.text == "I need the earlier part. <recall>the cook's name"
    assert stopped.finish_reason == natural.finish_reason == "stop" and cut.finish_reason == "length"
    assert natural.text.endswith("more text.") and cut.text == "I need the"
    # vLLM says which stop string fired (and a token id, not a string, for an end-of-text token); the loop
    # trusts that. llama-server does not say, and the strategies infer it from the text.
    assert backend.capabilities.names_stop_strings is (dialect == "vllm")
    assert stopped.stop_reason == ("</recall>" if dialect == "vllm" else None)
    assert natural.stop_reason is None and cut.stop_reason is None


def bare_model(messages: list[dict[str, str]]) -> str:
    """Answers bare unless its reply was begun for it, which it then goes on from."""
    return "Ada}" if messages[-1]["role"] == "assistant" else "Ada"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_vllm_continues_a_begun_reply_and_other_servers_are_asked_as_before(dialect: str) -> None:
    with dialect_server(dialect, model_reply=bare_model) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        # one request per call: a batch's requests reach the server in any order (they run concurrently)
        [begun] = backend.complete([ask("Who?", max_tokens=20, reply_start="\\boxed{")])
        [plain] = backend.complete([ask("Who?", max_tokens=20)])
        backend.close()
        bodies = [body for path, body in server.requests if path == "/v1/chat/completions"]
    vllm = dialect == "vllm"
    assert backend.capabilities.continues_replies is vllm
    assert begun.text == ("\\boxed{Ada}" if vllm else "Ada") and plain.text == "Ada"
    assert bodies[0]["messages"][-1] == ({"role": "assistant", "content": "\\boxed{"} if vllm
                                         else {"role": "user", "content": "Who?"})
    assert (bodies[0].get("continue_final_message"), bodies[0].get("add_generation_prompt")) == \
           ((True, False) if vllm else (None, None))
    assert "continue_final_message" not in bodies[1]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_server_gets_its_own_names_for_plain_sampling(dialect: str) -> None:
    with dialect_server(dialect) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        backend.complete([ask("Hi", max_tokens=4, temperature=0.7, top_p=0.95, seed=3)])
        backend.close()
    [body] = [b for path, b in server.requests if path == "/v1/chat/completions"]
    assert (body["temperature"], body["top_p"], body["seed"], body["max_tokens"]) == (0.7, 0.95, 3, 4)
    if dialect == "vllm":  # vLLM's extra sampling parameters (its generation_config would set them otherwise)
        assert (body["top_k"], body["min_p"], body["repetition_penalty"]) == (-1, 0.0, 1.0)
    else:  # llama-server's defaults: top_k 40, min_p 0.05 (see /props)
        assert (body["top_k"], body["min_p"], body["typical_p"], body["repeat_penalty"]) == (0, 0.0, 1.0, 1.0)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_prompt_over_the_servers_context_is_a_budget_error(dialect: str) -> None:
    long_prompt = "The archive holds many letters from the war. " * 200  # ~1,800 toy tokens
    with dialect_server(dialect, max_model_len=1024, n_ctx=1024) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0, context_length=16384)  # told more than it has
        with pytest.raises(BudgetError) as over:
            backend.complete([ask(long_prompt, max_tokens=64)])
        backend.close()
    assert over.value.exit_status == ExitStatus.BUDGET
    assert ("maximum context length is 1024" if dialect == "vllm" else "context size (1024 tokens)") \
        in over.value.message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_prefix_cache_hits_and_prefill_time_are_read(dialect: str) -> None:
    with dialect_server(dialect, prompt_tokens_details=True) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        shared = "Question: who was the cook? " + "The crew sailed north along the coast. " * 20
        first, second = (backend.complete([ask(shared + tail, max_tokens=4)])[0] for tail in ("One.", "Two."))
        backend.close()
    assert first.cached_prompt_tokens == 0
    assert second.cached_prompt_tokens is not None and second.cached_prompt_tokens > 100
    if dialect == "vllm":  # usage.prompt_tokens_details.cached_tokens, in whole 16-token blocks
        assert second.cached_prompt_tokens % 16 == 0 and second.prompt_seconds is None
    else:  # timings.cache_n and timings.prompt_ms
        assert second.prompt_seconds is not None and second.prompt_seconds < first.prompt_seconds  # type: ignore[operator]


def test_vllm_refusing_a_sampling_setting_says_which_and_the_range() -> None:
    with dialect_server("vllm") as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        with pytest.raises(BackendError) as refused:
            backend.complete([ask("Hi", max_tokens=4, top_p=0.0)])
        backend.close()
    assert "top_p must be in (0, 1]" in refused.value.message
    assert "--top-p" in (refused.value.hint or "")


def gated_model(messages: list[dict[str, str]]) -> str:
    """A gated reader that finds the camel's name in the chunk that has it, and answers from its memory."""
    prompt = messages[-1]["content"]
    if "Day " not in prompt:  # no chunk of the diary: the final-answer prompt
        return "The camel was called \\boxed{Saffron}."
    if "Saffron" in prompt:
        return ("<think>The chunk names the camel.</think>\n<check>yes</check>\n"
                "<update>The guide's camel was named Saffron.</update>\n<next>continue</next>")
    return "<think>Nothing about camels here.</think>\n<check>no</check>\n<next>continue</next>"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_gated_read_through_each_server(dialect: str) -> None:
    text = "\n\n".join(
        f"Day {day}. The caravan crossed the dunes and rested by the well. "
        + ("The guide's camel was named Saffron. " if day == 3 else "")
        + "The nights were cold and the stars were bright. " * 3
        for day in range(1, 7)
    )
    with dialect_server(dialect, model_reply=gated_model) as server:
        backend = OpenAIBackend(base_url=server.url, retries=0)
        chunks = list(Chunker(backend.tokenizer, 120).chunks([Segment(text, Provenance("diary.txt"))]))
        assert len(chunks) >= 3
        settings = LoopSettings(strategy="gated", chunk_tokens=120, memory_tokens=64, final_tokens=24)
        events: list[object] = []
        [result] = Loop(backend, ["What was the guide's camel called?"], settings,
                        sinks=[events.append]).run(chunks)
        backend.close()
    assert result.answer == "Saffron" and "Saffron" in result.memory
    # Chunks without the name were cut at <check>no</check>: the server saw that stop string and stopped.
    chats = [b for path, b in server.requests if path == "/v1/chat/completions" and "stop" in b]
    assert chats and all("<check>no</check>" in b["stop"] for b in chats)
    steps = [e for e in events if isinstance(e, StepFinished)]
    assert [e.memory_changed for e in steps].count(True) == 1


# -- no server, or a misbehaving one -----------------------------------------------------------------------


def test_nothing_listening_asks_whether_the_server_runs() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    with pytest.raises(BackendError) as refused:
        OpenAIBackend(base_url=url, retries=2, backoff=0.05)
    assert "cannot connect" in refused.value.message
    assert f"is the server running at {url}" in (refused.value.hint or "")
    assert time.monotonic() - started < 5


def test_a_slow_server_times_out_with_a_message_and_no_retry() -> None:
    with fake_server("slow", delay=3.0) as slow:
        backend = OpenAIBackend(base_url=slow.url, timeout=0.5, retries=2, backoff=0.05)
        with pytest.raises(BackendError) as late:
            backend.complete([ask("Hi", max_tokens=2)])
        backend.close()
        assert "did not answer within 0.5 s" in late.value.message
        assert "--timeout" in (late.value.hint or "")
        assert len(slow.chat_requests) == 1  # a retry would re-run a long generation


def test_lanes_run_concurrently_up_to_the_bound_and_keep_their_order() -> None:
    with fake_server("slow", delay=0.3) as server:
        backend = OpenAIBackend(base_url=server.url, concurrency=3, context_length=4096)
        done = backend.complete([ask(f"lane {i}", max_tokens=2) for i in range(7)])
        backend.close()
    assert [c.text for c in done] == [f"reply to lane {i}" for i in range(7)]
    assert server.peak_in_flight == 3


def test_ctrl_c_while_lanes_wait_for_the_server_exits_at_once(tmp_path: Path) -> None:
    script = tmp_path / "read.py"
    script.write_text(
        "import sys\n"
        "from memread.backends.base import ChatRequest, Message\n"
        "from memread.backends.openai_http import OpenAIBackend\n"
        "backend = OpenAIBackend(base_url=sys.argv[1], context_length=4096)\n"
        "print('reading', flush=True)\n"
        "try:\n"
        "    backend.complete([ChatRequest((Message('user', f'lane {i}'),), max_tokens=9) for i in range(3)])\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(130)\n"
    )
    with fake_server("slow", delay=30.0) as slow:
        # Default SIGINT disposition even when the suite runs as a background job (which ignores SIGINT).
        reader = subprocess.Popen([sys.executable, str(script), slow.url], stdout=subprocess.PIPE, text=True,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
        time.sleep(0.5)  # the three requests are waiting on the server now
        reader.send_signal(signal.SIGINT)
        started = time.monotonic()
        assert reader.wait(timeout=10) == 130
        assert time.monotonic() - started < 5  # not the 30 s the server would take
        assert reader.stdout.read() == "interrupted\n"


@pytest.mark.parametrize("mode", ["flaky", "busy"])
def test_overloaded_servers_are_retried_with_backoff(mode: str) -> None:
    with fake_server(mode, failures=2) as shaky:
        backend = OpenAIBackend(base_url=shaky.url, retries=2, backoff=0.01)
        assert backend.complete([ask("Hi", max_tokens=2)])[0].text == "ok"
        backend.close()
        assert len(shaky.chat_requests) == 3
    with fake_server(mode, failures=5) as down:
        backend = OpenAIBackend(base_url=down.url, retries=1, backoff=0.01)
        with pytest.raises(BackendError) as gave_up:
            backend.complete([ask("Hi", max_tokens=2)])
        backend.close()
        assert ("503" if mode == "flaky" else "429") in gave_up.value.message


def test_a_wrong_model_name_lists_the_served_models() -> None:
    with fake_server("honest") as vllm_like:
        backend = OpenAIBackend(model="Qwen/Qwen2.5-7B", base_url=vllm_like.url, retries=0)
        with pytest.raises(BackendError) as missing:
            backend.complete([ask("Hi", max_tokens=2)])
        backend.close()
    assert "404" in missing.value.message and "Qwen/Qwen2.5-7B" in missing.value.message
    assert "fake-model" in (missing.value.hint or "")


def test_a_server_that_truncates_the_prompt_is_refused() -> None:
    long_prompt = "Question: who wrote it?\n" + "The archive holds many letters from the war. " * 300
    with fake_server("truncating") as ollama_like:
        backend = OpenAIBackend(base_url=ollama_like.url, context_length=16384)
        assert backend.tokenizer_source == "estimate"
        assert any("estimate" in w for w in backend.warnings)
        with pytest.raises(BudgetError) as cut:
            backend.complete([ask(long_prompt, max_tokens=8)])
        backend.close()
    assert "truncated" in cut.value.message
    assert "OLLAMA_CONTEXT_LENGTH" in (cut.value.hint or "") and "num_ctx" in (cut.value.hint or "")
    with fake_server("honest") as honest:
        backend = OpenAIBackend(base_url=honest.url, context_length=16384)
        assert backend.complete([ask(long_prompt, max_tokens=8)])[0].text == "ok"
        # an unrecognised server gets plain OpenAI fields only: a strict endpoint rejects unknown ones
        assert set(honest.chat_requests[-1]) == {"model", "messages", "max_tokens", "temperature", "top_p",
                                                 "stream"}
        # The estimate errs on the large side: tiktoken's count plus 15 % plus room for the template.
        raw = len(long_prompt.split())
        assert backend.count_prompt((Message("user", long_prompt),)) > 1.15 * raw + 64
        backend.close()


def test_the_model_defaults_to_the_first_one_the_server_lists() -> None:
    with fake_server("honest") as one_model:
        backend = OpenAIBackend(environ={"MEMREAD_BASE_URL": one_model.url, "URL": "http://127.0.0.1:9/v1"})
        assert backend.model == "fake-model"
        assert backend.base_url == one_model.url
        backend.close()


def test_the_registry_creates_it_and_refuses_options_of_other_backends() -> None:
    with fake_server("honest") as server:
        backend = create_backend("openai", model=None, base_url=server.url, n_ctx=8192, timeout=30,
                                 concurrency=2, n_threads=None, api_key=None)
        assert isinstance(backend, OpenAIBackend)
        assert (backend.model, backend.context_length, backend.concurrency) == ("fake-model", 8192, 2)
        backend.close()
        with pytest.raises(UsageError, match="n_threads"):
            create_backend("openai", base_url=server.url, n_threads=2)


@pytest.mark.parametrize("given", ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/",
                                   "h:8000/v1"])
def test_a_base_url_means_the_same_server_with_or_without_v1(given: str) -> None:
    assert normalise_base_url(given) == ("http://h:8000/", "http://h:8000/v1")
