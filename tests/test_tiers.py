"""The fast tier loads no model: under ``-m fast``, a test that is not marked ``model`` and still sets up a model
fixture, asks for one by name, or loads a GGUF fails with a line saying to mark it (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

UNMARKED = '''
import pytest


def test_takes_the_model_fixture(smollm2_path):
    pass


def test_asks_for_the_model_by_name(request):
    request.getfixturevalue("smollm2_path")


def test_loads_a_gguf_itself(tmp_path):
    import llama_cpp

    llama_cpp.Llama(str(tmp_path / "any.gguf"))


def test_needs_no_model():
    assert 1 + 1 == 2


@pytest.mark.model
def test_a_model_test_is_not_in_the_fast_tier(smollm2_path):
    raise AssertionError("deselected by -m fast")
'''


# In this process and under pytest-xdist workers (the suite's default, pyproject.toml's addopts).
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_test_that_loads_a_model_without_the_model_marker_fails_in_the_fast_tier(tmp_path: Path,
                                                                                   workers: str) -> None:
    (tmp_path / "conftest.py").symlink_to(TESTS / "conftest.py")
    (tmp_path / "fakes").symlink_to(TESTS / "fakes")
    (tmp_path / "test_unmarked.py").write_text(UNMARKED)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    fast\n    model\n    network\n    slow\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "fast", "-p", "no:cacheprovider", "-q", "-rA",
                           "-n", workers, "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    # the fixture one errs in its set-up; xdist's summary leaves out the deselected
    summary = "2 failed, 1 passed, 1 deselected, 1 error" if workers == "0" else "2 failed, 1 passed, 1 error"
    assert summary in out, out
    for test, what in (("test_takes_the_model_fixture", "uses the fixture smollm2_path"),
                       ("test_asks_for_the_model_by_name", "sets up the SmolLM2 model (smollm2_path)"),
                       ("test_loads_a_gguf_itself", "loads a GGUF with llama.cpp")):
        assert f"test_unmarked.py::{test} {what} but is not marked @pytest.mark.model" in out, out
    assert "PASSED test_unmarked.py::test_needs_no_model" in out
