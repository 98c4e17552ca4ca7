"""The llama.cpp backend: a GGUF model in this process, through llama-cpp-python.

Three things here are not what llama-cpp-python does by default, on purpose:

* **Document text is tokenized as text.** ``create_chat_completion`` renders the chat template and then
  tokenizes the whole prompt with special tokens enabled, so a chunk containing ``<|im_end|>`` would become a
  real end-of-turn token (prompt injection from the document). We render the template with placeholders,
  tokenize the template pieces with special tokens and the message contents without (see
  :mod:`memread.backends.chat_prompt`), and generate from token ids.
* **Threads = free physical cores.** llama.cpp defaults count logical CPUs; its threads spin-wait, and
  oversubscribing SMT siblings or busy cores made it 5-10× slower on the 2-core machines we measured.
* **No stderr noise.** llama.cpp prints while loading even with ``verbose=False``; we point fd 2 at a
  temporary file during the load only (in the main thread) and show its tail if the load fails.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# OpenMP worker threads spin while they wait by default; when other processes share the cores that spinning
# made llama.cpp steps 5-40x slower here (measured on a busy 2-core machine). Sleeping waiters cost little
# when the machine is idle. Must be set before libggml is loaded; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import llama_cpp  # noqa: E402

from memread.backends.base import Capabilities, ChatRequest, Completion, Message
from memread.backends.chat_prompt import ChatPrompt, resolve_template
from memread.backends.threads import default_threads, load_average, physical_cores
from memread.errors import BackendError, BudgetError, UsageError

DEFAULT_CONTEXT = 8192  # enough for a 5,000-token chunk + 1,024-token memory + prompt + 1,024 output tokens
DEFAULT_SEED = 0  # used when a request carries no seed, so runs are reproducible unless told otherwise


# --- quiet loading --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _captured_stderr() -> Iterator[Path | None]:
    """Send fd 2 to a temporary file (llama.cpp writes there from C). fd 2 is process-wide, so only the
    main thread does this; elsewhere the noise is accepted rather than hiding another thread's errors."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 at all (a daemon): nothing to protect
        yield None
        return
    handle, name = tempfile.mkstemp(prefix="memread-llama-", suffix=".log")
    try:
        os.dup2(handle, 2)
        yield Path(name)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(handle)
        with contextlib.suppress(OSError):
            os.unlink(name)


def _tail(log: Path | None, lines: int = 2) -> str:
    """The last lines llama.cpp itself logged (``llama_model_load: error …``), if any."""
    if log is None:
        return ""
    with contextlib.suppress(OSError):
        text = log.read_text(errors="replace").splitlines()
        ours = [line.strip() for line in text if re.match(r"\s*(llama|gguf|ggml|load)\w*:", line)]
        return " | ".join(ours[-lines:])
    return ""


def _load_llama(path: Path, **params: Any) -> llama_cpp.Llama:
    with _captured_stderr() as log:
        try:
            return llama_cpp.Llama(model_path=str(path), verbose=False, **params)
        except (ValueError, RuntimeError, OSError) as error:
            failure = str(error)
        detail = _tail(log) or failure
        # The half-built model's __del__ prints a traceback when collected: let that happen while fd 2 still
        # goes to the log, not later in the user's terminal.
        gc.collect()
        sys.stderr.flush()
    raise BackendError(
        f"llama.cpp could not load {path.name}: {detail}",
        hint="is it a complete GGUF file for a model llama.cpp supports? "
             "(registry models are sha256-checked: `memread models`)",
    )


# --- tokenizer ------------------------------------------------------------------------------------------


class LlamaTokenizer:
    """A GGUF model's own tokenizer (implements :class:`memread.tokens.Tokenizer`).

    ``LlamaTokenizer(path)`` loads the vocabulary only (well under a second, no weights); a loaded
    backend shares its model instead. Special-token strings in text are counted as plain text.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, llama: llama_cpp.Llama | None = None) -> None:
        if llama is None:
            if path is None:
                raise ValueError("LlamaTokenizer needs a GGUF path or a loaded Llama")
            llama = _load_llama(Path(path), vocab_only=True)
        self._llama = llama
        self.name = f"gguf:{Path(path or llama.model_path).name}"

    def encode(self, text: str) -> list[int]:
        return list(self._llama.tokenize(text.encode("utf-8", errors="replace"), add_bos=False, special=False))

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(self._llama.detokenize(list(ids), special=False)).decode("utf-8", errors="replace")


# --- backend --------------------------------------------------------------------------------------------


class LlamaCppBackend:
    """A GGUF model run in-process by llama.cpp. One sequence at a time: requests in a batch run in order.

    ``n_ctx`` is the context window (prompt + output); None means min(training context, 8192) and 0 the
    training context. ``n_threads`` defaults to :func:`default_threads`. ``chat_format`` overrides the
    GGUF's chat template: "chatml", "llama-3", "gemma" or a Jinja template. ``prefix_cache`` reuses the KV
    cache of the previous prompt's common prefix: faster when prompts share a long prefix, but replies then
    depend on what ran before (llama.cpp's numerics vary with batch shape), so it is off by default.
    ``system`` is a system message for requests that have none. ``warnings`` lists anything the user should
    be told (for example a missing chat template and the fallback used).
    """

    name = "llamacpp"
    # Message contents are tokenized with special tokens off (see _render_tokens): no text guard needed. The
    # context is allocated at load, so the factory sizes it from the run; models are pulled on first use.
    capabilities = Capabilities(names_stop_strings=True, tokenizes_text_safely=True, sizes_context=True,
                                pulls_models=True, seeded_at_load=True)

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        model_name: str | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        seed: int = DEFAULT_SEED,
        chat_format: str | None = None,
        n_batch: int = 512,
        flash_attn: bool = False,
        prefix_cache: bool = False,
        system: str | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.model = model_name or str(self.model_path)
        self.warnings: list[str] = []
        self.n_threads = n_threads or default_threads()
        if n_threads is None and not os.environ.get("MEMREAD_THREADS") and self.n_threads < physical_cores():
            self.warnings.append(f"the machine is busy (load {load_average() or 0:.1f} on {physical_cores()} "
                                 f"cores): using {self.n_threads} llama.cpp thread(s); MEMREAD_THREADS overrides")
        self.seed = seed
        self.prefix_cache = prefix_cache
        self.system = system
        training = _training_context(self.model_path)
        if n_ctx is None:
            n_ctx = min(training, DEFAULT_CONTEXT) if training else DEFAULT_CONTEXT
        elif n_ctx == 0:
            n_ctx = training or DEFAULT_CONTEXT
        if training and n_ctx > training:
            self.warnings.append(f"context {n_ctx} exceeds the model's training context {training}; "
                                 "answers may degrade past it")
        self._llm = _load_llama(
            self.model_path, n_ctx=n_ctx, n_batch=min(n_batch, n_ctx), n_threads=self.n_threads,
            n_threads_batch=self.n_threads, seed=seed, flash_attn=flash_attn,
        )
        self.context_length: int = int(self._llm.n_ctx())
        self.training_context: int | None = training or None
        template, self.chat_format, warning = resolve_template(self._llm.metadata, chat_format)
        if warning:
            self.warnings.append(warning)
        self._prompt = ChatPrompt(template, self._special_text(self._llm.token_bos()),
                                  self._special_text(self._llm.token_eos()))
        self._add_bos = self._llm.metadata.get("tokenizer.ggml.add_bos_token") == "true"
        self._tokenizer = LlamaTokenizer(self.model_path, llama=self._llm)
        self._vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        # A fallback template's end-of-turn marker may be a control token the GGUF does not mark as
        # end-of-generation; it detokenizes to nothing, so it is caught by id as well as by text.
        self._stop_ids = {ids[0] for marker in self._prompt.end_of_turn
                          if len(ids := self._llm.tokenize(marker.encode(), add_bos=False, special=True)) == 1}
        self._lock = threading.RLock()  # Llama is not thread-safe; the loop may call us from a worker
        self._prompt_cache: OrderedDict[tuple[Message, ...], list[int]] = OrderedDict()

    # -- protocol --

    @property
    def tokenizer(self) -> LlamaTokenizer:
        return self._tokenizer

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """Exact tokens of the prompt these messages become (template, BOS and generation prompt included)."""
        return len(self.prompt_tokens(messages))

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The token ids fed to the model: template pieces tokenized with special tokens, message contents
        as plain text (so control-token strings in a document stay text)."""
        key = tuple(messages)
        if self.system and not (key and key[0].role == "system"):
            # Like the other backends: a system message only when the user asked for one, so by default the
            # model's own default system line applies (what the RL-trained checkpoints saw).
            key = (Message("system", self.system), *key)
        with self._lock:
            cached = self._prompt_cache.get(key)
            if cached is None:
                cached = self._prompt_cache[key] = self._render_tokens(key)
                if len(self._prompt_cache) > 8:
                    self._prompt_cache.popitem(last=False)
            self._prompt_cache.move_to_end(key)
            return cached

    def _render_tokens(self, messages: tuple[Message, ...]) -> list[int]:
        try:
            pieces = self._prompt.render([(m.role, m.content) for m in messages])
        except Exception as error:  # a template's own raise_exception(), or a Jinja error
            raise BackendError(f"the chat template rejected the messages: {error}",
                               hint="try another chat_format (--chat-format chatml)") from None
        ids: list[int] = []
        for text, is_content in pieces:
            if text:
                ids.extend(self._llm.tokenize(text.encode("utf-8", errors="replace"), add_bos=False,
                                              special=not is_content))
        bos = self._llm.token_bos()
        if self._add_bos and bos >= 0 and ids[:1] != [bos]:
            ids.insert(0, bos)  # as llama.cpp's server does when the template does not write BOS itself
        return ids

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Run the requests one after another (llama.cpp keeps one sequence). Raises BudgetError before
        running anything if any request cannot fit the context."""
        with self._lock:
            for request in requests:  # refuse the whole batch up front rather than after hours of work
                self._check_budget(request)
            return [self._complete_one(request) for request in requests]

    def close(self) -> None:
        close = getattr(self._llm, "close", None)
        if close is not None:
            close()

    # -- internals --

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self._llm.detokenize([token], special=True)).decode("utf-8", errors="replace")

    def _check_budget(self, request: ChatRequest) -> None:
        prompt = self.count_prompt(request.messages)
        if prompt + request.max_tokens > self.context_length:
            raise BudgetError(
                f"prompt of {prompt:,} tokens plus {request.max_tokens:,} output tokens does not fit "
                f"the model's context of {self.context_length:,} tokens",
                hint="use smaller --chunk-tokens or --memory-tokens, or a larger context (--context)",
            )

    def _complete_one(self, request: ChatRequest) -> Completion:
        prompt = self.prompt_tokens(request.messages)
        if request.max_tokens < 1:
            return Completion(text="", finish_reason="length", prompt_tokens=len(prompt), completion_tokens=0)
        llm = self._llm
        if self.prefix_cache:
            cached = min(_common_prefix(llm.input_ids[: llm.n_tokens].tolist(), prompt), len(prompt) - 1)
        else:
            # llama.cpp's numerics depend on how tokens were batched: a prompt evaluated partly from the KV
            # cache can give a different greedy reply than the same prompt evaluated fresh. Starting clean
            # makes every reply a function of the request alone (reproducible runs, exact resumes).
            llm.reset()  # type: ignore[no-untyped-call]
            cached = 0
        llm.set_seed(self.seed if request.seed is None else request.seed)
        stops: list[tuple[str | None, bytes]] = [(s, s.encode("utf-8")) for s in request.stop if s]
        stops += [(None, s.encode("utf-8")) for s in self._prompt.end_of_turn if s]
        longest = max((len(b) for _, b in stops), default=0)
        text = bytearray()
        finish, stop_reason, count = "length", None, 0
        started = time.perf_counter()
        first: float | None = None
        # top_k=0/min_p=0 turn off llama.cpp's extra samplers, so temperature/top_p mean what they mean on
        # vLLM and OpenAI-compatible servers; temperature 0 is greedy.
        tokens = llm.generate(prompt, temp=request.temperature, top_p=request.top_p, top_k=0, min_p=0.0,
                              typical_p=1.0, repeat_penalty=1.0)
        try:
            for token in tokens:
                if first is None:
                    first = time.perf_counter()
                if token in self._stop_ids or llama_cpp.llama_vocab_is_eog(self._vocab, token):
                    finish = "stop"
                    break
                count += 1
                before = len(text)
                text += llm.detokenize([token])
                hit = _find_stop(text, max(0, before - longest + 1), stops)
                if hit is not None:
                    cut, stop_reason = hit
                    del text[cut:]
                    finish = "stop"
                    break
                if count >= request.max_tokens:
                    break
        except (RuntimeError, ValueError, OSError) as error:
            llm.reset()  # type: ignore[no-untyped-call]
            raise BackendError(f"llama.cpp failed while generating: {error}",
                               hint="try again with fewer threads (MEMREAD_THREADS) or a smaller context") from None
        finally:
            tokens.close()
        ended = time.perf_counter()
        return Completion(
            text=text.decode("utf-8", errors="replace"),
            finish_reason=finish,
            prompt_tokens=len(prompt),
            completion_tokens=count,
            stop_reason=stop_reason,
            seconds=ended - started,
            prompt_seconds=(first or ended) - started,
            cached_prompt_tokens=cached,
        )


def _find_stop(text: bytearray, start: int, stops: list[tuple[str | None, bytes]]) -> tuple[int, str | None] | None:
    """The earliest stop string in ``text[start:]`` (only the tail can hold a new match)."""
    best: tuple[int, str | None] | None = None
    for label, needle in stops:
        at = text.find(needle, start)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, label)
    return best


def _common_prefix(previous: Sequence[int], prompt: Sequence[int]) -> int:
    length = 0
    for a, b in zip(previous, prompt, strict=False):
        if a != b:
            break
        length += 1
    return length


def _training_context(path: Path) -> int:
    """The model's training context from the GGUF header (0 when absent), via a vocabulary-only load."""
    metadata = _load_llama(path, vocab_only=True).metadata
    value = metadata.get(f"{metadata.get('general.architecture')}.context_length", "0")
    try:
        return int(value)
    except ValueError:
        return 0


# --- factory for the registry ---------------------------------------------------------------------------

_OPTIONS = {"n_ctx", "n_threads", "seed", "chat_format", "n_batch", "flash_attn", "prefix_cache", "system"}


def create(model: str | None = None, **options: Any) -> LlamaCppBackend:
    """Registry factory: resolve ``model`` (registry name, GGUF path, None = default model; pulled on first
    use unless ``pull=False``, with ``progress`` receiving :class:`memread.models.PullProgress`) and load it.

    Options: n_ctx (alias context_length), n_threads, seed, chat_format, n_batch, flash_attn, prefix_cache,
    system, and ``needs``: a function tokenizer -> tokens the run needs, used when no context size is given
    (the context is allocated at load: at least :data:`DEFAULT_CONTEXT`, more when the run needs it, never past
    the model's training context, where the loop's budget check explains). Options meant for other backends
    must be None.
    """
    from memread import models

    pull = options.pop("pull", True)
    progress = options.pop("progress", None)
    needs = options.pop("needs", None)
    if options.get("context_length") is not None:
        options.setdefault("n_ctx", options.pop("context_length"))
    options.pop("context_length", None)
    unknown = sorted(key for key, value in options.items() if key not in _OPTIONS and value is not None)
    if unknown:
        raise UsageError(f"the llamacpp backend does not take {', '.join(unknown)}",
                         hint="that option is for the openai or vllm backend (--backend)")
    known = {key: value for key, value in options.items() if key in _OPTIONS and value is not None}
    name = model or models.default_model()
    path = models.resolve(name, pull=pull, progress=progress)
    if needs is not None and known.get("n_ctx") is None:
        size = max(DEFAULT_CONTEXT, int(needs(LlamaTokenizer(path))))
        training = _training_context(path)
        known["n_ctx"] = min(size, training) if training else size
    return LlamaCppBackend(path, model_name=name, **known)


create.capabilities = LlamaCppBackend.capabilities  # type: ignore[attr-defined]
