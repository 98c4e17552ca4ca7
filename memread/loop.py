"""The reading loop: one Loop drives any strategy over any backend, many questions in lock-step.

For every chunk the loop builds one request per active lane (question), calls ``backend.complete`` once
with the whole batch, hands each reply to the strategy, and emits events. Lanes whose exit gate closed
drop out; when no lane is left reading, the loop stops pulling chunks (so a lazy document is not read
further). At the end every lane gets one final request (batched) and an ``Answered`` event.

Events are the loop's only output: ``RunStarted`` first, ``RunFinished`` last, with status "ok",
"interrupted" (KeyboardInterrupt) or "failed" (a BackendError or anything else), after which the
exception is re-raised. Nothing else is printed or written here.

Before the first model call :meth:`Loop.check_budget` measures, with the backend's own chat template and
tokenizer, the largest prompt each question can produce (template + question + memory cap + chunk budget
[+ recalled memory]) plus the generation cap, and raises BudgetError instead of ever truncating.

Document text stays text: a backend that does not promise to tokenize message contents as plain text
(``tokenizes_text_safely``) is wrapped by :func:`memread.backends.text_guard.guard`, which breaks
control-token strings such as ``<|im_end|>`` before they are sent; the first time it does, a ``Warned``
event says so. Only the model's reply is ever parsed for decisions (tags in the document are just text).

Reproducibility: the request seed is ``settings.seed + step`` (final answers: ``seed + steps read``), so
a resumed run sends exactly the requests an uninterrupted one would have sent.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields

from memread.answer import final_answer
from memread.backends.base import Backend, ChatRequest, Completion, Message, capabilities
from memread.backends.text_guard import GuardedBackend, guard
from memread.document import Chunk
from memread.errors import BackendError, BudgetError, MemreadError, UsageError
from memread.events import (
    Answered,
    Event,
    Indexed,
    LaneExited,
    RunFinished,
    RunStarted,
    Sink,
    StepFinished,
    StepStarted,
    Warned,
)
from memread.prompts import NO_MEMORY
from memread.settings import Settings
from memread.strategies import Strategy, check_settings, create_strategy
from memread.strategies.base import State, StepPlan
from memread.tokens import Tokenizer

# Tokens allowed for BPE merges across the joins of template, question, memory and chunk.
BUDGET_MARGIN = 16
INDEX_PROGRESS_SECONDS = 0.5  # how often a strategy that indexes the whole document first says how far it is

LoopSettings = Settings  # the name the loop's callers have used; :class:`memread.settings.Settings`

# StepFinished fields the loop sets itself; a decision of the same name as another field fills that field
# (the built-in strategies' decisions also have fields of their own, for readers of older traces).
_STEP_FIELDS = {f.name for f in fields(StepFinished)} - {
    "lane", "step", "chunk", "memory_before", "prompt", "reply", "finish_reason", "memory", "memory_changed",
    "truncated", "exit", "parse_issues", "prompt_tokens", "completion_tokens", "seconds", "state", "prompt_seconds",
    "decisions", "summary", "exit_reason"}


@dataclass(frozen=True)
class LaneResult:
    """What a run concluded for one question."""

    lane: int
    question: str
    answer: str
    reply: str  # the raw final reply
    boxed: bool  # False: no \\boxed{} (or "the answer is") found; the answer is the whole reply
    memory: str  # the memory the answer was given from
    steps: int  # chunks this lane read (in this run and before a resume)
    exited_at: int | None  # the step whose exit gate stopped the lane, if any


@dataclass(frozen=True)
class BudgetLine:
    """The worst case of one kind of prompt for one question."""

    lane: int
    what: str  # "step" | "final"
    template_tokens: int  # template + question (+ system message), variable parts empty
    variable_tokens: int  # memory cap + chunk budget (+ recalled memory)
    max_tokens: int  # generation cap

    @property
    def total(self) -> int:
        return self.template_tokens + self.variable_tokens + self.max_tokens + BUDGET_MARGIN


def answer_start(backend: Backend, settings: LoopSettings) -> str:
    """What the final reply begins with: ``settings.answer_start`` on a backend that continues replies, else
    nothing (the model then boxes its answer or not, as it did before; OpenAI-compatible servers other than
    ``vllm serve`` differ in whether and how they continue a reply)."""
    return (settings.answer_start or "") if capabilities(backend).continues_replies else ""


def context_needed(settings: LoopSettings, questions: Sequence[str], tokenizer: Tokenizer, *,
                   template_tokens: int = 64) -> int:
    """The context window a run needs, for sizing a backend before it exists (e.g. llama.cpp's ``n_ctx``).

    Measures the prompts with ``tokenizer`` (the model's own, e.g. a vocab-only load) and adds
    ``template_tokens`` for the chat template's role markers (and default system line); the loop's exact
    check with the loaded backend still runs before the first call.
    """
    strategy = create_strategy(check_settings(settings), tokenizer)
    extra = template_tokens + (tokenizer.count(settings.system) if settings.system else 0)
    return max(tokenizer.count(item.prompt) + extra + item.variable_tokens + item.max_tokens + BUDGET_MARGIN
               for question in questions for item in strategy.budget(question))


@dataclass
class _Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0
    chunks_read: int = 0
    steps: dict[int, int] = field(default_factory=dict)


class Loop:
    """Reads chunks for several questions at once with one strategy over one backend.

    ``sinks`` receive every event in order. ``document`` and ``run_id`` only label RunStarted
    (``run_id`` None: a new one from :func:`memread.traces.index.new_run_id`). ``self.backend`` is ``backend``,
    guarded when it cannot keep document text plain (see the module docstring); chunk with its tokenizer.
    """

    def __init__(self, backend: Backend, questions: Sequence[str], settings: LoopSettings | None = None,
                 sinks: Iterable[Sink] = (), *, document: str = "", run_id: str | None = None,
                 strategy: Strategy | None = None) -> None:
        if not questions:
            raise UsageError("no question to answer", hint='pass a question, e.g. memread ask FILE "…"')
        self.backend = guard(backend)
        self._guard_warned = False
        self.questions = tuple(questions)
        self.settings = check_settings(settings or Settings())
        self.sinks = list(sinks)
        self.document = document
        if run_id is None:
            from memread.traces.index import new_run_id

            run_id = new_run_id()
        self.run_id = run_id
        self._budget: list[BudgetLine] | None = None  # set by a passing check_budget()
        self.strategy = strategy or create_strategy(self.settings, self.backend.tokenizer,
                                                    engine_names_stops=capabilities(backend).names_stop_strings)

    # --- budget -------------------------------------------------------------------------------------------

    def budget(self) -> list[BudgetLine]:
        """The worst-case size of every kind of prompt, per question, measured with the backend."""
        lines = []
        for lane, question in enumerate(self.questions):
            for item in self.strategy.budget(question):
                tokens = self.backend.count_prompt(self._messages(item.prompt))
                lines.append(BudgetLine(lane, item.what, tokens, item.variable_tokens, item.max_tokens))
        return lines

    def check_budget(self) -> list[BudgetLine]:
        """Raise BudgetError when a prompt could outgrow the backend's context; else return the budget."""
        lines = self.budget()
        worst = max(lines, key=lambda line: line.total)
        limit = self.backend.context_length
        if worst.total > limit:
            s = self.settings
            raise BudgetError(
                f"a {worst.what} prompt for question {worst.lane + 1} may need {worst.total} tokens "
                f"(template and question {worst.template_tokens}, memory/chunk {worst.variable_tokens}, "
                f"reply {worst.max_tokens}) but the model's context holds {limit}",
                hint=f"lower --chunk-tokens (now {self.strategy.chunk_tokens}), --memory-tokens (now {s.memory_tokens}) or "
                     f"--reply-tokens (now {worst.max_tokens if worst.what == 'step' else s.reply_tokens}), or raise "
                     f"the context size (--context-length) to at least {worst.total}")
        self._budget = lines
        return lines

    # --- the run -------------------------------------------------------------------------------------------

    def run(self, chunks: Iterable[Chunk], *, start_step: int = 0, states: dict[int, State] | None = None,
            exited: Iterable[int] = ()) -> list[LaneResult]:
        """Read ``chunks`` and answer every question.

        Resuming: chunks with ``index < start_step`` are consumed without model calls (the strategy still
        sees them through ``observe_chunk``), each lane restarts from ``states[lane]`` (the last
        ``StepFinished.state`` of that lane) and lanes in ``exited`` read nothing more. Answers are
        (re)computed for every lane.
        """
        if self._budget is None:  # the caller may have checked already (to fail before opening a trace)
            self.check_budget()
        lanes = range(len(self.questions))
        state: dict[int, State] = {lane: dict((states or {}).get(lane) or self.strategy.initial_state())
                                   for lane in lanes}
        done = set(exited) & set(lanes)
        exited_at: dict[int, int | None] = {lane: state[lane].get("exited_at") for lane in lanes}
        totals = _Totals(steps={lane: int(state[lane].get("steps", 0)) for lane in lanes})
        started = time.perf_counter()
        resumed = start_step > 0 or bool(states) or bool(done)
        self._emit(RunStarted(run_id=self.run_id, document=self.document, backend=self.backend.name,
                              model=self.backend.model, strategy=self.settings.strategy,
                              questions=self.questions, settings=self.settings.to_dict(),
                              resumed_from_step=start_step if resumed else None))
        try:
            if self.strategy.chooses_order:
                next_step = self._read_in_chosen_order(chunks, start_step, state, totals, done, exited_at)
            else:
                next_step = self._read_in_document_order(chunks, start_step, state, totals, done, exited_at)
            results = self._answer(state, totals, next_step, exited_at)
        except KeyboardInterrupt:
            self._finish("interrupted", totals, started, "interrupted")
            raise
        except BackendError as error:
            self._finish("failed", totals, started, error.message)
            raise
        except BaseException as error:
            self._finish("failed", totals, started, f"{type(error).__name__}: {error}")
            raise
        finally:
            self.strategy.close()
        self._finish("ok", totals, started, None)
        return results

    def _read_in_document_order(self, chunks: Iterable[Chunk], start_step: int, state: dict[int, State],
                                totals: _Totals, done: set[int], exited_at: dict[int, int | None]) -> int:
        """Step ``i`` reads chunk ``i``, for every lane still reading; returns the next step."""
        lanes = range(len(self.questions))
        next_step = start_step
        # Stop pulling chunks as soon as no lane reads: a lazy document is then not read any further.
        for chunk in chunks if len(done) < len(lanes) else ():
            if chunk.index < start_step:
                self.strategy.observe_chunk(chunk)
                continue
            self._step(chunk.index, chunk, [lane for lane in lanes if lane not in done], state, totals, done,
                       exited_at)
            next_step = chunk.index + 1
            totals.chunks_read += 1
            if len(done) == len(lanes):
                break
        return next_step

    def _read_in_chosen_order(self, chunks: Iterable[Chunk], start_step: int, state: dict[int, State],
                              totals: _Totals, done: set[int], exited_at: dict[int, int | None]) -> int:
        """The strategy takes in the whole document first (:meth:`Strategy.index`), then says which chunk each
        step reads and for which lanes (:meth:`Strategy.next_read`), from the lanes' states alone, so a resumed
        run, restarting from the recorded states, reads on in the same order. Returns the next step."""
        lanes = range(len(self.questions))
        self.strategy.index(self._indexing(chunks))
        step = start_step
        while len(done) < len(lanes):
            active = [lane for lane in lanes if lane not in done]
            choice = self.strategy.next_read({lane: state[lane] for lane in active}, self.questions)
            if choice is None:
                break
            self._step(step, choice.chunk, list(choice.lanes), state, totals, done, exited_at, reason=choice.reason)
            step += 1
            totals.chunks_read += 1
        return step

    def _step(self, step: int, chunk: Chunk, active: list[int], state: dict[int, State], totals: _Totals,
              done: set[int], exited_at: dict[int, int | None], *, reason: str = "") -> None:
        if chunk.tokens > self.strategy.chunk_tokens:
            raise BudgetError(f"chunk {chunk.index + 1} has {chunk.tokens} tokens, over the "
                              f"{self.strategy.chunk_tokens}-token chunk budget",
                              hint="chunk the document with the same --chunk-tokens as the loop")
        self._emit(StepStarted(step=step, chunk=chunk, lanes=tuple(active), reason=reason))
        plans = {lane: self.strategy.plan_step(lane, self.questions[lane], state[lane], chunk) for lane in active}
        seed = None if self.settings.seed is None else self.settings.seed + step
        begun = capabilities(self.backend).continues_replies
        completions, seconds = self._complete(
            [self._request(plans[lane], seed, f"lane {lane}, step {step}", plans[lane].reply_start if begun else "")
             for lane in active], totals, step)
        for lane, completion in zip(active, completions, strict=True):
            before = state[lane]
            result = self.strategy.read_reply(lane, self.questions[lane], before, chunk, completion)
            totals.steps[lane] += 1
            new_state = {**result.state, "steps": totals.steps[lane]}
            if result.exit:
                new_state["exited_at"] = step  # kept in the state so a resumed run still knows
            state[lane] = new_state
            decisions = dict(result.decisions)
            # The step's warning goes before its record: a run killed between the two then redoes the step (and
            # the warning, dropped with it on resume) instead of losing the warning for good.
            if result.truncated:
                self._emit(Warned(message=f"question {lane + 1}: the reply at chunk {chunk.index + 1} hit the "
                                          f"{plans[lane].max_tokens}-token limit; its memory may be cut off",
                                  lane=lane, step=step))
            self._emit(StepFinished(
                lane=lane, step=step, chunk=chunk, memory_before=self.strategy.memory(before),
                prompt=plans[lane].prompt, reply=completion.text, finish_reason=completion.finish_reason,
                memory=result.memory, memory_changed=result.memory_changed, truncated=result.truncated,
                exit=result.exit, parse_issues=result.parse_issues, prompt_tokens=completion.prompt_tokens,
                completion_tokens=completion.completion_tokens, seconds=completion.seconds or seconds,
                state=new_state, prompt_seconds=completion.prompt_seconds, decisions=decisions,
                summary=result.summary or self.strategy.describe(result),
                exit_reason=result.exit_reason if result.exit else None,
                steps_left=0 if result.exit else result.steps_left,
                **{name: value for name, value in decisions.items() if name in _STEP_FIELDS}))
            if result.exit:
                done.add(lane)
                exited_at[lane] = step
                self._emit(LaneExited(lane=lane, step=step, reason=result.exit_reason))
        self.strategy.observe_chunk(chunk)

    def _answer(self, state: dict[int, State], totals: _Totals, steps_read: int,
                exited_at: dict[int, int | None]) -> list[LaneResult]:
        lanes = list(range(len(self.questions)))
        # A lane the strategy answers in code ("the document does not say") makes no final call: a prompt of all
        # it kept and a reply nobody would read (benchmarks/results/answered-in-code.md).
        own = {lane: self.strategy.answered_in_code(lane, self.questions[lane], state[lane]) for lane in lanes}
        asked = [lane for lane in lanes if own[lane] is None]
        for lane in asked:
            if totals.steps.get(lane) and self.strategy.memory(state[lane]).strip() in ("", NO_MEMORY):
                # Said before the answer arrives, because nothing in the answer shows it: the model kept
                # nothing (a gate that said "no" to every chunk, replies it could not parse), so what it
                # answers comes from what it already knew, not from the document.
                self._emit(Warned(message=f"question {lane + 1}: nothing from the document made it into the memory "
                                          f"in {totals.steps[lane]} chunk(s), so the answer comes from the "
                                          "model's own knowledge, not from the text", lane=lane))
        plans = {lane: self.strategy.plan_final(lane, self.questions[lane], state[lane]) for lane in asked}
        seed = None if self.settings.seed is None else self.settings.seed + steps_read
        start = answer_start(self.backend, self.settings)
        completions, seconds = self._complete(
            [self._request(plans[lane], seed, f"lane {lane}, answer", start) for lane in asked], totals) \
            if asked else ([], 0.0)
        replies = dict(zip(asked, completions, strict=True))
        results = []
        for lane in lanes:
            completion = replies.get(lane)
            if completion is None:
                answer, boxed, reply = str(own[lane]), True, ""
                self._emit(Answered(lane=lane, question=self.questions[lane], answer=answer, reply="", boxed=True,
                                    prompt=""))
            else:
                answer, boxed = self._settled(lane, state[lane], completion, plans[lane], seconds)
                reply = completion.text
            results.append(LaneResult(lane=lane, question=self.questions[lane], answer=answer, reply=reply,
                                      boxed=boxed, memory=self.strategy.memory(state[lane]),
                                      steps=totals.steps[lane], exited_at=exited_at[lane]))
        return results

    def _settled(self, lane: int, state: State, completion: Completion, plan: StepPlan,
                 seconds: float) -> tuple[str, bool]:
        """The answer of a lane's final reply, as the strategy settles it, said in an ``Answered`` event."""
        answer, boxed = final_answer(completion.text, style=self.settings.final_prompt)
        extracted = boxed
        answer, boxed = self.strategy.settle(lane, self.questions[lane], state, answer, boxed)
        warnings: tuple[str, ...] = ()
        if not extracted:
            form = "\\boxed{}" if self.settings.final_prompt == "boxed" else '\\boxed{} or "the answer is"'
            warnings = (f"the final reply has no {form}; the whole reply is the answer",)
        elif not answer:
            warnings = ("the final \\boxed{} is empty",)
        if completion.finish_reason == "length":
            warnings += (f"the final reply hit the {plan.max_tokens}-token limit",)
        self._emit(Answered(lane=lane, question=self.questions[lane], answer=answer, reply=completion.text,
                            boxed=boxed, prompt=plan.prompt, prompt_tokens=completion.prompt_tokens,
                            completion_tokens=completion.completion_tokens,
                            seconds=completion.seconds or seconds, warnings=warnings))
        return answer, boxed

    # --- helpers ---------------------------------------------------------------------------------------

    def _messages(self, prompt: str) -> tuple[Message, ...]:
        user = Message("user", prompt)
        return (Message("system", self.settings.system), user) if self.settings.system is not None else (user,)

    def _request(self, plan: StepPlan, seed: int | None, tag: str, reply_start: str = "") -> ChatRequest:
        return ChatRequest(messages=self._messages(plan.prompt), max_tokens=plan.max_tokens, stop=plan.stop,
                           temperature=self.settings.temperature, top_p=self.settings.top_p, seed=seed, tag=tag,
                           reply_start=reply_start)

    def _complete(self, requests: list[ChatRequest], totals: _Totals, step: int | None = None
                  ) -> tuple[list[Completion], float]:
        """One backend call for the batch; returns the completions and the mean seconds per request.

        Any failure of the engine becomes a BackendError (exit 4; the trace is kept and the run resumable),
        also from a backend that raises something else (a plugin, an engine's internal error)."""
        begun = time.perf_counter()
        try:
            completions = self.backend.complete(requests)
        except (MemreadError, KeyboardInterrupt):
            raise
        except Exception as error:
            detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            raise BackendError(
                f"the {self.backend.name} backend failed: {type(error).__name__}{': ' + detail if detail else ''}",
                hint="see the engine's or plugin's log for the cause",
            ) from error
        self._note_guard(step)
        elapsed = time.perf_counter() - begun
        totals.model_seconds += elapsed
        if len(completions) != len(requests):
            raise BackendError(f"the {self.backend.name} backend returned {len(completions)} completions "
                               f"for {len(requests)} requests", hint="this is a bug in the backend")
        for completion in completions:
            totals.prompt_tokens += completion.prompt_tokens
            totals.completion_tokens += completion.completion_tokens
        return completions, elapsed / max(1, len(requests))

    def _indexing(self, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
        """``chunks``, saying how many the strategy has taken in so far (at most every
        :data:`INDEX_PROGRESS_SECONDS`, and once at the end): a 1 GB log takes minutes to index."""
        started = last = time.monotonic()
        count = tokens = 0
        for chunk in chunks:
            yield chunk
            count += 1
            tokens += chunk.tokens
            now = time.monotonic()
            if now - last >= INDEX_PROGRESS_SECONDS:
                last = now
                self._emit(Indexed(chunks=count, tokens=tokens, seconds=now - started))
        self._emit(Indexed(chunks=count, tokens=tokens, seconds=time.monotonic() - started, done=True))

    def _emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink(event)

    def _note_guard(self, step: int | None) -> None:
        """Warn once per run when the text guard broke control-token strings (the warning is in the trace)."""
        guarded = self.backend
        if self._guard_warned or not isinstance(guarded, GuardedBackend) or not guarded.found:
            return
        self._guard_warned = True
        shown = ", ".join(guarded.found[:4]) + (", …" if len(guarded.found) > 4 else "")
        self._emit(Warned(
            message=f"the text contains chat-template control strings ({shown}); the {guarded.name} backend "
                    "could read them as control tokens, so they are sent with an invisible word joiner "
                    "(U+2060) after their first character",
            step=step))

    def _finish(self, status: str, totals: _Totals, started: float, error: str | None) -> None:
        event = RunFinished(status=status, chunks_read=totals.chunks_read, prompt_tokens=totals.prompt_tokens,
                            completion_tokens=totals.completion_tokens,
                            wall_seconds=time.perf_counter() - started, model_seconds=totals.model_seconds,
                            error=error)
        if status == "ok":
            self._emit(event)
            return
        # Already failing: a sink that fails too (a full disk under the trace) must not hide the first error.
        for sink in self.sinks:
            with contextlib.suppress(Exception):
                sink(event)
