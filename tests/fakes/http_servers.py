"""Servers for the HTTP backend's tests: the real ``python -m llama_cpp.server``, fakes of ``vllm serve`` and
llama.cpp's ``llama-server`` built from their documented schemas, and tiny misbehaving fakes."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` on loopback, started and stopped by a test."""

    def __init__(self, model: Path, log: Path, *, api_key: str | None = None, n_ctx: int = 4096,
                 n_threads: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(n_ctx),
                "--n_threads", str(n_threads), "--host", "127.0.0.1", "--port", str(self.port)]
        if api_key:
            args += ["--api_key", api_key]
        self.log = log
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(args, stdout=self._log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        self._wait_until_ready(api_key)

    def _wait_until_ready(self, api_key: str | None, timeout: float = 120.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited:\n{self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", headers=headers, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._log_file.close()


class FakeServer:
    """An OpenAI-compatible server that misbehaves on purpose.

    mode: "slow" (sleeps before answering), "truncating" (reports few prompt tokens, like Ollama past its
    num_ctx), "honest" (reports a plausible count), "flaky" (503 then OK), "busy" (429 with Retry-After then
    OK). Unknown model names get vLLM's 404. There is no tokenize route.
    """

    model = "fake-model"

    def __init__(self, mode: str, *, delay: float = 0.0, failures: int = 0) -> None:
        self.mode = mode
        self.delay = delay
        self.failures = failures
        self.chat_requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak_in_flight = 0  # most chat requests served at the same time
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._reply(200, {"object": "list", "data": [{"id": fake.model, "object": "model"}]})
                else:
                    self._reply(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._reply(404, {"detail": "Not Found"})
                    return
                with fake._lock:
                    fake.chat_requests.append(body)
                    fake.in_flight += 1
                    fake.peak_in_flight = max(fake.peak_in_flight, fake.in_flight)
                try:
                    status, answer, headers = fake.answer(body)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1
                self._reply(status, answer, headers)

            def _reply(self, status: int, answer: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                   "type": "NotFoundError", "code": 404}}, {}
        if self.mode in ("flaky", "busy") and len(self.chat_requests) <= self.failures:
            if self.mode == "busy":
                return 429, {"error": {"message": "too many requests"}}, {"retry-after": "0"}
            return 503, {"error": {"message": "overloaded"}}, {}
        if self.mode == "slow":
            time.sleep(self.delay)
        words = sum(len(m["content"].split()) for m in body["messages"])
        prompt_tokens = 50 if self.mode == "truncating" else words + 20
        reply = "ok" if self.mode != "slow" else f"reply to {body['messages'][-1]['content']}"
        return 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                         "finish_reason": "stop", "stop_reason": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1,
                      "total_tokens": prompt_tokens + 1},
        }, {}

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def fake_server(mode: str, **options: Any) -> Iterator[FakeServer]:
    server = FakeServer(mode, **options)
    try:
        yield server
    finally:
        server.stop()


# -- fakes of vLLM's and llama-server's HTTP APIs ------------------------------------------------------------
#
# Neither server can run here (vLLM needs a GPU; llama-server is a C++ binary nobody ships on PyPI), so these
# fakes speak the routes memread uses, with the request and response fields their projects document:
#
# vLLM (`vllm serve`), vllm-project/vllm:
#   POST /tokenize     vllm/entrypoints/serve/tokenize/protocol.py: TokenizeCompletionRequest {model, prompt,
#                      add_special_tokens=True, return_token_strs} | TokenizeChatRequest {model, messages,
#                      add_generation_prompt=True, add_special_tokens=False, ...} -> TokenizeResponse {count,
#                      max_model_len, tokens, token_strs}; a body with neither prompt nor messages fails
#                      validation (HTTP 400)
#   POST /detokenize   DetokenizeRequest {model, tokens} -> DetokenizeResponse {prompt}
#   GET  /v1/models    ModelCard {id, object, created, owned_by: "vllm", root, parent, max_model_len, permission}
#   POST /v1/chat/completions  ChatCompletionResponseChoice {index, message, logprobs, finish_reason,
#                      stop_reason: int | str | None ("the stop string or token id that caused the completion to
#                      stop", None for the EOS token)}; UsageInfo {prompt_tokens, completion_tokens,
#                      total_tokens, prompt_tokens_details {cached_tokens} with --enable-prompt-tokens-details}
#   errors             ErrorResponse {"error": {message, type, param, code}}; unknown model: 404 NotFoundError
#                      "The model `X` does not exist."; SamplingParams._verify_args (vllm/sampling_params.py):
#                      temperature in [0, 2], top_p in (0, 1]; a prompt + max_tokens over max_model_len: 400 "This
#                      model's maximum context length is N tokens. However, you requested ..." (_validate_input)
#   unknown routes     FastAPI's 404 {"detail": "Not Found"}
#
# llama-server, ggml-org/llama.cpp tools/server/README.md (and server.cpp for defaults the README omits):
#   POST /tokenize     {content, add_special=false, parse_special=true, with_pieces=false} -> {tokens: [ids] |
#                      [{id, piece}]}; without "content" the answer is {"tokens": []}
#   POST /detokenize   {tokens} -> {content}
#   POST /apply-template  {messages} -> {prompt}: the chat template applied, no inference
#   GET  /props        {default_generation_settings: {n_ctx (per slot: -c / --parallel), params, ...},
#                      total_slots, model_path, chat_template, build_info}
#   GET  /v1/models    {object: "list", data: [{id (the -m path, or --alias), object, created, owned_by:
#                      "llamacpp", meta: {vocab_type, n_vocab, n_ctx_train, n_embd, n_params, size}}]}
#   POST /v1/chat/completions  OpenAI's format, finish_reason "stop" | "length" and no stop_reason (which stop
#                      string fired is not said), plus "timings" {cache_n, prompt_n, prompt_ms, predicted_n,
#                      predicted_ms, ...}; the rendered prompt is tokenized with special tokens added and parsed
#   errors             {"error": {code, message, type}}; a prompt over the slot's context: 400
#                      exceed_context_size_error "request (N tokens) exceeds the available context size (M tokens),
#                      try increasing it"
#
# The model behind both is a toy: a tokenizer that cuts text into words (one token each, with the spaces before
# them), a ChatML template that adds a default system line when the conversation has none (as Qwen2.5's does),
# and a scripted "model" (a function from the messages to the text it would write); the server applies
# max_tokens and stop strings to that text token by token, as an engine does.

_SPECIALS = ("<s>", "<|im_start|>", "<|im_end|>", "<|endoftext|>")
_SPECIAL = re.compile("|".join(re.escape(t) for t in _SPECIALS))
_PIECE = re.compile(r"\s*[^\s<]+|\s+|<")
DEFAULT_SYSTEM = "You are a helpful assistant."
CHAT_TEMPLATE = (  # what /props shows; the fake renders the same thing in Python (_render)
    "{%- if messages[0]['role'] != 'system' %}<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n"
    "{%- endif %}{%- for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\\n{%- endif %}"
)


def toy_pieces(text: str, *, parse_special: bool) -> list[str]:
    """The toy tokenizer: words with their leading spaces; control strings are one token each only when
    special tokens are parsed (otherwise they are text, cut like any other)."""
    pieces: list[str] = []
    position = 0
    specials = list(_SPECIAL.finditer(text)) if parse_special else []
    for match in [*specials, None]:
        end = match.start() if match else len(text)
        pieces += _PIECE.findall(text[position:end])
        if match:
            pieces.append(match.group())
            position = match.end()
    return pieces


def _render(messages: list[dict[str, Any]], add_generation_prompt: bool, continue_final: bool = False) -> str:
    if not messages or messages[0].get("role") != "system":
        messages = [{"role": "system", "content": DEFAULT_SYSTEM}, *messages]
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    if continue_final:  # vLLM's continue_final_message: the last message stays open for the model to go on
        return text[:-len("<|im_end|>\n")]
    return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def echo_model(messages: list[dict[str, Any]]) -> str:
    """The default scripted model: it names the first words of the last message."""
    return "reply to " + " ".join(str(messages[-1]["content"]).split()[:3])


class DialectServer:
    """A fake ``vllm serve`` (dialect "vllm") or ``llama-server`` (dialect "llama-server"); see above.

    ``model_reply(messages) -> text`` scripts the model. ``requests`` records (path, body) of every request.
    vLLM: ``served_model`` is the --served-model-name, ``max_model_len`` its --max-model-len,
    ``prompt_tokens_details`` its --enable-prompt-tokens-details. llama-server: ``n_ctx`` is -c (the total,
    split across ``parallel`` slots), ``n_ctx_train`` the GGUF's training context, ``add_bos`` the GGUF's
    tokenizer.ggml.add_bos_token.
    """

    def __init__(self, dialect: str, *, model_reply: Any = echo_model, served_model: str = "Qwen/Qwen2.5-7B-Instruct",
                 max_model_len: int = 8192, prompt_tokens_details: bool = False, n_ctx: int = 8192,
                 parallel: int = 1, n_ctx_train: int = 32768, add_bos: bool = True,
                 model_path: str = "/models/qwen2.5-7b-instruct-q4_k_m.gguf") -> None:
        if dialect not in ("vllm", "llama-server"):
            raise ValueError(f"unknown dialect {dialect!r}")
        self.dialect = dialect
        self.model_reply = model_reply
        self.served_model = served_model
        self.max_model_len = max_model_len
        self.prompt_tokens_details = prompt_tokens_details
        self.n_ctx_slot = n_ctx // parallel
        self.parallel = parallel
        self.n_ctx_train = n_ctx_train
        self.add_bos = add_bos
        self.model_path = model_path
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._vocabulary: dict[str, int] = {token: i for i, token in enumerate(_SPECIALS)}
        self._last_prompt: list[int] = []  # for prefix-cache hits
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer("GET", {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}"
                self._answer("POST", json.loads(raw))

            def _answer(self, method: str, body: dict[str, Any]) -> None:
                with fake._lock:
                    fake.requests.append((self.path, body))
                    status, answer = fake.route(method, self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    # -- the toy model's tokenizer, as the server's own routes see it --------------------------------------

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        pieces = toy_pieces(text, parse_special=parse_special)
        if add_special and self.add_bos and self.dialect == "llama-server":
            pieces = ["<s>", *pieces]
        return [self._vocabulary.setdefault(piece, len(self._vocabulary)) for piece in pieces]

    def detokenize(self, ids: list[int]) -> str:
        pieces = {i: piece for piece, i in self._vocabulary.items()}
        return "".join(pieces[i] for i in ids)

    def prompt_ids(self, messages: list[dict[str, Any]], continue_final: bool = False) -> list[int]:
        """What a chat completion request costs: the template applied, then tokenized as each server does."""
        add_special = self.dialect == "llama-server"  # vLLM's chat path: add_special_tokens=False
        return self.tokenize(_render(messages, not continue_final, continue_final), add_special=add_special,
                             parse_special=True)

    # -- routes ----------------------------------------------------------------------------------------------

    def route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        vllm = self.dialect == "vllm"
        if (method, path) == ("GET", "/v1/models"):
            return 200, self._models()
        if (method, path) == ("POST", "/v1/chat/completions"):
            return self._chat(body)
        if (method, path) == ("POST", "/tokenize"):
            return self._tokenize_vllm(body) if vllm else self._tokenize_llama(body)
        if (method, path) == ("POST", "/detokenize"):
            text = self.detokenize([int(t) for t in body.get("tokens", [])])
            return 200, {"prompt": text} if vllm else {"content": text}
        if not vllm and (method, path) == ("POST", "/apply-template"):
            return 200, {"prompt": _render(body["messages"], True)}
        if not vllm and (method, path) == ("GET", "/props"):
            return 200, self._props()
        if vllm:
            return 404, {"detail": "Not Found"}
        return 404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}

    def _models(self) -> dict[str, Any]:
        if self.dialect == "vllm":
            card = {"id": self.served_model, "object": "model", "created": 1767225600, "owned_by": "vllm",
                    "root": self.served_model, "parent": None, "max_model_len": self.max_model_len,
                    "permission": []}
        else:
            card = {"id": self.model_path, "object": "model", "created": 1767225600, "owned_by": "llamacpp",
                    "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": self.n_ctx_train, "n_embd": 3584,
                             "n_params": 7615616512, "size": 4677120000}}
        return {"object": "list", "data": [card]}

    def _props(self) -> dict[str, Any]:
        params = {"n_predict": -1, "seed": 4294967295, "temperature": 0.8, "top_k": 40, "top_p": 0.95,
                  "min_p": 0.05, "typical_p": 1.0, "repeat_penalty": 1.0, "stop": [], "max_tokens": -1}
        return {"default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": self.n_ctx_slot,
                                                "speculative": False, "is_processing": False, "params": params},
                "total_slots": self.parallel, "model_path": self.model_path, "chat_template": CHAT_TEMPLATE,
                "build_info": "b7000-0000000"}

    def _tokenize_vllm(self, body: dict[str, Any]) -> tuple[int, Any]:
        if "messages" in body:
            text = _render(body["messages"], bool(body.get("add_generation_prompt", True)))
            ids = self.tokenize(text, parse_special=True)  # add_special_tokens=False: the template holds them
        elif "prompt" in body:
            # vLLM's HF tokenizers parse special tokens in text; a Qwen tokenizer adds no BOS even when asked
            ids = self.tokenize(body["prompt"], parse_special=True)
        else:
            return 400, {"error": {"message": "1 validation error: 'prompt' or 'messages' is required",
                                   "type": "BadRequestError", "param": None, "code": 400}}
        return 200, {"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids, "token_strs": None}

    def _tokenize_llama(self, body: dict[str, Any]) -> tuple[int, Any]:
        if "content" not in body:
            return 200, {"tokens": []}
        ids = self.tokenize(body["content"], add_special=bool(body.get("add_special", False)),
                            parse_special=bool(body.get("parse_special", True)))
        if body.get("with_pieces"):
            return 200, {"tokens": [{"id": i, "piece": self.detokenize([i])} for i in ids]}
        return 200, {"tokens": ids}

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any]:
        vllm = self.dialect == "vllm"
        if vllm and body.get("model") != self.served_model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                   "type": "NotFoundError", "param": "model", "code": 404}}
        temperature, top_p = float(body.get("temperature", 1.0)), float(body.get("top_p", 1.0))
        if vllm and not 0.0 <= temperature <= 2.0:
            return 400, {"error": {"message": f"temperature must be in [0, 2], got {temperature}.",
                                   "type": "BadRequestError", "param": "temperature", "code": 400}}
        if vllm and not 0.0 < top_p <= 1.0:
            return 400, {"error": {"message": f"top_p must be in (0, 1], got {top_p}.",
                                   "type": "BadRequestError", "param": "top_p", "code": 400}}
        messages = body["messages"]
        # vLLM (ChatCompletionRequest): continue_final_message continues the last, assistant, message and
        # needs add_generation_prompt false; the reply is what the model adds (the message itself only with echo)
        continuing = vllm and bool(body.get("continue_final_message"))
        if continuing and (body.get("add_generation_prompt", True) or messages[-1].get("role") != "assistant"):
            return 400, {"error": {"message": "continue_final_message requires add_generation_prompt false and a "
                                   "final assistant message", "type": "BadRequestError", "param": None, "code": 400}}
        prompt = self.prompt_ids(messages, continuing)
        max_tokens = int(body.get("max_tokens") or 16)
        if vllm and len(prompt) + max_tokens > self.max_model_len:
            return 400, {"error": {
                "message": f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                f"requested {len(prompt) + max_tokens} tokens ({len(prompt)} in the messages, {max_tokens} in "
                "the completion). Please reduce the length of the messages or completion.",
                "type": "BadRequestError", "param": None, "code": 400}}
        if not vllm and len(prompt) > self.n_ctx_slot:
            return 400, {"error": {
                "code": 400, "message": f"request ({len(prompt)} tokens) exceeds the available context size "
                f"({self.n_ctx_slot} tokens), try increasing it", "type": "exceed_context_size_error",
                "n_prompt_tokens": len(prompt), "n_ctx": self.n_ctx_slot}}
        cached = 0
        while cached < min(len(prompt), len(self._last_prompt)) and prompt[cached] == self._last_prompt[cached]:
            cached += 1
        self._last_prompt = prompt
        text, finish, stop_reason, generated = self._generate(messages, max_tokens, body.get("stop") or [])
        usage: dict[str, Any] = {"prompt_tokens": len(prompt), "completion_tokens": generated,
                                 "total_tokens": len(prompt) + generated}
        message = {"role": "assistant", "content": text}
        if vllm:
            if self.prompt_tokens_details:
                usage["prompt_tokens_details"] = {"cached_tokens": cached // 16 * 16}  # whole KV blocks
            choice = {"index": 0, "message": {**message, "tool_calls": []}, "logprobs": None,
                      "finish_reason": finish, "stop_reason": stop_reason}
            return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1767225600,
                         "model": self.served_model, "choices": [choice], "usage": usage, "prompt_logprobs": None}
        timings = {"cache_n": cached, "prompt_n": len(prompt) - cached, "prompt_ms": 2.0 * (len(prompt) - cached),
                   "prompt_per_token_ms": 2.0, "prompt_per_second": 500.0, "predicted_n": generated,
                   "predicted_ms": 20.0 * generated, "predicted_per_token_ms": 20.0, "predicted_per_second": 50.0}
        return 200, {"choices": [{"finish_reason": finish, "index": 0, "message": message}],
                     "created": 1767225600, "model": body.get("model", self.model_path),
                     "system_fingerprint": "b7000-0000000", "object": "chat.completion", "usage": usage,
                     "id": "chatcmpl-fake", "timings": timings}

    def _generate(self, messages: list[dict[str, Any]], max_tokens: int,
                  stop: list[str]) -> tuple[str, str, int | str | None, int]:
        """The scripted text, generated token by token: a stop string ends it (and is not returned), else
        max_tokens does ("length"), else the model's end of text (vLLM: stop_reason is then the token id of
        an EOS from the model's generation config, or None)."""
        text = ""
        pieces = toy_pieces(self.model_reply(messages), parse_special=False)
        for count, piece in enumerate(pieces, start=1):
            text += piece
            fired = [(text.find(s), s) for s in stop if s in text]
            if fired:
                at, string = min(fired)
                return text[:at], "stop", string, count
            if count == max_tokens:
                return text, "length", None, count
        return text, "stop", 2, len(pieces)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def dialect_server(dialect: str, **options: Any) -> Iterator[DialectServer]:
    server = DialectServer(dialect, **options)
    try:
        yield server
    finally:
        server.stop()
