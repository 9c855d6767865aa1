from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.judges.anthropic import AnthropicJudge
from engine.judges.factory import make_judge
from engine.judges.offline import OfflineJudge
from engine.judges.openai_compat import OpenAICompatibleJudge
from engine.judges.replay import RecordingJudge, ReplayJudge
from engine.judges.scripted import ScriptedJudge
from engine.settings import Settings
from ops.fakes.judge_requests import make_request

KEY = "sk-ant-factory-PLANTED"


@pytest.fixture
def settings() -> Settings:
    return Settings(judge_deadline_s=1.5, judge_concurrency=3)


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "ci.yaml"
    path.write_text("default: 4\n")
    return path


def test_empty_spec_follows_the_settings(settings: Settings) -> None:
    assert isinstance(make_judge("", settings), OfflineJudge)


async def test_empty_spec_with_a_key_is_anthropic(settings: Settings) -> None:
    judge = make_judge("", settings.with_(anthropic_api_key=KEY, anthropic_model="claude-x"))
    assert isinstance(judge, AnthropicJudge)
    assert judge.name == "anthropic:claude-x"
    assert judge.policy.deadline_s == 1.5 and judge.policy.concurrency == 3
    assert KEY not in repr(judge)
    await judge.aclose()


async def test_anthropic_model_override(settings: Settings) -> None:
    judge = make_judge("anthropic:claude-other", settings.with_(anthropic_api_key=KEY))
    assert judge.name == "anthropic:claude-other"
    assert isinstance(judge, AnthropicJudge)
    await judge.aclose()


def test_anthropic_without_key(settings: Settings) -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY is not set"):
        make_judge("anthropic", settings)


async def test_openai_compatible(settings: Settings) -> None:
    judge = make_judge("openai-compatible", settings.with_(openai_model="qwen"), environ={"OPENAI_API_KEY": "k"})
    assert isinstance(judge, OpenAICompatibleJudge)
    assert judge.name == "openai-compatible:qwen"
    await judge.aclose()


async def test_scripted_and_recording(settings: Settings, rules: Path, tmp_path: Path) -> None:
    judge = make_judge(f"scripted:{rules}", settings)
    assert isinstance(judge, ScriptedJudge) and judge.name == "scripted:ci"
    cassette = tmp_path / "rec.jsonl"
    recording = make_judge(f"scripted:{rules}", settings, record=cassette)
    assert isinstance(recording, RecordingJudge)
    await recording.evaluate(make_request())
    replay = make_judge(f"replay:{cassette}", settings)
    assert isinstance(replay, ReplayJudge)
    assert (await replay.evaluate(make_request())).answers[0].value == 4


@pytest.mark.parametrize("spec", ["scripted", "replay:", "offline:extra", "gpt", "anthropic-ish"])
def test_bad_specs_list_the_choices(settings: Settings, spec: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make_judge(spec, settings)
    message = str(caught.value)
    assert "needs a file" in message or "choose one of anthropic, openai-compatible, offline" in message
