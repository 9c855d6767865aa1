"""AgentV's own targets (``.agentv/targets.yaml``), so ``--target NAME`` works as with the ``agentv`` CLI.

Only the ``cli`` provider runs here: its ``command`` is a shell command line whose placeholders are filled per
case — ``{PROMPT}`` (the question, shell-quoted), ``{PROMPT_FILE}`` (a file holding it), ``{EVAL_ID}``,
``{ATTEMPT}``, ``{FILES}`` (empty) and ``{OUTPUT_FILE}`` (where the program writes its answer). The output file
holds ``{"output": [messages with tool_calls]}`` (or ``output_messages``, or ``{"text": …}``) or plain text. The
command runs out of process with limits and without the service's secrets
(:func:`~engine.formats.sandbox.run_limited`; a target is the system under evaluation, with its network and files,
so not the user-code sandbox) in the target's ``cwd`` (default: the targets file's folder's parent). Other
providers (azure, anthropic, codex, vscode…) are refused with a message naming the alternatives
(``--target command:…``, ``recorded:…``, ``actor:…``).

Upstream looks for ``.agentv/targets.yaml`` in the eval file's folder and each parent; so does this.
"""

from __future__ import annotations

import re
import shlex
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from engine.errors import ConfigurationError
from engine.formats.agentv.model import content_text
from engine.formats.sandbox import Limits, run_limited
from engine.formats.targets import TargetAnswer, TargetError, TargetRequest, ToolCall
from engine.models import TokenUsage
from engine.propositions.yamlsource import read_yaml

_PLACEHOLDER = re.compile(r"\{([A-Z_]+)\}")


def find_targets_file(start: Path) -> Path | None:
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / ".agentv" / "targets.yaml"
        if candidate.is_file():
            return candidate
    return None


def load_named_target(name: str, eval_dir: Path) -> CliTarget:
    path = find_targets_file(eval_dir)
    if path is None:
        raise ConfigurationError(f"target {name!r}: no .agentv/targets.yaml beside {eval_dir} or above it")
    document = read_yaml(path)
    if document.issues:
        raise ConfigurationError(str(document.issues[0]))
    targets = document.data.get("targets") if isinstance(document.data, Mapping) else None
    for index, entry in enumerate(targets if isinstance(targets, list) else []):
        if isinstance(entry, Mapping) and entry.get("name") == name:
            where = document.issue(("targets", index), "").__str__().rstrip(": ")
            return _cli_target(entry, path, where)
    raise ConfigurationError(f"{path}: no target named {name!r}")


def _cli_target(entry: Mapping[str, Any], path: Path, where: str) -> CliTarget:
    provider = entry.get("provider")
    if provider != "cli":
        raise ConfigurationError(
            f"{where}: provider {provider!r} is not supported by drift (only 'cli'); "
            "use --target command:CMD, recorded:FILE.jsonl or actor:AGENT_ID"
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigurationError(f"{where}: a cli target needs a 'command' string")
    unknown = set(_PLACEHOLDER.findall(command)) - {
        "PROMPT",
        "PROMPT_FILE",
        "EVAL_ID",
        "ATTEMPT",
        "FILES",
        "OUTPUT_FILE",
    }
    if unknown:
        raise ConfigurationError(f"{where}: unknown placeholder(s) {', '.join(sorted(unknown))} in command")
    cwd_raw = entry.get("cwd")
    base = path.parent.parent
    cwd = (base / cwd_raw) if isinstance(cwd_raw, str) else base
    timeout = entry.get("timeout_seconds", 60)
    return CliTarget(str(entry["name"]), command, cwd, float(timeout) if isinstance(timeout, int | float) else 60.0)


def render(command: str, values: Mapping[str, str]) -> str:
    """Fill ``{NAME}`` placeholders with shell-quoted values; unknown names stay as written."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), command)


class CliTarget:
    def __init__(self, name: str, command: str, cwd: Path, timeout_s: float) -> None:
        self._name = name
        self.command = command
        self.cwd = cwd
        self._limits = Limits(wall_s=timeout_s, cpu_s=max(1, int(timeout_s)), memory_mb=2048)

    @property
    def name(self) -> str:
        return f"cli:{self._name}"

    async def answer(self, request: TargetRequest) -> TargetAnswer:
        with tempfile.TemporaryDirectory(prefix="drift-agentv-") as scratch:
            prompt_file = Path(scratch) / f"{_safe(request.item_id)}.prompt.txt"
            output_file = Path(scratch) / f"{_safe(request.item_id)}.output.json"
            prompt_file.write_text(request.prompt, encoding="utf-8")
            values = {
                "PROMPT": shlex.quote(request.prompt),
                "PROMPT_FILE": shlex.quote(str(prompt_file)),
                "EVAL_ID": shlex.quote(request.item_id),
                "ATTEMPT": "0",
                "FILES": "",
                "OUTPUT_FILE": shlex.quote(str(output_file)),
            }
            started = time.perf_counter()
            argv = ["/bin/sh", "-c", render(self.command, values)]
            outcome = await run_limited(argv, b"", cwd=self.cwd, limits=self._limits)
            latency = (time.perf_counter() - started) * 1000
            if not outcome.ok:
                detail = (
                    outcome.error
                    or outcome.stderr.decode(errors="replace").strip()[-300:]
                    or f"exit {outcome.returncode}"
                )
                raise TargetError(f"{self.name}: case {request.item_id!r}: {detail}")
            if not output_file.is_file():
                raise TargetError(f"{self.name}: case {request.item_id!r}: the command wrote no {{OUTPUT_FILE}}")
            return parse_output(output_file.read_text(encoding="utf-8"), request.item_id, self.name, latency)


def _safe(item_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", item_id)[:80] or "case"


def parse_output(content: str, item_id: str, target: str, latency_ms: float) -> TargetAnswer:
    """The answer in a cli target's output file (messages with tool calls, ``{"text"}``, or plain text)."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return TargetAnswer(item_id, content, target, latency_ms=latency_ms)
    if not isinstance(body, Mapping):
        return TargetAnswer(item_id, content, target, latency_ms=latency_ms)
    messages = body.get("output", body.get("output_messages"))
    usage_raw: Mapping[str, Any] = body["token_usage"] if isinstance(body.get("token_usage"), Mapping) else {}
    usage = TokenUsage(
        input_tokens=int(usage_raw.get("input", 0) or 0),
        output_tokens=int(usage_raw.get("output", 0) or 0),
        cache_read_input_tokens=int(usage_raw.get("cached", 0) or 0),
    )
    duration, cost = body.get("duration_ms"), body.get("cost_usd")
    latency = float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) else latency_ms
    cost_usd = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    if isinstance(messages, list) and messages:
        text, calls = _from_messages(messages)
        return TargetAnswer(item_id, text, target, calls, usage=usage, latency_ms=latency, cost_usd=cost_usd)
    if "text" in body:
        return TargetAnswer(item_id, str(body["text"]), target, usage=usage, latency_ms=latency, cost_usd=cost_usd)
    return TargetAnswer(item_id, content, target, latency_ms=latency_ms)


def _from_messages(messages: list[Any]) -> tuple[str, tuple[ToolCall, ...]]:
    calls: list[ToolCall] = []
    text = ""
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        for call in message.get("tool_calls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("tool", call.get("name")), str):
                calls.append(
                    ToolCall(
                        call.get("tool", call.get("name")), call.get("input", call.get("args")), call.get("output")
                    )
                )
        if message.get("role", "assistant") == "assistant" and message.get("content") is not None:
            text = content_text(message.get("content"))
    return text, tuple(calls)
