"""What a C library writes to fd 2 during a load stays off the terminal, and its own lines explain a failure."""

from __future__ import annotations

import os
import re

import pytest

from memread.backends.quiet import captured_stderr, tail

LLAMA = re.compile(r"\s*(llama|gguf|ggml|load)\w*:")


def test_writes_to_fd_2_go_to_a_file_that_is_gone_afterwards_and_its_last_lines_are_read_back(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with captured_stderr() as log:
        assert log is not None
        os.write(2, b"print_info: file type = Q4_1\nllama_model_load: error loading model: truncated\n"
                    b"gguf_init: failed to read tensor info\nsome other line\n")
        detail = tail(log, LLAMA)
    assert detail == "llama_model_load: error loading model: truncated | gguf_init: failed to read tensor info"
    assert not log.exists()
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"  # fd 2 is the terminal's again, and saw nothing before
    assert tail(None, LLAMA) == "" and tail(log, LLAMA) == ""
