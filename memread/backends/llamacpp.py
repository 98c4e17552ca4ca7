"""The llama.cpp backend: a GGUF model in this process, through llama-cpp-python.

Three things here are not what llama-cpp-python does by default, on purpose:

* **Document text is tokenized as text.** ``create_chat_completion`` renders the chat template and then
  tokenizes the whole prompt with special tokens enabled, so a chunk containing ``<|im_end|>`` would become a
  real end-of-turn token (prompt injection from the document). We render the template with placeholders,
  tokenize the template pieces with special tokens and the message contents without (see
  :mod:`memread.backends.chat_prompt`), and generate from token ids.
* **Threads = free physical cores, now.** llama.cpp defaults count logical CPUs; its threads wait for each
  other, and oversubscribing SMT siblings or busy cores made it 5-10× slower on the 2-core machines we
  measured. The count follows the machine during a run (:class:`memread.backends.threads.ThreadPolicy`):
  it is looked at again before llama.cpp calls and changed with ``llama_set_n_threads``.
* **What requests share is evaluated once, deterministically.** Prompts are evaluated in blocks cut where the
  prompt itself says and the leading blocks the KV cache already holds are reused
  (:mod:`memread.backends.prefill`): several questions over one chunk (``--layout chunk-first``) prefill
  the chunk once, and consecutive steps share the instruction, yet every reply is the one the request gets
  from an empty cache (a resumed run reaches the same memory and answer).
* **No stderr noise.** llama.cpp prints while loading even with ``verbose=False``; we point fd 2 at a
  temporary file during the load only (in the main thread) and show its tail if the load fails
  (:mod:`memread.backends.quiet`).
"""

from __future__ import annotations

import gc
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# OpenMP worker threads spin while they wait by default; when other processes share the cores that spinning
# made llama.cpp steps 5-40x slower here (measured on a busy 2-core machine). Sleeping waiters cost little
# when the machine is idle. Must be set before libggml is loaded; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import llama_cpp  # noqa: E402

from memread.backends.base import Capabilities, ChatRequest, Completion, Message
from memread.backends.chat_prompt import ChatPrompt, resolve_template
from memread.backends.llama_count import LlamaCounter
from memread.backends.prefill import SharedPrefill
from memread.backends.quiet import captured_stderr, tail
from memread.backends.threads import ThreadChange, ThreadPolicy, fixed_threads
from memread.errors import BackendError, BudgetError, UsageError
from memread.tokens import CountMemo

DEFAULT_CONTEXT = 8192  # enough for a 5,000-token chunk + 1,024-token memory + prompt + 1,024 output tokens
DEFAULT_SEED = 0  # used when a request carries no seed, so runs are reproducible unless told otherwise
MAX_THREAD_WARNINGS = 10  # thread changes told one by one in ``warnings``; then one line says they go on


# --- quiet loading (memread.backends.quiet) ----------------------------------------------------------


# What llama.cpp itself logs about a failed load ("llama_model_load: error …"), shown instead of Python's error.
_LLAMA_LOG = re.compile(r"\s*(llama|gguf|ggml|load)\w*:")


def _load_llama(path: Path, **params: Any) -> llama_cpp.Llama:
    with captured_stderr() as log:
        try:
            return llama_cpp.Llama(model_path=str(path), verbose=False, **params)
        except (ValueError, RuntimeError, OSError) as error:
            failure = str(error)
        detail = tail(log, _LLAMA_LOG) or failure
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
        metadata = llama.metadata
        self._counter = LlamaCounter(llama_cpp.llama_model_get_vocab(llama.model),
                                     pre=metadata.get("tokenizer.ggml.pre"), model=metadata.get("tokenizer.ggml.model"))
        self._counts = CountMemo(self._counter.count)

    def encode(self, text: str) -> list[int]:
        return self._counter.encode(text)

    def count(self, text: str) -> int:
        return self._counts(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``[count(text) for text in texts]``, in fewer calls into llama.cpp where the model's pre-tokenizer
        allows it (:mod:`memread.backends.llama_count`); kept for :meth:`count`, as its own counts are."""
        return self._counts.many(texts, self._counter.count_many)

    def count_joined(self, parts: Sequence[str], counts: Sequence[int]) -> int:
        """``count("".join(parts))`` given each part's count, without counting it all again where the model's
        pre-tokenizer allows it (:mod:`memread.backends.llama_count`)."""
        return self._counter.count_joined(parts, counts)

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(self._llama.detokenize(list(ids), special=False)).decode("utf-8", errors="replace")


# --- backend --------------------------------------------------------------------------------------------


class LlamaCppBackend:
    """A GGUF model run in-process by llama.cpp. One sequence: the requests of a batch run one after another.

    ``n_ctx`` is the context window (prompt + output); None means min(training context, 8192) and 0 the
    training context. ``n_threads`` fixes the thread count (as ``MEMREAD_THREADS`` does); None lets it follow
    the machine (``thread_policy``, default :class:`~memread.backends.threads.ThreadPolicy`), and every change
    is appended to ``warnings`` as it happens. ``chat_format`` overrides the GGUF's chat template: "chatml",
    "llama-3", "gemma" or a Jinja template. ``prefix_cache`` (on by default) reuses the prompt blocks the KV
    cache holds (see :mod:`memread.backends.prefill`); off, every prompt is evaluated from an empty cache in
    the same blocks, which gives the same replies, only slower. ``system`` is a system message for requests
    that have none. ``warnings`` lists anything the user should be told (a missing chat template and the
    fallback used, a thread change); it only grows, so a caller can show what was added since it last looked.
    """

    name = "llamacpp"
    # Message contents are tokenized with special tokens off (see _render_tokens): no text guard needed. The
    # context is allocated at load, so the factory sizes it from the run; models are pulled on first use. What
    # the requests of one complete() call share is evaluated once (prefix_cache on): a caller may lay prompts out
    # so that they share a long beginning (--layout chunk-first) and send them together.
    capabilities = Capabilities(names_stop_strings=True, tokenizes_text_safely=True, sizes_context=True,
                                pulls_models=True, seeded_at_load=True, continues_replies=True)

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
        prefix_cache: bool = True,
        system: str | None = None,
        thread_policy: ThreadPolicy | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.model = model_name or str(self.model_path)
        self.warnings: list[str] = []
        fixed = n_threads or fixed_threads()
        self._threads = thread_policy or ThreadPolicy(fixed=fixed)
        self.n_threads = self._threads.threads()
        self._changes_told = 0
        if self._threads.follows_the_machine and self.n_threads < self._threads.cores:
            self.warnings.append(
                f"the machine is busy ({self._threads.others or 0:g} other task(s) running on "
                f"{self._threads.cores} core(s)): starting with {self.n_threads} llama.cpp thread(s), more as "
                "cores free up; --threads or MEMREAD_THREADS fixes the number")
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
        self._prefill = SharedPrefill(self._llm, before_decode=self._follow_threads)

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
        """Run the requests one after another (llama.cpp keeps one sequence), in the order that shares the
        most prompt between neighbours; completions come back in request order. Raises BudgetError before
        running anything if any request cannot fit the context."""
        with self._lock:
            # A reply begun for the model (request.reply_start) is text after the generation prompt.
            prompts = [self.prompt_tokens(request.messages) + self._text_tokens(request.reply_start)
                       for request in requests]
            for request, prompt in zip(requests, prompts, strict=True):
                self._check_budget(request, len(prompt))  # refuse the whole batch rather than after hours of work
            completions: dict[int, Completion] = {}
            for i in self._prefill.order(prompts) if self.prefix_cache else range(len(requests)):
                completions[i] = self._complete_one(requests[i], prompts[i])
            return [completions[i] for i in range(len(requests))]

    @property
    def thread_changes(self) -> list[ThreadChange]:
        """Every change of the llama.cpp thread count so far (empty when the count is fixed)."""
        return list(self._threads.changes)

    def close(self) -> None:
        close = getattr(self._llm, "close", None)
        if close is not None:
            close()

    # -- internals --

    def _text_tokens(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self._llm.detokenize([token], special=True)).decode("utf-8", errors="replace")

    def _check_budget(self, request: ChatRequest, prompt: int) -> None:
        if prompt + request.max_tokens > self.context_length:
            raise BudgetError(
                f"prompt of {prompt:,} tokens plus {request.max_tokens:,} output tokens does not fit "
                f"the model's context of {self.context_length:,} tokens",
                hint="use smaller --chunk-tokens or --memory-tokens, or a larger context (--context-length)",
            )

    def _follow_threads(self) -> None:
        """Before each llama.cpp call: use the thread count the policy says now, and tell the user."""
        threads = self._threads.threads()
        if threads == self.n_threads:
            return
        llama_cpp.llama_set_n_threads(self._llm.ctx, threads, threads)
        self.n_threads = threads
        changes = self._threads.changes
        while self._changes_told < len(changes):
            self._changes_told += 1
            if self._changes_told <= MAX_THREAD_WARNINGS:
                self.warnings.append(changes[self._changes_told - 1].message())
            elif self._changes_told == MAX_THREAD_WARNINGS + 1:
                self.warnings.append("the llama.cpp thread count keeps changing with the machine's load; "
                                     "further changes are not listed (--threads fixes the number)")

    def _complete_one(self, request: ChatRequest, prompt: list[int]) -> Completion:
        if request.max_tokens < 1:
            return Completion(text="", finish_reason="length", prompt_tokens=len(prompt), completion_tokens=0)
        llm = self._llm
        started = time.perf_counter()
        # llama.cpp's numerics depend on how tokens were batched: the prompt is evaluated in blocks the prompt
        # alone decides, reusing only identical leading blocks, so the reply is the one this request gets
        # from an empty cache (reproducible runs, exact resumes). See memread.backends.prefill.
        try:
            cached = self._prefill.evaluate(prompt, reuse=self.prefix_cache)
        except (RuntimeError, ValueError, OSError) as error:
            raise BackendError(f"llama.cpp failed while reading the prompt: {error}",
                               hint="try again with fewer threads (MEMREAD_THREADS) or a smaller context") from None
        llm.set_seed(self.seed if request.seed is None else request.seed)
        stops: list[tuple[str | None, bytes]] = [(s, s.encode("utf-8")) for s in request.stop if s]
        stops += [(None, s.encode("utf-8")) for s in self._prompt.end_of_turn if s]
        longest = max((len(b) for _, b in stops), default=0)
        text = bytearray()
        finish, stop_reason, count = "length", None, 0
        first: float | None = None
        # top_k=0/min_p=0 turn off llama.cpp's extra samplers, so temperature/top_p mean what they mean on
        # vLLM and OpenAI-compatible servers; temperature 0 is greedy. The prompt is in the KV already:
        # generate() samples from its last logits (reset=False: no prefix matching of its own).
        tokens = llm.generate([], temp=request.temperature, top_p=request.top_p, top_k=0, min_p=0.0,
                              typical_p=1.0, repeat_penalty=1.0, reset=False)
        try:
            for token in tokens:
                if first is None:
                    first = time.perf_counter()
                self._follow_threads()  # before the next token is decoded
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
            self._prefill.forget()
            raise BackendError(f"llama.cpp failed while generating: {error}",
                               hint="try again with fewer threads (MEMREAD_THREADS) or a smaller context") from None
        finally:
            tokens.close()
        ended = time.perf_counter()
        return Completion(
            text=request.reply_start + text.decode("utf-8", errors="replace"),
            finish_reason=finish,
            prompt_tokens=len(prompt),
            completion_tokens=count,
            stop_reason=stop_reason,
            seconds=ended - started,
            prompt_seconds=(first or ended) - started,
            cached_prompt_tokens=cached,
            extra={"threads": self.n_threads},
        )


def _find_stop(text: bytearray, start: int, stops: list[tuple[str | None, bytes]]) -> tuple[int, str | None] | None:
    """The earliest stop string in ``text[start:]`` (only the tail can hold a new match)."""
    best: tuple[int, str | None] | None = None
    for label, needle in stops:
        at = text.find(needle, start)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, label)
    return best


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
