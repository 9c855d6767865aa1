"""Embedding clients for the ``embedding_similarity`` oracle.

* :class:`OpenAICompatibleEmbeddings` — ``POST {base_url}/embeddings`` (OpenAI, vLLM, Ollama, llama.cpp …)
  with httpx; 429/5xx and connection errors are retried under :mod:`engine.retry` (jittered exponential
  backoff honouring ``retry-after``, each retry told to ``on_retry``), other failures raise
  :class:`EmbeddingError` (the oracle records the failure on that variant).
* :class:`ScriptedHashingEmbeddings` — a test double with no model: each word is hashed into one of
  :data:`HASH_DIMENSIONS` buckets (a bag of words). It is named ``scripted:hashing (no model)`` in every
  output; it measures shared words, not meaning, and exists for CI and offline demos.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

import httpx

from engine.errors import ConfigurationError, DriftError
from engine.judges.llm import parse_retry_after
from engine.retry import Backoff, RetryCounter, RetryPolicy, no_count, retrying

HASH_DIMENSIONS = 256
EMBEDDING_CHOICES = ("openai-compatible[:MODEL]", "scripted:hashing")
_WORD = re.compile(r"[a-z0-9']+")


class EmbeddingError(DriftError):
    """The embeddings endpoint did not give vectors for a request."""


class _Transient(EmbeddingError):
    """A failure worth retrying: 429, 5xx or no connection; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Embeddings(Protocol):
    @property
    def name(self) -> str: ...

    async def embed(self, texts: Sequence[str], model: str) -> list[list[float]]: ...


class ScriptedHashingEmbeddings:
    """Bag-of-words vectors by hashing (test double; see the module docstring)."""

    name = "scripted:hashing (no model)"

    async def embed(self, texts: Sequence[str], model: str) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    @staticmethod
    def vector(text: str) -> list[float]:
        out = [0.0] * HASH_DIMENSIONS
        for word in _WORD.findall(text.lower()):
            bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
            out[bucket % HASH_DIMENSIONS] += 1.0
        return out


class OpenAICompatibleEmbeddings:
    """An OpenAI-compatible embeddings endpoint; ``model`` overrides each oracle's ``embedding_model``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        model: str | None = None,
        timeout_s: float = 30.0,
        max_attempts: int = 4,
        client: httpx.AsyncClient | None = None,
        on_retry: RetryCounter = no_count,
    ) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s)
        self._model = model
        self._retry = RetryPolicy("embeddings", lambda error: isinstance(error, _Transient), Backoff(0.05, 1.0),
                                  max(1, max_attempts))  # fmt: skip
        self._on_retry = on_retry
        self._base_url = base_url

    @property
    def name(self) -> str:
        return f"openai-compatible embeddings ({self._model or 'model from the file'} at {self._base_url})"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def embed(self, texts: Sequence[str], model: str) -> list[list[float]]:
        body = {"model": self._model or model, "input": list(texts)}
        return await retrying(lambda: self._post(body, len(texts)), self._retry, self._on_retry)

    async def _post(self, body: Mapping[str, object], count: int) -> list[list[float]]:
        try:
            response = await self._client.post("/embeddings", json=body)
        except httpx.HTTPError as exc:
            raise _Transient(f"{self.name}: {type(exc).__name__}: {exc}") from None
        if response.status_code == 200:
            return _vectors(response, count)
        message = f"{self.name}: HTTP {response.status_code}: {response.text[:200]}"
        if response.status_code == 429 or response.status_code >= 500:
            raise _Transient(message, parse_retry_after(response.headers.get("retry-after")))
        raise EmbeddingError(message)


def _vectors(response: httpx.Response, count: int) -> list[list[float]]:
    try:
        data = sorted(response.json()["data"], key=lambda item: item.get("index", 0))
        vectors = [[float(x) for x in item["embedding"]] for item in data]
    except (ValueError, KeyError, TypeError) as exc:
        raise EmbeddingError(f"embeddings response is not usable: {exc}") from None
    if len(vectors) != count:
        raise EmbeddingError(f"embeddings response has {len(vectors)} vectors for {count} inputs")
    return vectors


def make_embeddings(spec: str, *, base_url: str, environ: Mapping[str, str]) -> Embeddings:
    """``openai-compatible[:MODEL]`` (``OPENAI_API_KEY`` from ``environ``) or ``scripted:hashing``."""
    kind, _, argument = spec.partition(":")
    if kind == "openai-compatible":
        return OpenAICompatibleEmbeddings(
            base_url, api_key=environ.get("OPENAI_API_KEY") or None, model=argument or None
        )
    if kind == "scripted" and argument == "hashing":
        return ScriptedHashingEmbeddings()
    raise ConfigurationError(f"unknown embeddings {spec!r}; choose one of {', '.join(EMBEDDING_CHOICES)}")
