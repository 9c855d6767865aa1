from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from engine.errors import CassetteMiss, ConfigurationError
from engine.judges.base import Claim, JudgeMode, JudgeRequest
from engine.judges.replay import RecordingJudge, ReplayJudge, fingerprint
from engine.judges.scripted import ScriptedJudge
from ops.fakes.judge_requests import make_events, make_persona, make_request


@pytest.fixture
def scripted() -> ScriptedJudge:
    return ScriptedJudge.from_rules(
        {
            "default": 6,
            "default_count": 2,
            "rules": [{"proposition": "claim-1", "value": 2, "reasoning": "scripted low"}, {"value": False}],
        },
        name="scripted:fixture",
    )


def requests() -> list[JudgeRequest]:
    return [
        make_request(claims=3, persona=make_persona(), events=make_events(4)),
        make_request(JudgeMode.CHECK, action=None, events=make_events(2)),
        make_request(JudgeMode.ENUMERATE, double_check=True),
    ]


async def test_record_then_replay_gives_identical_answers(tmp_path: Path, scripted: ScriptedJudge) -> None:
    cassette = tmp_path / "run.jsonl"
    recorder = RecordingJudge(scripted, cassette)
    assert recorder.name == "scripted:fixture"
    recorded = [await recorder.evaluate(r) for r in requests()]
    replay = ReplayJudge(cassette)
    assert len(replay) == 3
    for request, original in zip(requests(), recorded, strict=True):
        replayed = await replay.evaluate(request)
        assert replayed.answers == original.answers
        assert replayed.judge == "replay:run"
        assert replayed.prompt_chars > replayed.cacheable_prefix_chars > 0
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line["judge"] for line in lines] == ["scripted:fixture"] * 3
    assert lines[0]["request"]["claims"][1] == {"id": "claim-1", "text": "The agent satisfies property number 1."}
    assert scripted.log.count() == 3  # replay never called the scripted judge


async def test_one_changed_character_is_a_miss_naming_the_fingerprint(tmp_path: Path, scripted: ScriptedJudge) -> None:
    cassette = tmp_path / "c.jsonl"
    original = make_request(claims=[Claim("adh-1", "Michael tells a story.")])
    await RecordingJudge(scripted, cassette).evaluate(original)
    altered = make_request(claims=[Claim("adh-1", "Michael tells a story!")])
    with pytest.raises(CassetteMiss) as caught:
        await ReplayJudge(cassette).evaluate(altered)
    assert caught.value.fingerprint == fingerprint(altered)
    assert fingerprint(altered) in str(caught.value) and str(cassette) in str(caught.value)


def test_fingerprint_covers_prompt_mode_ids_and_double_check() -> None:
    base = make_request()
    assert fingerprint(base) == fingerprint(make_request())
    variants = [
        make_request(action="I think we should all go bowling tomorrow."),
        make_request(JudgeMode.CHECK),
        make_request(claims=[Claim("other-id", "The agent satisfies property number 0.")]),
        make_request(double_check=True),
        make_request(persona=make_persona()),
    ]
    assert len({fingerprint(v) for v in variants} | {fingerprint(base)}) == len(variants) + 1


async def test_recording_is_safe_under_concurrency(tmp_path: Path, scripted: ScriptedJudge) -> None:
    cassette = tmp_path / "nested" / "many.jsonl"
    recorder = RecordingJudge(scripted, cassette)
    many = [make_request(action=f"draft {i}") for i in range(40)]
    await asyncio.gather(*(recorder.evaluate(r) for r in many))
    lines = cassette.read_text().splitlines()
    assert len(lines) == 40 and all(json.loads(line)["answers"] for line in lines)
    replay = ReplayJudge(cassette)
    assert [(await replay.evaluate(r)).answers[0].value for r in many] == [6] * 40


def test_recording_is_safe_across_threads(tmp_path: Path, scripted: ScriptedJudge) -> None:
    cassette = tmp_path / "threads.jsonl"
    recorder = RecordingJudge(scripted, cassette)

    def worker(offset: int) -> None:
        async def run() -> None:
            for i in range(25):
                await recorder.evaluate(make_request(action="x" * 200 + f" {offset}-{i}"))

        asyncio.run(run())

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = cassette.read_text().splitlines()
    assert len(lines) == 100
    assert len({json.loads(line)["fingerprint"] for line in lines}) == 100


async def test_last_recording_of_a_fingerprint_wins(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    request = make_request()
    await RecordingJudge(ScriptedJudge.from_rules({"default": 1}), cassette).evaluate(request)
    await RecordingJudge(ScriptedJudge.from_rules({"default": 8}), cassette).evaluate(request)
    assert (await ReplayJudge(cassette).evaluate(request)).answers[0].value == 8


def test_bad_cassettes_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read cassette"):
        ReplayJudge(tmp_path / "absent.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"fingerprint": "x", "judge": "j", "answers": []}\nnot json\n')
    with pytest.raises(ConfigurationError, match=r"broken\.jsonl:2"):
        ReplayJudge(broken)
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"fingerprint": "x", "judge": "j", "answers": [{"claim_id": "a", "value": "7"}]}\n')
    with pytest.raises(ConfigurationError, match=r"wrong\.jsonl:1"):
        ReplayJudge(wrong)
