"""Attribution: the anchors or the cast say the judge moved; otherwise the agent did (or nobody can tell)."""

from __future__ import annotations

from engine.monitor.attribution import AttributionPolicy, Attributor, Cause


def test_a_lone_agent_alert_is_the_agents() -> None:
    attributor = Attributor(AttributionPolicy(guard_s=100), anchors_configured=True)
    assert attributor.agent_alert("adherence", "michael", "a1", 10.0, cast_size=10) == (Cause.AGENT, [])


def test_without_anchors_a_lone_alert_is_unknown() -> None:
    attributor = Attributor(AttributionPolicy(guard_s=100), anchors_configured=False)
    assert attributor.agent_alert("adherence", "michael", "a1", 10.0, cast_size=10)[0] is Cause.UNKNOWN


def test_an_anchor_alarm_in_the_window_makes_later_alerts_the_judges_and_revises_earlier_ones() -> None:
    attributor = Attributor(AttributionPolicy(guard_s=100), anchors_configured=True)
    attributor.agent_alert("adherence", "michael", "a1", 10.0, cast_size=10)
    attributor.agent_alert("fluency", "dwight", "f1", 12.0, cast_size=10)
    assert attributor.anchor_fired("adherence", 50.0) == ["a1"]  # only the same dimension's
    assert attributor.agent_alert("adherence", "jim", "a2", 60.0, cast_size=10)[0] is Cause.JUDGE
    # outside the guard window the anchor alarm no longer explains an alert
    assert attributor.agent_alert("adherence", "pam", "a3", 200.0, cast_size=10)[0] is Cause.AGENT


def test_half_the_cast_alerting_in_one_window_is_the_judges() -> None:
    attributor = Attributor(AttributionPolicy(guard_s=100, cast_share=0.5, min_cast=3), anchors_configured=False)
    causes = [attributor.agent_alert("adherence", f"agent{i}", f"a{i}", float(i), cast_size=6) for i in range(3)]
    assert [c for c, _ in causes] == [Cause.UNKNOWN, Cause.UNKNOWN, Cause.JUDGE]
    assert causes[2][1] == ["a0", "a1"]


def test_alerts_older_than_the_window_are_forgotten() -> None:
    attributor = Attributor(AttributionPolicy(guard_s=10, cast_share=0.5, min_cast=3), anchors_configured=True)
    for i in range(3):
        cause, _ = attributor.agent_alert("adherence", f"agent{i}", f"a{i}", float(i * 100), cast_size=4)
        assert cause is Cause.AGENT
