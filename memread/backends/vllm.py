"""The in-process vLLM backend (optional extra ``memread[vllm]``; needs a CUDA GPU).

One ``LLM.chat`` call per step serves every lane's request as one batch; prefix caching shares the common
prompt prefix between lanes (all of the chunk with ``--layout chunk-first``). Tensor and pipeline parallelism,
and Ray as the executor, are vLLM's own: memread only passes the settings through.

This path is not exercised on hardware in memread's CI (no GPU there); a contract test checks the calls
against a fake ``vllm`` module. It is kept small and shaped like the HTTP backend. ``vllm serve`` plus
``--backend openai`` reaches the same engine; that route is tested against a fake server speaking vLLM's
routes (tests/fakes/http_servers.py), not against a real vLLM.

vLLM logs to stdout by default, and stdout is memread's data (the answer, ``--json``): see
:func:`route_vllm_logs_to_stderr`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import IO, Any

from memread.backends.base import Capabilities, ChatRequest, Completion, Message
from memread.errors import BackendError, BudgetError, UsageError
from memread.tokens import Tokenizer

__all__ = ["VllmBackend", "create"]

DEFAULT_MAX_MODEL_LEN = 12288  # chunk 5,000 + memory 1,024 + recall 1,024 + reply 1,024 + templates, with room
# vllm/sampling_params.py, SamplingParams._verify_args: temperature in [0, 2], top_p in (0, 1] (even when greedy).
SAMPLING_HINT = "vLLM takes --temperature from 0 to 2 and --top-p above 0, up to 1 (1 turns it off)"
INSTALL_HINT = (
    "pip install 'memread[vllm]' (vLLM needs Linux and a CUDA GPU); without a GPU, use the default llamacpp "
    "backend, or run `vllm serve MODEL` on a GPU machine and pass --backend openai --base-url"
)


class VllmBackend:
    """vLLM's offline ``LLM`` engine in this process."""

    name = "vllm"
    # LLM.chat renders the template to a string and tokenizes it with the added special tokens matched
    # anywhere, document text included. The loop guards the text.
    # CompletionOutput.stop_reason names the stop string that fired. Message contents go through the chat
    # template as text, which vLLM tokenizes with special tokens on: the loop guards the text.
    capabilities = Capabilities(names_stop_strings=True, continues_replies=True)

    def __init__(
        self,
        model: str,
        *,
        context_length: int | None = None,
        tensor_parallel_size: int = 1,
        pipeline_parallel_size: int = 1,
        distributed_executor_backend: str | None = None,
        seed: int = 0,
        gpu_memory_utilization: float = 0.9,
        system: str | None = None,
    ) -> None:
        route_vllm_logs_to_stderr()  # before the import: vLLM configures its logging when imported
        try:
            import vllm
        except ImportError as error:
            raise BackendError(f"the vllm backend needs vLLM, which is not installed ({error})",
                               hint=INSTALL_HINT) from None
        route_vllm_logs_to_stderr()  # vLLM may have been imported before us, with its handler on stdout
        self.model = model
        self.system = system
        self.warnings: list[str] = []
        # vLLM reserves KV cache for max_model_len; sizing it from memread's budget instead of the model's
        # 32K-128K leaves memory for more lanes in flight.
        self.context_length = int(context_length or DEFAULT_MAX_MODEL_LEN)
        engine: dict[str, Any] = {
            "model": model,
            "tensor_parallel_size": tensor_parallel_size,
            "pipeline_parallel_size": pipeline_parallel_size,
            "max_model_len": self.context_length,
            "enable_prefix_caching": True,
            "seed": seed,
            "gpu_memory_utilization": gpu_memory_utilization,
        }
        if distributed_executor_backend:  # "ray" must be asked for; vLLM picks "mp" on one host
            engine["distributed_executor_backend"] = distributed_executor_backend
        try:
            # The engine starts its core and worker processes here; they inherit file descriptor 1, and
            # anything they print outside Python's logging (CUDA, NCCL, compilers) would land on stdout.
            with _stdout_fd_to_stderr():
                self._llm = vllm.LLM(**engine)
        except Exception as error:  # vLLM raises many types (ValueError, RuntimeError, CUDA errors)
            raise BackendError(
                f"vLLM could not start {model}: {_first_line(error)}",
                hint="check the model name and GPU memory; lower --context-length or raise "
                "gpu_memory_utilization; with --distributed-executor-backend ray, `pip install ray`",
            ) from error
        route_vllm_logs_to_stderr()  # the engine may apply vLLM's logging configuration again
        self._sampling_params = vllm.SamplingParams
        self._tokenizer = EngineTokenizer(self._llm.get_tokenizer(), model)
        self.tokenizer_source = "vllm"

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def count_prompt(self, messages: Sequence[Message]) -> int:
        """Tokens of the conversation after the model's chat template, with the generation prompt."""
        return self._tokenizer.count_chat(self._wire_messages(messages))

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One ``LLM.chat`` call for the whole batch (two when some requests begin their reply: those continue
        an assistant message, ``continue_final_message``); vLLM returns outputs in input order."""
        if not requests:
            return []
        try:
            params = [
                self._sampling_params(
                    max_tokens=r.max_tokens, temperature=r.temperature, top_p=r.top_p, seed=r.seed,
                    stop=list(r.stop) or None,
                )
                for r in requests
            ]
        except ValueError as error:  # SamplingParams checks its ranges (VLLMValidationError is a ValueError)
            raise UsageError(f"vLLM refused the sampling settings: {_first_line(error)}",
                             hint=SAMPLING_HINT) from error
        started = time.perf_counter()
        groups = [[i for i, r in enumerate(requests) if bool(r.reply_start) is begun] for begun in (False, True)]
        outputs: list[Any] = [None] * len(requests)
        try:
            for begun, group in zip((False, True), groups, strict=True):
                if not group:
                    continue
                kwargs = {"add_generation_prompt": False, "continue_final_message": True} if begun else {}
                conversations = [self._wire_messages(requests[i].messages, requests[i].reply_start) for i in group]
                done = self._llm.chat(conversations, [params[i] for i in group], use_tqdm=False, **kwargs)
                for i, output in zip(group, done, strict=True):
                    outputs[i] = output
        except ValueError as error:
            if "max" in str(error).lower() and "length" in str(error).lower():
                raise BudgetError(f"a prompt does not fit vLLM's max_model_len: {_first_line(error)}",
                                  hint="raise --context-length or lower --chunk-tokens") from error
            raise BackendError(f"vLLM failed: {_first_line(error)}") from error
        except Exception as error:
            raise BackendError(f"vLLM failed: {_first_line(error)}",
                               hint="see vLLM's log above; the trace is kept and the run can be resumed") from error
        seconds = time.perf_counter() - started
        return [_completion(output, seconds, r.reply_start) for output, r in zip(outputs, requests, strict=True)]

    def close(self) -> None:
        self._llm = None  # vLLM frees the GPU when the engine is garbage-collected

    def _wire_messages(self, messages: Sequence[Message], reply_start: str = "") -> list[dict[str, str]]:
        wire = [{"role": m.role, "content": m.content} for m in messages]
        if self.system and not (wire and wire[0]["role"] == "system"):
            wire.insert(0, {"role": "system", "content": self.system})
        if reply_start:
            wire.append({"role": "assistant", "content": reply_start})
        return wire


class EngineTokenizer:
    """The engine's Hugging Face tokenizer behind memread's Tokenizer protocol."""

    def __init__(self, hf_tokenizer: Any, model: str) -> None:
        self._tok = hf_tokenizer
        self.name = f"vllm:{model}"

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        # No BOS/EOS: chunk counts must add up to what the chunk costs inside a prompt.
        return list(self._tok.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids)))

    def count_chat(self, messages: list[dict[str, str]]) -> int:
        # Render to text first: apply_chat_template(tokenize=True) changed its return type across
        # transformers versions, the rendered string did not. The template already holds the special tokens.
        prompt = self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return len(self._tok.encode(prompt, add_special_tokens=False))


def _completion(output: Any, seconds: float, reply_start: str = "") -> Completion:
    best = output.outputs[0]
    stop_reason = getattr(best, "stop_reason", None)  # the stop string, an EOS token id, or None
    return Completion(
        text=reply_start + best.text,
        finish_reason="length" if best.finish_reason == "length" else "stop",
        prompt_tokens=len(output.prompt_token_ids or ()),
        completion_tokens=len(best.token_ids or ()),
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        seconds=seconds,  # the batch's wall time: lanes are served together
        cached_prompt_tokens=getattr(output, "num_cached_tokens", None),
        extra={"finish_reason": best.finish_reason} if best.finish_reason not in ("stop", "length") else {},
    )


def route_vllm_logs_to_stderr() -> None:
    """Keep vLLM's log lines off stdout, which holds memread's answer or ``--json`` document.

    vLLM configures its loggers with ``logging.config.dictConfig`` when ``vllm.logger`` is imported: a
    ``StreamHandler`` on the "vllm" logger whose stream is ``VLLM_LOGGING_STREAM``, by default
    ``"ext://sys.stdout"`` (vllm/logger.py ``DEFAULT_LOGGING_CONFIG``; vllm/envs.py). So:

    - ``VLLM_LOGGING_STREAM`` is set to ``ext://sys.stderr`` when unset or stdout (it is read again by the
      engine's child processes, which inherit the environment);
    - every handler of the "vllm" loggers that writes to stdout (vLLM imported before this call, or a
      ``VLLM_LOGGING_CONFIG_PATH`` config naming stdout) is pointed at stderr.

    ``VLLM_CONFIGURE_LOGGING=0`` is respected: vLLM's loggers then propagate to the root logger, whose
    last-resort handler writes to stderr. Calling this again is harmless.
    """
    if os.environ.get("VLLM_LOGGING_STREAM", "ext://sys.stdout") == "ext://sys.stdout":
        os.environ["VLLM_LOGGING_STREAM"] = "ext://sys.stderr"
    loggers = [logging.getLogger("vllm")] + [
        logger for name, logger in list(logging.root.manager.loggerDict.items())
        if name.startswith("vllm.") and isinstance(logger, logging.Logger)
    ]
    for logger in loggers:
        for handler in logger.handlers:
            if (isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
                    and _is_stdout(handler.stream)):
                handler.setStream(sys.stderr)


def _is_stdout(stream: IO[str] | None) -> bool:
    if stream is None:
        return False
    if stream is sys.stdout or stream is sys.__stdout__:
        return True
    try:
        return stream.fileno() == 1
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def _stdout_fd_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr for the duration (process-wide: only while the engine starts)."""
    saved: int | None = None
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (AttributeError, OSError, ValueError):  # no real descriptor 1 or 2 (an embedding host, closed)
        if saved is not None:
            os.close(saved)
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


_OPTIONS = ("context_length", "tensor_parallel_size", "pipeline_parallel_size", "distributed_executor_backend",
            "seed", "gpu_memory_utilization", "system")


def create(model: str | None = None, **options: Any) -> VllmBackend:
    """Registry factory for ``--backend vllm``. ``model`` is a Hugging Face repo id or a local model directory.

    Options: context_length (aliases n_ctx, max_model_len), tensor_parallel_size, pipeline_parallel_size,
    distributed_executor_backend ("mp" | "ray"), seed, gpu_memory_utilization, system. Options meant for
    other backends must be None.
    """
    options.pop("pull", None)
    options.pop("progress", None)
    for alias in ("n_ctx", "max_model_len"):
        value = options.pop(alias, None)
        if value is not None and options.get("context_length") is None:
            options["context_length"] = value
    unknown = sorted(key for key, value in options.items() if key not in _OPTIONS and value is not None)
    if unknown:
        raise UsageError(f"the vllm backend does not take {', '.join(unknown)}",
                         hint="that option is for the llamacpp or openai backend (--backend)")
    if not model:
        raise UsageError("the vllm backend needs --model",
                         hint="a Hugging Face repo id or local directory, e.g. --model Qwen/Qwen2.5-7B-Instruct")
    executor = options.get("distributed_executor_backend")
    if executor not in (None, "mp", "ray"):
        raise UsageError(f"unknown distributed executor backend {executor!r}", hint="use mp or ray")
    return VllmBackend(model, **{k: v for k, v in options.items() if v is not None})


create.capabilities = VllmBackend.capabilities  # type: ignore[attr-defined]
