"""The tokenize routes of OpenAI-compatible servers, so budgets are measured with the model's own tokenizer.

Three dialects exist and none is part of the OpenAI API:

- vLLM: ``POST /tokenize`` with ``{"model", "prompt"}`` or ``{"model", "messages"}`` (chat template applied)
  answers ``{"count", "tokens", "max_model_len"}``; ``POST /detokenize`` with ``{"model", "tokens"}``
  answers ``{"prompt"}`` (vllm-project/vllm ``vllm/entrypoints/serve/tokenize/protocol.py``:
  TokenizeCompletionRequest, TokenizeChatRequest with ``add_generation_prompt=True`` and
  ``add_special_tokens=False`` by default, TokenizeResponse, DetokenizeResponse).
- llama.cpp's ``llama-server``: ``POST /tokenize`` with ``{"content"}`` answers ``{"tokens"}``
  (``add_special`` defaults to false, ``parse_special`` to true); ``POST /apply-template`` with
  ``{"messages"}`` answers ``{"prompt"}``; ``POST /detokenize`` answers ``{"content"}`` (ggml-org/llama.cpp
  ``tools/server/README.md``; the ``parse_special`` default is in the server's source). Its chat path
  tokenizes the rendered prompt with special tokens added and parsed, so a chat count does the same.
- llama-cpp-python's ``python -m llama_cpp.server``: ``POST /extras/tokenize`` with ``{"model", "input"}``
  answers ``{"tokens"}``; ``POST /extras/detokenize``. It cannot apply the chat template, so the backend
  measures the template's cost once.

tests/fakes/http_servers.py fakes the first two from those schemas; the third is tested for real.

Detection sends a short text to each in turn; a route counts only if it answers with tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Post = Callable[[str, dict[str, Any]], Any]  # (path, json body) -> decoded JSON answer
_PROBE = "Hello, world"


@dataclass(frozen=True)
class TokenizeRoute:
    server: str  # "vllm" | "llama-server" | "llama_cpp.server": also the backend's tokenizer_source
    tokenize_path: str
    detokenize_path: str
    counts_chats: bool  # the server can count a whole conversation with its chat template

    def tokenize_body(self, model: str, text: str) -> dict[str, Any]:
        if self.server == "vllm":
            return {"model": model, "prompt": text, "add_special_tokens": False}
        if self.server == "llama-server":
            return {"content": text, "add_special": False, "parse_special": False}
        return {"model": model, "input": text}

    def encode(self, post: Post, model: str, text: str) -> list[int]:
        answer = post(self.tokenize_path, self.tokenize_body(model, text))
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        # llama-server may answer pieces ({"id", "piece"}) when asked; we never ask, but accept both.
        return [t["id"] if isinstance(t, dict) else int(t) for t in tokens or []]

    def decode(self, post: Post, model: str, ids: Sequence[int]) -> str:
        answer = post(self.detokenize_path, {"model": model, "tokens": list(ids)})
        for key in ("prompt", "content", "text"):  # vLLM, llama-server, llama_cpp.server
            if isinstance(answer, dict) and isinstance(answer.get(key), str):
                return str(answer[key])
        return ""

    def count_chat(self, post: Post, model: str, messages: list[dict[str, str]]) -> int:
        if self.server == "vllm":
            answer = post(self.tokenize_path, {"model": model, "messages": messages,
                                               "add_generation_prompt": True})
            return int(answer["count"])
        prompt = post("apply-template", {"messages": messages})["prompt"]
        answer = post(self.tokenize_path, {"content": prompt, "add_special": True, "parse_special": True})
        return len(answer["tokens"])


ROUTES = (
    TokenizeRoute("vllm", "tokenize", "detokenize", counts_chats=True),
    TokenizeRoute("llama-server", "tokenize", "detokenize", counts_chats=True),
    TokenizeRoute("llama_cpp.server", "extras/tokenize", "extras/detokenize", counts_chats=False),
)


def detect_route(probe: Callable[[str, dict[str, Any]], Any | None], model: str) -> TokenizeRoute | None:
    """The first route that tokenizes a probe text, or None (then the caller estimates with tiktoken)."""
    for route in ROUTES:
        answer = probe(route.tokenize_path, route.tokenize_body(model, _PROBE))
        if not isinstance(answer, dict) or not answer.get("tokens"):
            continue
        if route.server == "vllm" and "count" not in answer:
            continue  # llama-server answers the vLLM body too, with tokens of an empty "content"
        return route
    return None


class ServerTokenizer:
    """The Tokenizer protocol over a server's tokenize route (one HTTP call per text; counts are cached)."""

    def __init__(self, post: Post, route: TokenizeRoute, model: str) -> None:
        self._post = post
        self._route = route
        self._model = model
        self.name = f"server:{route.server}"
        self.count = lru_cache(maxsize=512)(self._count)  # type: ignore[method-assign]

    def _count(self, text: str) -> int:
        return len(self.encode(text)) if text else 0

    def count(self, text: str) -> int:  # replaced by the cached version in __init__
        return self._count(text)

    def encode(self, text: str) -> list[int]:
        return self._route.encode(self._post, self._model, text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._route.decode(self._post, self._model, ids) if ids else ""
