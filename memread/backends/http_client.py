"""Talking to an OpenAI-compatible server: one httpx client, retries with tenacity, and every failure turned
into a one-line BackendError (or BudgetError) whose hint says what to fix.

Retried: refused or dropped connections, 408/409/429/5xx (honouring Retry-After). Not retried: read
timeouts, because the server may be half-way through a multi-minute generation that a retry would redo.
"""

from __future__ import annotations

from typing import Any

import httpx
import tenacity

from memread.errors import BackendError, BudgetError

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class ServerClient:
    """An httpx client bound to one server (``base_url`` with or without ``/v1``)."""

    def __init__(self, base_url: str, *, api_key: str, timeout: float, connect_timeout: float,
                 connections: int, retries: int, backoff: float) -> None:
        self.root_url, self.base_url = normalise_base_url(base_url)
        self.timeout = float(timeout)
        # Both headers, like MemAgent's quickstart: OpenAI-style servers read the bearer token, Azure-style
        # gateways read `api-key`.
        self.http = httpx.Client(
            base_url=self.root_url,
            headers={"Authorization": f"Bearer {api_key}", "api-key": api_key},
            timeout=httpx.Timeout(self.timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )
        self._retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(max(0, int(retries)) + 1),
            wait=_RetryAfterOr(tenacity.wait_exponential(multiplier=backoff, max=8)),
            retry=tenacity.retry_if_exception(_worth_retrying),
            reraise=True,
        )

    def close(self) -> None:
        self.http.close()

    def get_json_quietly(self, path: str) -> Any | None:
        """GET for discovery (no retries): the JSON answer, or None on any failure."""
        try:
            response = self.http.get(path)
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def list_models(self) -> list[dict[str, Any]] | None:
        """GET /v1/models: the served models, or None when the server has no such list."""
        response = self.send("GET", "v1/models")
        if response.status_code in (401, 403):
            raise self.error_for(response, "v1/models")
        if response.status_code != 200:
            return None  # some gateways have no model list; chat requests will tell
        try:
            data = response.json().get("data")
        except (ValueError, AttributeError):
            return None
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else None

    def probe(self, path: str, body: dict[str, Any]) -> Any | None:
        """POST for discovery: the JSON answer, or None when the route is missing or refuses the body."""
        try:
            response = self.http.post(path, json=body)
        except httpx.HTTPError:
            return None
        if response.status_code in (401, 403):
            raise self.error_for(response, path)
        if response.status_code != 200:
            return None
        try:
            return response.json()
        except ValueError:
            return None

    def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST with retries; the decoded JSON answer, or BackendError/BudgetError for anything else."""
        response = self.send("POST", path, json=body)
        if response.status_code != 200:
            raise self.error_for(response, path, body.get("model"))
        try:
            return response.json()
        except ValueError as exc:
            raise BackendError(f"the server at {self.base_url} sent a reply that is not JSON") from exc

    def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request, retried on refused/dropped connections, 429 and 5xx; transport failures become
        BackendError with a hint. Returns the last response, whatever its status."""
        try:
            for attempt in self._retrying:
                with attempt:
                    response = self.http.request(method, path, **kwargs)
                    if response.status_code in RETRY_STATUSES:
                        raise _RetryableStatus(response)
        except _RetryableStatus as exc:
            return exc.response
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                raise BackendError(
                    f"cannot connect to the server at {self.base_url} (timed out)",
                    hint=f"is the server running at {self.base_url}? check the host, port and firewall",
                ) from exc
            raise BackendError(
                f"the server at {self.base_url} did not answer within {self.timeout:g} s",
                hint="raise --timeout (seconds), or check that the server is not overloaded",
            ) from exc
        except httpx.ConnectError as exc:
            raise BackendError(
                f"cannot connect to the server at {self.base_url}: {_reason(exc)}",
                hint=f"is the server running at {self.base_url}? start it (`vllm serve MODEL`, "
                "`python -m llama_cpp.server --model m.gguf`) or pass --base-url",
            ) from exc
        except httpx.TransportError as exc:
            raise BackendError(
                f"lost the connection to the server at {self.base_url}: {_reason(exc)}",
                hint="the server may have crashed or been stopped; check its log. The trace is kept: "
                "restart the server and resume the run",
            ) from exc
        return response

    def error_for(self, response: httpx.Response, path: str, model: str | None = None
                  ) -> BackendError | BudgetError:
        status = response.status_code
        detail = _detail(response)
        if status in (401, 403):
            return BackendError(
                f"the server at {self.base_url} refused the API key (HTTP {status})",
                hint="set MEMREAD_API_KEY or pass --api-key with the key the server was started with",
            )
        if status == 404:
            served = [str(m.get("id")) for m in (self.list_models_quietly() or [])]
            hint = (
                f"the server serves: {', '.join(served)}; pass one of them with --model"
                if served
                else "check --base-url: it should be the server root or end in /v1 (e.g. http://host:8000/v1)"
            )
            what = f"model {model!r} or route /{path}" if model else f"route /{path}"
            return BackendError(f"the server at {self.base_url} has no {what} (HTTP 404: {detail})", hint=hint)
        if status == 400 and "context" in detail.lower():
            return BudgetError(
                f"the prompt does not fit the server's context window: {detail}",
                hint="lower --chunk-tokens or --memory-tokens, or give the server a larger context "
                "(vLLM --max-model-len, llama-server -c, llama_cpp.server --n_ctx)",
            )
        if status == 400 and ("top_p" in detail or "temperature" in detail):
            # vLLM checks SamplingParams' ranges (vllm/sampling_params.py _verify_args); hosted APIs have theirs
            return BackendError(
                f"the server at {self.base_url} refused the sampling settings: {detail}",
                hint="vLLM and OpenAI take --temperature from 0 to 2 and --top-p above 0, up to 1 "
                "(1 turns it off)",
            )
        return BackendError(
            f"the server at {self.base_url} answered HTTP {status}: {detail}",
            hint="see the server's log for the cause",
        )

    def list_models_quietly(self) -> list[dict[str, Any]] | None:
        try:
            return self.list_models()
        except BackendError:
            return None


class _RetryableStatus(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


class _RetryAfterOr:
    """Wait what the server asked for in Retry-After (capped), else the exponential backoff."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback

    def __call__(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _RetryableStatus):
            try:
                return min(float(exc.response.headers.get("retry-after", "")), 30.0)
            except ValueError:
                pass
        return float(self.fallback(state))


def _worth_retrying(exc: BaseException) -> bool:
    if isinstance(exc, httpx.TimeoutException):
        return isinstance(exc, httpx.ConnectTimeout)  # the server never started on this request
    return isinstance(exc, (_RetryableStatus, httpx.TransportError))


def normalise_base_url(url: str) -> tuple[str, str]:
    """``http://h:8000``, ``http://h:8000/`` and ``http://h:8000/v1/`` all mean the same server.

    Returns (root with a trailing slash, for relative requests; the /v1 URL, for messages)."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    root = url[: -len("/v1")] if url.endswith("/v1") else url
    return root + "/", root + "/v1"


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:200]
    if isinstance(body, dict) and ("detail" in body or "message" in body or error):
        return str(body.get("detail") or body.get("message") or error)[:200]
    return str(body)[:200]


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1][:120] if text else type(exc).__name__
