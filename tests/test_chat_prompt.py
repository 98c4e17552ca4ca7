"""Which chat template a GGUF is prompted with: its own, one the user names, or a Jinja template given whole."""

from __future__ import annotations

import pytest

from memread.backends.chat_prompt import resolve_template
from memread.errors import UsageError


def test_chat_format_choices() -> None:
    assert resolve_template({"tokenizer.chat_template": "{{ x }}"}, None)[1:] == ("gguf", None)
    assert resolve_template({"tokenizer.chat_template": "{{ x }}"}, "gemma")[1] == "gemma"
    assert resolve_template({}, "{% for m in messages %}{{ m.content }}{% endfor %}")[1] == "custom"
    with pytest.raises(UsageError, match="unknown chat format"):
        resolve_template({}, "vicuna")
