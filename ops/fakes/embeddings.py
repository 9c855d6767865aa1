"""A local stand-in for an OpenAI-compatible ``POST /v1/embeddings`` endpoint — a test double.

Vectors are the bag-of-words hashing vectors of
:class:`engine.formats.metareason.embeddings.ScriptedHashingEmbeddings`, so similarities are predictable;
errors, delays and rate limits come from the same behaviour script as the other fakes.
"""

from __future__ import annotations

from typing import Any

from engine.formats.metareason.embeddings import ScriptedHashingEmbeddings
from ops.fakes.server import Behaviour, FakeLlmServer, estimate_tokens


class EmbeddingsServer(FakeLlmServer):
    route = "/v1/embeddings"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def prompt_text(self, body: dict[str, Any]) -> str:
        inputs = body.get("input", [])
        return "\n".join(str(x) for x in (inputs if isinstance(inputs, list) else [inputs]))

    def _error_body(self, behaviour: Behaviour) -> dict[str, Any]:
        return {"error": {"type": behaviour.error_type, "message": f"fake server: {behaviour.error_type}"}}

    def _success_body(self, body: dict[str, Any], text: str, state: Any = None) -> dict[str, Any]:
        inputs = body.get("input", [])
        texts = [str(x) for x in (inputs if isinstance(inputs, list) else [inputs])]
        return {
            "object": "list",
            "model": body.get("model", "unknown"),
            "data": [
                {"object": "embedding", "index": i, "embedding": ScriptedHashingEmbeddings.vector(t)}
                for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": estimate_tokens(len(self.prompt_text(body))), "total_tokens": 0},
        }
