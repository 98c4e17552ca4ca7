"""The OpenAI-compatible HTTP backend: ``vllm serve``, llama.cpp's ``llama-server``, ``python -m
llama_cpp.server``, Ollama, or any hosted endpoint that speaks ``/v1/chat/completions``.

memread does not schedule GPUs itself: with this backend it drives whatever engine or fleet sits behind a URL.
The lanes of a step are sent concurrently (bounded by ``concurrency``) so a server with continuous batching
serves them together. Budgets are measured with the server's own tokenizer when it exposes a tokenize route;
otherwise tiktoken with a safety margin, and we say so. A server that silently truncates prompts (Ollama beyond
its ``num_ctx``) is detected from ``usage.prompt_tokens`` and refused.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memread.backends.base import Capabilities, ChatRequest, Completion, Message
from memread.backends.http_client import ServerClient
from memread.backends.http_tokenize import ServerTokenizer, TokenizeRoute, detect_route
from memread.errors import BackendError, BudgetError, UsageError
from memread.tokens import TiktokenTokenizer, Tokenizer

log = logging.getLogger(__name__)

__all__ = ["OpenAIBackend", "create"]

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # `vllm serve` default
DEFAULT_CONTEXT_LENGTH = 4096  # assumed when the server does not say; Ollama's default num_ctx
ESTIMATE_FACTOR = 1.15  # tiktoken vs. an unknown model tokenizer: code/CJK diverge by up to ~20 %
ESTIMATE_SLACK = 64  # chat-template tokens we cannot see without the server's tokenizer
# Servers whose defaults add samplers the papers did not use (llama_cpp.server: repeat_penalty 1.1, top_k 40,
# min_p 0.05; vLLM: the model's generation_config, e.g. Qwen2.5's repetition_penalty 1.05 and top_k 20) get
# them switched off, so temperature/top_p mean the same as in memread's in-process engines. Only servers
# recognised by their tokenize route get these fields: a strict OpenAI endpoint would reject them.
_PLAIN_SAMPLING: dict[str, dict[str, Any]] = {
    "llama_cpp.server": {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0},
    "vllm": {"top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0},  # -1: off in every vLLM (0 only in new ones)
    "llama-server": {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0},
}


class OpenAIBackend:
    """Chat completions against an OpenAI-compatible server.

    Options: ``base_url`` (with or without the trailing ``/v1``; else ``MEMREAD_BASE_URL``, else MemAgent's
    ``URL``), ``api_key`` (else ``MEMREAD_API_KEY``, else ``API_KEY``, else ``"EMPTY"``), ``timeout`` (seconds
    to wait for one reply), ``concurrency`` (requests in flight), ``retries`` (on 429/5xx/lost connections),
    ``context_length`` (else what the server reports, else 4096 with a warning), ``system`` (a system
    message put before requests that have none) and ``extra_body`` (fields added to every chat request, e.g.
    ``{"chat_template_kwargs": {"enable_thinking": False}}`` for vLLM).
    """

    name = "openai"
    # The server renders the chat template and tokenizes the result itself; llama_cpp.server (measured) and
    # others read control-token strings in a message as control tokens. The loop guards the text.
    # complete() may be called from several threads (the slots bound them together). Only vLLM says which stop
    # string ended a reply (choices[].stop_reason); that is known once the server is probed.
    capabilities = Capabilities(concurrent_calls=True)

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 900.0,
        connect_timeout: float = 10.0,
        concurrency: int = 8,
        retries: int = 2,
        backoff: float = 0.5,
        context_length: int | None = None,
        system: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        url = base_url or env.get("MEMREAD_BASE_URL") or env.get("URL") or DEFAULT_BASE_URL
        key = api_key or env.get("MEMREAD_API_KEY") or env.get("API_KEY") or "EMPTY"
        self.timeout = float(timeout)
        if not (math.isfinite(self.timeout) and self.timeout > 0):  # the socket would refuse it mid-run
            raise UsageError(f"the timeout must be a positive number of seconds, not {timeout!r}",
                             hint="e.g. --timeout 900 (the default: 15 minutes)")
        self.concurrency = max(1, int(concurrency))
        self.system = system
        self.extra_body = dict(extra_body or {})
        self.warnings: list[str] = []  # things the user should know; the CLI shows them as Warned events
        self.server = ServerClient(url, api_key=key, timeout=timeout, connect_timeout=connect_timeout,
                                   connections=self.concurrency, retries=retries, backoff=backoff)
        self.root_url, self.base_url = self.server.root_url, self.server.base_url
        self._slots = threading.BoundedSemaphore(self.concurrency)
        try:
            self._models = self.server.list_models()
            self.model = model or self._default_model()
            self.context_length = int(context_length or self._server_context_length() or 0)
            if not self.context_length:
                self.context_length = DEFAULT_CONTEXT_LENGTH
                self._warn(
                    f"the server at {self.base_url} does not report its context length; assuming "
                    f"{DEFAULT_CONTEXT_LENGTH} tokens (pass --context-length to set it)"
                )
            route = detect_route(self.server.probe, self.model)
            self._route: TokenizeRoute | None = route
            self._sampling_fields = _PLAIN_SAMPLING.get(route.server if route else "", {})
            # Only vLLM says which stop string ended a reply (choices[].stop_reason: the string, a token id
            # for an end-of-text token, or None; ChatCompletionResponseChoice in vLLM's protocol); the
            # strategies infer it for the others (llama-server's OpenAI route does not report it).
            # vLLM also continues a reply begun for the model (continue_final_message, its chat request's own
            # field); other servers differ in whether and how they do, so they are asked as before.
            vllm = route is not None and route.server == "vllm"
            self.capabilities = Capabilities(concurrent_calls=True, names_stop_strings=vllm, continues_replies=vllm)
            self._tokenizer: Tokenizer
            if route is not None:
                self._tokenizer = ServerTokenizer(self.server.post_json, route, self.model)
                self.tokenizer_source = route.server
            else:
                self._tokenizer = _EstimatingTokenizer()
                self.tokenizer_source = "estimate"
                self._warn(
                    f"the server at {self.base_url} has no tokenize route; token counts are tiktoken "
                    f"estimates (x{ESTIMATE_FACTOR} + {ESTIMATE_SLACK} margin)"
                )
        except BaseException:
            self.close()
            raise
        self._template_cost: tuple[int, int] | None = None  # measured once (llama_cpp.server)
        self._calibration = threading.Lock()

    # -- Backend protocol ------------------------------------------------------------------------------------

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """Tokens the server will see for these messages, chat template included (an upper bound when
        estimated)."""
        wire = self._wire_messages(messages)
        route = self._route
        if route is not None and route.counts_chats:
            return route.count_chat(self.server.post_json, self.model, wire)
        if route is not None:
            return self._templated_count(wire)
        return sum(self._tokenizer.count(m["content"]) for m in wire) + ESTIMATE_SLACK + 8 * len(wire)

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Send the requests concurrently (at most ``concurrency`` in flight); completions come back in order.

        Each request runs in a daemon thread: on Ctrl-C the caller gets KeyboardInterrupt at once and the
        process can exit without waiting for replies still being generated."""
        if len(requests) <= 1:
            return [self._complete_one(r) for r in requests]
        results: list[Completion | BaseException | None] = [None] * len(requests)

        def run(index: int, request: ChatRequest) -> None:
            with self._slots:
                try:
                    results[index] = self._complete_one(request)
                except BaseException as error:  # handed to the caller's thread below
                    results[index] = error

        threads = [threading.Thread(target=run, args=(i, r), daemon=True, name=f"memread-http-{i}")
                   for i, r in enumerate(requests)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if isinstance(r, Completion)]

    def close(self) -> None:
        self.server.close()

    # -- one request -----------------------------------------------------------------------------------------

    def _complete_one(self, request: ChatRequest) -> Completion:
        wire = self._wire_messages(request.messages)
        begun = request.reply_start if self.capabilities.continues_replies else ""
        if begun:
            wire = [*wire, {"role": "assistant", "content": begun}]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "stream": False,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if begun:
            body.update(continue_final_message=True, add_generation_prompt=False)
        body.update(self._sampling_fields)
        body.update(self.extra_body)
        started = time.perf_counter()
        data = self.server.post_json("v1/chat/completions", body)
        seconds = time.perf_counter() - started
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendError(
                f"the server at {self.base_url} sent a reply without choices[0].message",
                hint="is this an OpenAI-compatible /v1/chat/completions endpoint?",
            ) from exc
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        if prompt_tokens:
            self._refuse_truncation(request.messages, prompt_tokens)
        raw_finish = str(choice.get("finish_reason") or "stop")
        stop_reason = choice.get("stop_reason")  # vLLM: the stop string (or token id) that fired
        timings = data.get("timings") or {}  # llama-server reports prefill time and cache hits
        details = usage.get("prompt_tokens_details") or {}  # vLLM with --enable-prompt-tokens-details
        cached = details.get("cached_tokens", timings.get("cache_n"))
        return Completion(
            text=begun + text,  # vLLM returns what the model added (the begun part only with echo)
            finish_reason="length" if raw_finish == "length" else "stop",
            prompt_tokens=prompt_tokens,
            completion_tokens=int(usage.get("completion_tokens") or 0),
            stop_reason=stop_reason if isinstance(stop_reason, str) else None,
            seconds=seconds,
            prompt_seconds=timings["prompt_ms"] / 1000 if "prompt_ms" in timings else None,
            cached_prompt_tokens=int(cached) if cached is not None else None,
            extra={"finish_reason": raw_finish} if raw_finish not in ("stop", "length") else {},
        )

    def _wire_messages(self, messages: Sequence[Message]) -> list[dict[str, str]]:
        wire = [{"role": m.role, "content": m.content} for m in messages]
        # User-only prompts, like the papers: the model's default system line then applies, which is what
        # the RL checkpoints were trained with. A system message only when the user asked for one.
        if self.system and not (wire and wire[0]["role"] == "system"):
            wire.insert(0, {"role": "system", "content": self.system})
        return wire

    def _refuse_truncation(self, messages: Sequence[Message], reported: int) -> None:
        ours = self.count_prompt(messages)
        if self._route is not None:
            expected = ours * 0.9 - 16  # same tokenizer: only template details differ
        else:
            # Undo the safety margin, then allow for a model tokenizer more compact than cl100k.
            expected = (ours - ESTIMATE_SLACK) / ESTIMATE_FACTOR * 0.75 - 16
        if reported < expected:
            raise BudgetError(
                f"the server at {self.base_url} read only {reported} prompt tokens of about {ours} sent: "
                "it truncated the prompt",
                hint="raise the server's context window (Ollama: OLLAMA_CONTEXT_LENGTH=16384 or a Modelfile "
                "with PARAMETER num_ctx 16384; vLLM: --max-model-len; llama-server: -c) or lower "
                "--context-length to what the server holds",
            )

    def _templated_count(self, wire: list[dict[str, str]]) -> int:
        """Count for servers that tokenize text but cannot apply the chat template (llama_cpp.server): the
        template's cost is measured once with two one-token completions, with and without a system message,
        because templates such as Qwen's and SmolLM's add a default system line only when there is none."""
        with self._calibration:  # lanes count from their own threads; measure once
            if self._template_cost is None:
                self._template_cost = self._measure_template_cost()
        alone, pair = self._template_cost
        per_message = math.ceil(pair / 2)  # an upper bound for messages beyond the first pair
        contents = sum(self._tokenizer.count(m["content"]) for m in wire)
        if wire and wire[0]["role"] == "system":
            return contents + pair + max(0, len(wire) - 2) * per_message
        return contents + alone + max(0, len(wire) - 1) * per_message

    def _measure_template_cost(self) -> tuple[int, int]:
        """(template tokens around one user message, around a system + user pair)."""
        probe = "Hi"
        user_only = self._prompt_tokens([{"role": "user", "content": probe}])
        with_system = self._prompt_tokens([{"role": "system", "content": probe}, {"role": "user", "content": probe}])
        unit = self._tokenizer.count(probe)
        # Without usage in the answer, fall back to the estimate's slack: over-counting is safe.
        alone = user_only - unit if user_only else ESTIMATE_SLACK
        pair = with_system - 2 * unit if with_system else ESTIMATE_SLACK
        return max(alone, 0), max(pair, 0)

    def _prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        body = {"model": self.model, "messages": messages, "max_tokens": 1, "temperature": 0.0}
        usage = self.server.post_json("v1/chat/completions", body).get("usage") or {}
        return int(usage.get("prompt_tokens") or 0)

    # -- server discovery ------------------------------------------------------------------------------------

    def _default_model(self) -> str:
        if self._models:
            return str(self._models[0].get("id"))
        raise BackendError(
            f"no model name given and the server at {self.base_url} lists none",
            hint="pass --model with the name the server serves",
        )

    def _server_context_length(self) -> int | None:
        for entry in self._models or ():
            # vLLM: GET /v1/models lists ModelCard {id, ..., max_model_len} (its --max-model-len)
            if entry.get("id") == self.model and entry.get("max_model_len"):
                return int(entry["max_model_len"])
        # llama-server: GET /props {"default_generation_settings": {"n_ctx"}}, a slot's context (-c divided by
        # --parallel), which is what one request gets; /v1/models' meta.n_ctx_train is the model's training
        # context, not what the server runs with (tools/server/README.md)
        props = self.server.get_json_quietly("props")
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        return int(n_ctx) if n_ctx else None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.info(message)  # the CLI shows self.warnings as Warned events; logging would print them twice


class _EstimatingTokenizer:
    """tiktoken cl100k scaled up by a safety margin, for servers without a tokenize route."""

    name = f"tiktoken:cl100k_base x{ESTIMATE_FACTOR} (estimate)"

    def __init__(self) -> None:
        self._inner = TiktokenTokenizer()

    def count(self, text: str) -> int:
        return math.ceil(self._inner.count(text) * ESTIMATE_FACTOR)

    def encode(self, text: str) -> list[int]:
        return self._inner.encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._inner.decode(ids)


_OPTIONS = ("base_url", "api_key", "timeout", "connect_timeout", "concurrency", "retries", "backoff",
            "context_length", "system", "extra_body", "environ")


def create(model: str | None = None, **options: Any) -> OpenAIBackend:
    """Registry factory for ``--backend openai``. ``model`` is the server's model id (None: the first one the
    server lists). Options: base_url, api_key, timeout, connect_timeout, concurrency, retries, backoff,
    context_length (alias n_ctx), system, extra_body. Options meant for other backends must be None."""
    options.pop("pull", None)  # model download knobs of the llama.cpp backend: nothing to pull here
    options.pop("progress", None)
    if options.get("n_ctx") is not None and options.get("context_length") is None:
        options["context_length"] = options["n_ctx"]
    options.pop("n_ctx", None)
    unknown = sorted(key for key, value in options.items() if key not in _OPTIONS and value is not None)
    if unknown:
        raise UsageError(f"the openai backend does not take {', '.join(unknown)}",
                         hint="that option is for the llamacpp or vllm backend (--backend)")
    return OpenAIBackend(model, **{k: v for k, v in options.items() if v is not None})


create.capabilities = OpenAIBackend.capabilities  # type: ignore[attr-defined]
