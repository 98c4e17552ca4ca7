"""Servers for the HTTP backend's tests: the real ``python -m llama_cpp.server`` and tiny misbehaving fakes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` on loopback, started and stopped by a test."""

    def __init__(self, model: Path, log: Path, *, api_key: str | None = None, n_ctx: int = 4096,
                 n_threads: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(n_ctx),
                "--n_threads", str(n_threads), "--host", "127.0.0.1", "--port", str(self.port)]
        if api_key:
            args += ["--api_key", api_key]
        self.log = log
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(args, stdout=self._log_file, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        self._wait_until_ready(api_key)

    def _wait_until_ready(self, api_key: str | None, timeout: float = 120.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited:\n{self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", headers=headers, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._log_file.close()


class FakeServer:
    """An OpenAI-compatible server that misbehaves on purpose.

    mode: "slow" (sleeps before answering), "truncating" (reports few prompt tokens, like Ollama past its
    num_ctx), "honest" (reports a plausible count), "flaky" (503 then OK), "busy" (429 with Retry-After then
    OK). Unknown model names get vLLM's 404. There is no tokenize route.
    """

    model = "fake-model"

    def __init__(self, mode: str, *, delay: float = 0.0, failures: int = 0) -> None:
        self.mode = mode
        self.delay = delay
        self.failures = failures
        self.chat_requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak_in_flight = 0  # most chat requests served at the same time
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._reply(200, {"object": "list", "data": [{"id": fake.model, "object": "model"}]})
                else:
                    self._reply(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._reply(404, {"detail": "Not Found"})
                    return
                with fake._lock:
                    fake.chat_requests.append(body)
                    fake.in_flight += 1
                    fake.peak_in_flight = max(fake.peak_in_flight, fake.in_flight)
                try:
                    status, answer, headers = fake.answer(body)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1
                self._reply(status, answer, headers)

            def _reply(self, status: int, answer: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                   "type": "NotFoundError", "code": 404}}, {}
        if self.mode in ("flaky", "busy") and len(self.chat_requests) <= self.failures:
            if self.mode == "busy":
                return 429, {"error": {"message": "too many requests"}}, {"retry-after": "0"}
            return 503, {"error": {"message": "overloaded"}}, {}
        if self.mode == "slow":
            time.sleep(self.delay)
        words = sum(len(m["content"].split()) for m in body["messages"])
        prompt_tokens = 50 if self.mode == "truncating" else words + 20
        reply = "ok" if self.mode != "slow" else f"reply to {body['messages'][-1]['content']}"
        return 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                         "finish_reason": "stop", "stop_reason": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1,
                      "total_tokens": prompt_tokens + 1},
        }, {}

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def fake_server(mode: str, **options: Any) -> Iterator[FakeServer]:
    server = FakeServer(mode, **options)
    try:
        yield server
    finally:
        server.stop()
