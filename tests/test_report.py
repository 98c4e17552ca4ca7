"""The --json result: one object, stable documented fields, validated against its schema."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
import synthetic_run

from memread.report import RESULT_SCHEMA, RunReport
from memread.traces import TraceWriter, read_trace

DOC = Path(__file__).parent.parent / "docs" / "json-output.md"


def test_a_finished_run_reports_answers_citations_and_stats():
    result = RunReport.from_events(synthetic_run.events()).result(trace_path="/tmp/x.jsonl")
    jsonschema.validate(result, RESULT_SCHEMA)
    assert result["answer"] == "12" and result["boxed"] is True
    assert [c["where"] for c in result["citations"]] == ["report.pdf p. 2", "report.pdf p. 5"]
    assert [lane["answer"] for lane in result["lanes"]] == ["12", "Ada Quist"]
    assert result["lanes"][1]["exited_at"] == 3 and result["lanes"][1]["chunks_read"] == 4
    assert result["stats"]["chunks_read"] == 5 and result["stats"]["model_seconds"] == 8.6
    assert result["warnings"] == [{"message": "lane 0: reply had no <think>", "lane": 0, "step": 2}]
    assert json.loads(json.dumps(result)) == result


def test_an_interrupted_run_still_reports_what_it_read():
    result = RunReport.from_events(synthetic_run.events(stop_after_step=1)).result()
    jsonschema.validate(result, RESULT_SCHEMA)
    assert result["status"] == "interrupted" and result["answer"] is None
    assert result["stats"]["chunks_read"] == 2 and result["trace"] is None
    assert result["lanes"][0]["memory"] == synthetic_run.MEMORIES[0][1]


def test_the_report_of_a_saved_trace_equals_the_live_one(tmp_path):
    writer = TraceWriter(tmp_path / "run.jsonl")
    live = RunReport()
    for event in synthetic_run.events():
        writer(event)
        live(event)
    writer.close()
    saved = RunReport.from_trace(read_trace(tmp_path / "run.jsonl"))
    assert saved.result() == live.result()


def test_every_field_of_the_schema_is_documented():
    documented = set(re.findall(r"`([a-z_]+)`", DOC.read_text(encoding="utf-8")))

    def names(schema):
        for name, sub in schema.get("properties", {}).items():
            yield name
            yield from names(sub)
            yield from names(sub.get("items", {}))

    missing = set(names(RESULT_SCHEMA)) - documented
    assert not missing, f"fields missing from docs/json-output.md: {sorted(missing)}"


def test_a_resumed_run_reports_the_whole_run_once(tmp_path):
    """Crash after lane 1 finished chunk 3 but not lane 2; the resumed session redoes chunk 3 for both."""
    from dataclasses import replace

    from memread.events import StepFinished

    full = synthetic_run.events()
    crash = next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2) + 1
    first = full[:crash]
    second = [replace(full[0], resumed_from_step=2)] + [e for e in full[1:] if getattr(e, "step", 2) is None
                                                        or getattr(e, "step", 2) >= 2]
    path = tmp_path / "resumed.jsonl"
    for events, resume in ((first, False), (second, True)):
        writer = TraceWriter(path, resume=resume)
        for event in events:
            writer(event)
        writer.close()

    straight = RunReport.from_events(full).result()
    # what `memread ask --resume` attaches: the trace's history, then the new session's events
    live = RunReport(history=[(0.0, event) for event in first])
    for event in second:
        live(event)
    for result in (RunReport.from_trace(read_trace(path)).result(), live.result()):
        assert result["lanes"] == straight["lanes"]
        assert result["stats"]["chunks_read"] == 5
        assert result["stats"]["prompt_tokens"] == straight["stats"]["prompt_tokens"]


def test_a_session_killed_without_a_clean_end_still_counts_its_seconds():
    """kill -9 writes no RunFinished: the session counts from its start to its last step kept (not the step
    the crash cut short, which the next session redoes), and its model seconds are those steps' calls."""
    from dataclasses import replace

    from memread.events import StepFinished

    full = synthetic_run.events()
    crash = next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2) + 1
    first = [(100.0 + 10 * (getattr(e, "step", None) or 0), e) for e in full[:crash]]  # step s ends at 100+10s
    killed = RunReport(history=first).result()
    assert killed["status"] == "interrupted"
    assert killed["stats"]["wall_seconds"] == 20.0  # lane 0's step 2 at 120 is kept while no session redoes it
    assert killed["stats"]["model_seconds"] == 1.5  # steps 0, 1, 2: two lanes in one batch, 0.5 s a step
    resumed = RunReport(history=first)
    for event in [replace(full[0], resumed_from_step=2)] + [e for e in full[1:] if getattr(e, "step", 2) is None
                                                            or getattr(e, "step", 2) >= 2]:
        resumed(event)
    stats = resumed.result()["stats"]
    assert (stats["wall_seconds"], stats["model_seconds"]) == (9.5 + 10.0, 8.6 + 1.0)  # + steps 0 and 1
    assert RunReport.from_events(event for _, event in first).result()["stats"]["wall_seconds"] is None


def test_the_report_of_a_trace_killed_and_resumed_counts_both_sessions_time(tmp_path, monkeypatch):
    """Through a real trace file: the `resumed` record marks where the second session began."""
    from dataclasses import replace

    import memread.traces.records
    from memread.events import StepFinished

    clock = iter(range(100, 10_000, 5))  # every record 5 s after the one before
    monkeypatch.setattr(memread.traces.records.time, "time", lambda: float(next(clock)))
    full = synthetic_run.events()
    crash = next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2) + 1
    path = tmp_path / "killed.jsonl"
    writer = TraceWriter(path)
    for event in full[:crash]:
        writer(event)
    writer.close()  # no run_finished: as kill -9 leaves it
    trace = read_trace(path)
    last_kept = max(r["t"] for r in trace.records if r["type"] == "step_finished" and r["step"] < 2)
    writer = TraceWriter(path, resume=True)
    for event in [replace(full[0], resumed_from_step=2)] + [e for e in full[1:] if getattr(e, "step", 2) is None
                                                            or getattr(e, "step", 2) >= 2]:
        writer(event)
    writer.close()
    stats = RunReport.from_trace(read_trace(path)).result()["stats"]
    assert stats["wall_seconds"] == last_kept - trace.header["t"] + 9.5
    assert stats["model_seconds"] == 8.6 + 1.0


def test_the_summary_line_of_a_resumed_run_counts_the_whole_run_once():
    """The line printed at the end of `memread resume` says the whole run's tokens and time (RunFinished has
    its last session's), counting the step the crash cut short once."""
    from dataclasses import replace

    from memread.cli.viewstate import ViewState
    from memread.cli.viewtext import stats_line
    from memread.events import RunFinished, StepFinished

    full = synthetic_run.events()
    straight = ViewState(total=5)
    for at, event in enumerate(full):
        straight.apply(event, float(at))
    crash = next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2) + 1
    state = ViewState(total=5)
    for event in full[:crash]:  # as `memread resume` gives the view the trace: step s ends at 100 + 10 s
        state.apply(event, 100.0 + 10 * (getattr(event, "step", None) or 0))
    second = [replace(full[0], resumed_from_step=2)] + [e for e in full[1:] if getattr(e, "step", 2) is None
                                                        or getattr(e, "step", 2) >= 2]
    for at, event in enumerate(second):
        state.apply(event, 200.0 + at)
    assert isinstance(second[-1], RunFinished) and second[-1].wall_seconds == 9.5
    assert (state.prompt_tokens, state.completion_tokens) == (straight.prompt_tokens, straight.completion_tokens)
    assert stats_line(state) == (f"5 chunks · {straight.prompt_tokens:,} prompt + {straight.completion_tokens}"
                                 " generated tokens · 20s (10s in the model) in 2 sessions")  # 9.5 + 10 s, 8.6 + 1
    assert stats_line(straight).endswith(" · 10s (9s in the model)")


def test_the_summary_line_counts_a_session_ended_by_ctrl_c_as_the_json_stats_do():
    """A session Ctrl-C ended wrote its own wall time (until the Ctrl-C, not its last step): `memread resume`'s
    closing line and the --json stats of the same trace say the same seconds."""
    from dataclasses import replace

    from memread.cli.environment import Environment
    from memread.cli.progress import PlainProgress
    from memread.cli.viewtext import stats_line
    from memread.events import RunFinished, StepFinished

    full = synthetic_run.events()
    crash = next(i for i, e in enumerate(full) if isinstance(e, StepFinished) and e.step == 2) + 1
    stopped = RunFinished(status="interrupted", chunks_read=2, prompt_tokens=0, completion_tokens=0,
                          wall_seconds=47.0, model_seconds=3.4)  # Ctrl-C 27 s after step 1's end at 120
    history = [(100.0 + 10 * (getattr(e, "step", None) or 0), e) for e in full[:crash]] + [(147.0, stopped)]
    second = [replace(full[0], resumed_from_step=2)] + [e for e in full[1:] if getattr(e, "step", 2) is None
                                                        or getattr(e, "step", 2) >= 2]
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO(), stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=False, environ={}, columns=100)
    view = PlainProgress(env, total=5, quiet=True, history=history, clock=lambda: 300.0)
    report = RunReport(history=history)
    for event in second:
        view(event)
        report(event)
    stats = report.result()["stats"]
    assert (stats["wall_seconds"], stats["model_seconds"]) == (47.0 + 9.5, 3.4 + 8.6)
    assert stats_line(view.state).endswith(" · 56s (12s in the model) in 2 sessions")


@pytest.mark.model
@pytest.mark.usefixtures("reuse_loaded_models")
def test_memread_ask_json_on_a_real_model_prints_one_valid_object(smollm2_path, tmp_path):
    """`memread ask --json` in a pipe: stdout is exactly one JSON object of the documented shape; stderr
    has plain progress lines and no control codes; the trace it names is private and listed."""
    import io
    import stat

    from memread.cli.app import main
    from memread.cli.environment import Environment, use

    report = (Path(__file__).parent.parent / "docs" / "sample" / "harbour-report.md").read_text()
    sample = tmp_path / "harbour-report.md"
    sample.write_text(report[: report.index("\n\n", 1800)])  # its first half, 476 tokens: two chunks of 300
    env = Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO(), stdin_isatty=False,
                      stdout_isatty=False, stderr_isatty=False, environ={"TERM": "xterm"})
    use(env)
    try:
        main(["ask", str(sample), "How many days was the Widow's Pier closed?", "--model", str(smollm2_path),
              "--threads", "1", "--chunk-tokens", "300", "--memory-tokens", "48", "--final-tokens", "32", "--json"])
    except SystemExit as exit_:
        assert not exit_.code, env.stderr.getvalue()
    finally:
        use(None)
    result = json.loads(env.stdout.getvalue())
    jsonschema.validate(result, RESULT_SCHEMA)
    assert result["status"] == "ok" and result["stats"]["chunks_read"] >= 2
    assert result["lanes"][0]["memory"] and result["stats"]["wall_seconds"] > 0
    trace = Path(result["trace"])
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert read_trace(trace).answers()[0].answer == result["answer"]
    from memread.traces import list_runs

    assert [(run.run_id, run.status) for run in list_runs()] == [(result["run_id"], "ok")]
    err = env.stderr.getvalue()
    assert "\x1b" not in err and "chunks · " in err
