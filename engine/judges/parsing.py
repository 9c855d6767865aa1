"""Strict parsing of a judge model's reply into :class:`ClaimAnswer` objects.

The reply must contain one JSON object (code fences and text around it are tolerated; the first object that
decodes is used). Values are checked by mode and never coerced:

* score: an ``int`` from 0 to 9 (``true``, ``7.0`` and ``"7"`` are errors);
* check: a JSON boolean;
* enumerate: ``items`` is a list of strings; ``value``, when present, must equal the number of items.

An individual request (one claim) expects ``{"reasoning": ..., <value>}``; a batch expects
``{"results": [{"id": ..., "reasoning": ..., <value>}, ...]}`` with exactly the requested ids, each once.
Every problem raises :class:`~engine.errors.JudgeOutputError` with a message fit to send back to the model.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from engine.errors import JudgeOutputError
from engine.judges.base import ClaimAnswer, JudgeMode, JudgeRequest

_DECODER = json.JSONDecoder()
_MAX_SHOWN = 200


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (fenced or bare)."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise JudgeOutputError(f"the reply contains no JSON object: {_shorten(text)!r}")


def parse_answers(text: str, request: JudgeRequest) -> tuple[ClaimAnswer, ...]:
    """Answers for every claim of ``request``, in the order of ``request.claims``."""
    obj = extract_json_object(text)
    if len(request.claims) == 1:
        return (_answer(obj, request.claims[0].id, request.mode, where="the answer"),)
    return _batch_answers(obj, request)


def _batch_answers(obj: dict[str, Any], request: JudgeRequest) -> tuple[ClaimAnswer, ...]:
    results = obj.get("results")
    if not isinstance(results, list):
        raise JudgeOutputError('a batch answer needs a "results" list with one entry per claim id')
    wanted = [c.id for c in request.claims]
    by_id: dict[str, ClaimAnswer] = {}
    for index, entry in enumerate(results):
        where = f"results[{index}]"
        if not isinstance(entry, dict):
            raise JudgeOutputError(f"{where} must be an object")
        claim_id = entry.get("id")
        if not isinstance(claim_id, str):
            raise JudgeOutputError(f'{where} needs a string "id"')
        if claim_id not in wanted:
            raise JudgeOutputError(f"{where} has unknown id {claim_id!r}; expected ids are {wanted}")
        if claim_id in by_id:
            raise JudgeOutputError(f"id {claim_id!r} is answered more than once")
        by_id[claim_id] = _answer(entry, claim_id, request.mode, where=where)
    missing = [claim_id for claim_id in wanted if claim_id not in by_id]
    if missing:
        raise JudgeOutputError(f"no answer for claim ids {missing}")
    return tuple(by_id[claim_id] for claim_id in wanted)


def _answer(obj: dict[str, Any], claim_id: str, mode: JudgeMode, *, where: str) -> ClaimAnswer:
    reasoning = obj.get("reasoning")
    if not isinstance(reasoning, str):
        raise JudgeOutputError(f'{where} needs a string "reasoning" before the value')
    if mode is JudgeMode.ENUMERATE:
        items = _items(obj, where)
        return ClaimAnswer(claim_id=claim_id, value=len(items), reasoning=reasoning, items=items)
    if "value" not in obj:
        raise JudgeOutputError(f'{where} has no "value"')
    value = obj["value"]
    if mode is JudgeMode.CHECK:
        if not isinstance(value, bool):
            raise JudgeOutputError(f"{where}: value must be true or false, not {value!r}")
    elif not is_score(value):
        raise JudgeOutputError(f"{where}: value must be a whole number from 0 to 9, not {value!r}")
    return ClaimAnswer(claim_id=claim_id, value=value, reasoning=reasoning)


def _items(obj: dict[str, Any], where: str) -> tuple[str, ...]:
    items = obj.get("items")
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise JudgeOutputError(f'{where}: "items" must be a list of strings')
    if "value" in obj:
        value = obj["value"]
        if isinstance(value, bool) or not isinstance(value, int) or value != len(items):
            raise JudgeOutputError(f"{where}: value {value!r} must equal the number of items ({len(items)})")
    return tuple(items)


def is_score(value: object) -> TypeGuard[int]:
    """True for an ``int`` (not a bool) from 0 to 9."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 9


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "…"
