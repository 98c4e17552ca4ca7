"""The options that ``ask`` and ``bench`` share, each defined once (as sqlite-utils does): the same flag means
the same thing, with the same help and the same limits, on every command that takes it.

The backend and reading options both commands take are the fields of :class:`SharedOptions`, declared once
here; a command takes them all with the :func:`shared_options` decorator and one ``shared:
options.SharedOptions`` parameter, and turns them into the library's arguments with
:meth:`SharedOptions.backend_options` and :meth:`SharedOptions.loop_settings`. An option only some commands
take is declared here as a type (``json_output: options.Json = False``).

Module level imports only typer and the standard library (shell completion imports this on every TAB).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from memread import settings as defaults

BACKEND = "Backend options"
READING = "Reading"
OUTPUT = "Output and traces"

# --- backend ---------------------------------------------------------------------------------------------------
Model = Annotated[str | None, typer.Option(
    "--model", "-m", envvar="MEMREAD_MODEL", rich_help_panel=BACKEND,
    help="Registry name (see `memread models`) or GGUF path; for --backend openai/vllm the served model id.",
)]
Backend = Annotated[str | None, typer.Option(
    "--backend", "-b", envvar="MEMREAD_BACKEND", rich_help_panel=BACKEND,
    help="llamacpp (default, in-process GGUF), openai (any OpenAI-compatible server), vllm (in-process, GPU).",
)]
BaseUrl = Annotated[str | None, typer.Option(
    "--base-url", rich_help_panel=BACKEND,
    help="Server URL for --backend openai (default: $MEMREAD_BASE_URL, then $URL).",
)]
ApiKey = Annotated[str | None, typer.Option(
    "--api-key", rich_help_panel=BACKEND,
    help="API key for --backend openai (default: $MEMREAD_API_KEY, then $API_KEY).",
)]
Timeout = Annotated[float | None, typer.Option(
    "--timeout", rich_help_panel=BACKEND, help="Seconds to wait for one reply (--backend openai).",
)]
Concurrency = Annotated[int | None, typer.Option(
    "--concurrency", min=1, rich_help_panel=BACKEND, help="Requests in flight at once (--backend openai).",
)]
ContextLength = Annotated[int | None, typer.Option(
    "--context-length", "--n-ctx", min=0, rich_help_panel=BACKEND,
    help="Model context window in tokens (llamacpp: allocated, 0 = the model's training context; "
    "openai/vllm: max model length).",
)]
# No envvar: MEMREAD_THREADS is read by the llama.cpp backend itself, so setting it does not turn into an
# option the openai/vllm backends must refuse.
Threads = Annotated[int | None, typer.Option(
    "--threads", min=1, rich_help_panel=BACKEND,
    help="CPU threads for llama.cpp (default: $MEMREAD_THREADS, else the physical cores).",
)]
TensorParallelSize = Annotated[int | None, typer.Option(
    "--tensor-parallel-size", min=1, rich_help_panel=BACKEND, help="GPUs per model (--backend vllm).",
)]
PipelineParallelSize = Annotated[int | None, typer.Option(
    "--pipeline-parallel-size", min=1, rich_help_panel=BACKEND, help="Pipeline stages (--backend vllm).",
)]
DistributedExecutorBackend = Annotated[str | None, typer.Option(
    "--distributed-executor-backend", rich_help_panel=BACKEND, help="mp or ray (--backend vllm).",
)]
System = Annotated[str | None, typer.Option(
    "--system", rich_help_panel=BACKEND,
    help="A system message (default: none, like the papers; the chat template's default applies).",
)]

# --- reading ---------------------------------------------------------------------------------------------------
ChunkTokens = Annotated[int | None, typer.Option(
    "--chunk-tokens", min=16, rich_help_panel=READING, show_default=False,
    help="Tokens of document per step (default: the strategy's; 5,000 for overwrite, gated and callback).",
)]
MemoryTokens = Annotated[int, typer.Option(
    "--memory-tokens", min=16, rich_help_panel=READING,
    help="Memory cap. overwrite, gated: the generation limit of a memory update (gated: unless --reply-tokens is "
    "set); evidence: the size of the evidence quoted word for word (when full, the entries sharing the fewest words "
    "with the question and the rest are dropped); callback: --reply-tokens bounds it instead.",
)]
ReplyTokens = Annotated[int | None, typer.Option(
    "--reply-tokens", min=16, rich_help_panel=READING,
    help="gated/callback: generation limit of a step (thinking + tags + memory); default: gated --memory-tokens, "
    "callback 2048 (ReMemR1's).",
)]
FinalTokens = Annotated[int, typer.Option(
    "--final-tokens", min=16, rich_help_panel=READING, help="Generation limit of the final answer.",
)]
Temperature = Annotated[float, typer.Option(
    "--temperature", min=0.0, rich_help_panel=READING, help="Sampling temperature (0: greedy).",
)]
TopP = Annotated[float, typer.Option(
    "--top-p", min=0.0, max=1.0, rich_help_panel=READING, help="Nucleus sampling threshold.",
)]
Seed = Annotated[int, typer.Option("--seed", rich_help_panel=READING, help="Sampling seed: same seed, same run.")]
FinalPrompt = Annotated[str, typer.Option(
    "--final-prompt", rich_help_panel=READING,
    help="boxed (\\boxed{} answer, as trained) or therefore (\"Therefore, the answer is\", MemAgent's eval).",
)]
AnswerStart = Annotated[str | None, typer.Option(
    "--answer-start", rich_help_panel=READING, show_default=False, metavar="TEXT",
    help="The final reply begins with TEXT and the model goes on from it (default \\boxed{ with the boxed final "
    "prompt, so the answer is boxed; llama.cpp, vLLM, vllm serve). '' lets the model begin (e.g. a model that "
    "thinks first).",
)]
# The built-in strategies' own settings (Settings.options). None when not given: the strategy's default then
# applies, and a strategy that has no such option is not asked to take one.
ExitGate = Annotated[bool | None, typer.Option(
    "--exit-gate/--no-exit-gate", rich_help_panel=READING, show_default=False,
    help="gated: stop reading when the model says <next>end</next>; evidence: stop once more reading adds no "
    "evidence (default on). Turn off for 'list all X' questions.",
)]
StopOnCheckNo = Annotated[bool | None, typer.Option(
    "--stop-on-check-no/--full-replies", rich_help_panel=READING, show_default=False,
    help="gated: stop generating at <check>no</check> (the rest would be discarded; default on).",
)]
RecallFrom = Annotated[str | None, typer.Option(
    "--recall-from", rich_help_panel=READING, show_default=False,
    help="callback: search earlier memories (default), or also the text already read (chunks).",
)]
RecallTokens = Annotated[int | None, typer.Option(
    "--recall-tokens", min=16, rich_help_panel=READING, show_default=False,
    help="callback with --recall-from chunks: size of a recalled passage (default 512).",
)]
MaxRead = Annotated[float | None, typer.Option(
    "--max-read", min=0.0, max=1.0, rich_help_panel=READING, show_default=False,
    help="evidence: the share of the chunks a question reads at most, and at least one chunk (e.g. 0.3; 0 reads "
    "one; default 1).",
)]
StrategyOption = Annotated[list[str] | None, typer.Option(
    "--option", "-o", rich_help_panel=READING, metavar="NAME=VALUE",
    help="A setting of the chosen strategy, e.g. -o memory=update (callback); repeat for several. "
    "`memread strategies` lists each strategy's options.",
)]
Layout = Annotated[str | None, typer.Option(
    "--layout", rich_help_panel=READING, show_default=False,
    help="question-first (the papers') or chunk-first (shares the chunk's prefill across questions). Default: "
    "`ask` puts the chunk first for several questions to a model not trained for a strategy, the papers' order "
    "otherwise; `bench` the papers' order.",
)]

# --- output ----------------------------------------------------------------------------------------------------
Json = Annotated[bool, typer.Option("--json", rich_help_panel=OUTPUT, help="Print one JSON object instead of text.")]
Quiet = Annotated[bool, typer.Option("--quiet", rich_help_panel=OUTPUT, help="No progress on stderr, warnings only.")]
Progress = Annotated[str, typer.Option(
    "--progress", rich_help_panel=OUTPUT,
    help="auto (live view on a terminal, plain lines otherwise), live, plain or none.",
)]

# Parameter name -> the backend factory's keyword (None when the value is not given).
_BACKEND_KEYWORDS = {
    "base_url": "base_url",
    "api_key": "api_key",
    "timeout": "timeout",
    "concurrency": "concurrency",
    "context_length": "context_length",
    "threads": "n_threads",
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "distributed_executor_backend": "distributed_executor_backend",
}
# Parameters that are Settings fields of the same name.
_SETTINGS_FIELDS = (
    "chunk_tokens", "memory_tokens", "reply_tokens", "final_tokens", "temperature", "top_p", "seed",
    "final_prompt", "answer_start", "layout", "system",
)
# Parameters that are options of the built-in strategies (Settings.options), given when not None.
_STRATEGY_OPTIONS = ("exit_gate", "stop_on_check_no", "recall_from", "recall_tokens", "max_read")


@dataclasses.dataclass(frozen=True)
class SharedOptions:
    """The backend and reading options ``ask`` and ``bench`` both take: each field is one option (its type
    carries the flag, the help and the limits; its default is the option's). ``--help`` lists them where the
    command's ``shared`` parameter stands, in this order."""

    # backend
    model: Model = None
    backend: Backend = None
    base_url: BaseUrl = None
    api_key: ApiKey = None
    timeout: Timeout = None
    concurrency: Concurrency = None
    context_length: ContextLength = None
    threads: Threads = None
    tensor_parallel_size: TensorParallelSize = None
    pipeline_parallel_size: PipelineParallelSize = None
    distributed_executor_backend: DistributedExecutorBackend = None
    system: System = None
    # reading
    chunk_tokens: ChunkTokens = None
    memory_tokens: MemoryTokens = defaults.MEMORY_TOKENS
    reply_tokens: ReplyTokens = None
    final_tokens: FinalTokens = defaults.FINAL_TOKENS
    temperature: Temperature = defaults.TEMPERATURE
    top_p: TopP = defaults.TOP_P
    seed: Seed = defaults.SEED
    final_prompt: FinalPrompt = defaults.FINAL_PROMPT
    answer_start: AnswerStart = None
    exit_gate: ExitGate = None
    stop_on_check_no: StopOnCheckNo = None
    recall_from: RecallFrom = None
    recall_tokens: RecallTokens = None
    max_read: MaxRead = None
    option: StrategyOption = None
    layout: Layout = None

    def params(self) -> dict[str, Any]:
        """The options by parameter name, as Click parsed them."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def backend_options(self) -> dict[str, Any]:
        """The backend factory's keyword arguments (see :func:`backend_options`)."""
        return backend_options(self.params())

    def loop_settings(self) -> dict[str, Any]:
        """The :class:`~memread.settings.Settings` fields these options set (see :func:`loop_settings`)."""
        return loop_settings(self.params())


SHARED_DEFAULTS = SharedOptions()


def shared_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command every :class:`SharedOptions` option: in its signature (what Typer reads), its ``shared``
    parameter becomes one parameter per option, in place, so ``--help`` lists them there; when it runs, the
    parsed values reach it gathered in one ``shared`` value."""
    own = inspect.signature(command, eval_str=True)
    if "shared" not in own.parameters:
        raise TypeError(f"{command.__name__} has no `shared: SharedOptions` parameter to put the options in")
    hints = typing.get_type_hints(SharedOptions, include_extras=True)
    fields = dataclasses.fields(SharedOptions)
    expanded: list[inspect.Parameter] = []
    for parameter in own.parameters.values():
        if parameter.name != "shared":
            expanded.append(parameter)
            continue
        expanded.extend(inspect.Parameter(field.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                          default=field.default, annotation=hints[field.name])
                        for field in fields)

    @functools.wraps(command)
    def with_shared_options(*args: Any, **kwargs: Any) -> Any:
        given = {field.name: kwargs.pop(field.name) for field in fields if field.name in kwargs}
        return command(*args, shared=SharedOptions(**given), **kwargs)

    signature = own.replace(parameters=expanded)
    with_shared_options.__signature__ = signature  # type: ignore[attr-defined]
    with_shared_options.__annotations__ = {
        **{parameter.name: parameter.annotation for parameter in expanded},
        "return": signature.return_annotation,
    }
    return with_shared_options


def backend_options(params: dict[str, Any]) -> dict[str, Any]:
    """The backend factory's keyword arguments from parsed parameters by name (:meth:`SharedOptions.params`)."""
    return {keyword: params.get(name) for name, keyword in _BACKEND_KEYWORDS.items()}


def loop_settings(params: dict[str, Any]) -> dict[str, Any]:
    """The :class:`~memread.settings.Settings` fields a command's parsed parameters set (all but strategy):
    the shared ones, and ``options`` from the built-in strategies' flags and ``--option NAME=VALUE``."""
    from memread.settings import parse_option

    chosen = {name: params[name] for name in _SETTINGS_FIELDS if name in params}
    if chosen.get("layout") is None:  # the Settings default, or the one `ask` chooses (settings.default_layout)
        chosen.pop("layout", None)
    strategy_options = {name: params[name] for name in _STRATEGY_OPTIONS if params.get(name) is not None}
    for text in params.get("option") or []:
        name, value = parse_option(text)
        strategy_options[name] = value
    chosen["options"] = strategy_options
    return chosen
