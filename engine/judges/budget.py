"""One in-flight budget of judge calls, shared by callers with configured shares.

A worker has ``total`` judge call slots (``DRIFT_JUDGE_CONCURRENCY``) for every caller: the gate (and the
orchestrator steps, which answer on the same deadline) and the offline evaluations. Each :class:`BudgetLane`
has a *reservation* and a *cap*:

- the evaluations lane reserves ``share × total`` slots (``DRIFT_EVAL_JUDGE_SHARE``, at least one) and may never
  hold more (its cap is its reservation): evaluations use at most their share;
- the gate lane reserves the rest and may hold every slot (its cap is ``total``): it borrows the evaluations'
  slots while they are idle, and an evaluation never takes a slot from the gate below the gate's reservation;
- the shadows lane (shadow gating's candidates, ``DRIFT_SHADOW_JUDGE_SLOTS``) has slots of its own added to the
  pool, reserved and capped at that number: a shadow never holds a slot of the ``total`` the gate and the
  evaluations share, so it cannot make a gate call wait.

A freed slot goes first to a lane below its reservation that has calls waiting, then to any lane below its
cap (lanes in the order given), so a borrowed slot returns to its owner as soon as the borrower releases it
(no call is pre-empted). Waiting calls of one lane are served first come, first served.

A lane's judge (:meth:`JudgeBudget.judge`) is the worker's call policy for every judge it hosts, LLM or not:
a call takes a slot, then runs under the judge deadline (``DRIFT_JUDGE_DEADLINE_S``), which therefore starts
once the call holds its slot (time queued never burns it); past it the call raises
:class:`~engine.errors.JudgeTimeout`. Retries stay inside an LLM judge, whose own cap and deadline are off in a
worker (``make_judge(..., own_limits=False)``): cap, deadline and retries are each applied once per call.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from dataclasses import dataclass, field

from engine.errors import JudgeTimeout
from engine.judges.base import Judge, JudgeRequest, JudgeResult, WrappedJudge

GATE_LANE, EVAL_LANE, SHADOW_LANE = "gate", "evaluations", "shadows"


@dataclass
class BudgetLane:
    """A caller's part of the budget: ``reserved`` slots it always gets back, at most ``cap`` held at once."""

    name: str
    reserved: int
    cap: int
    in_flight: int = 0
    peak: int = 0  # the most slots held at once (for tests and stats)
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)


def eval_slots(total: int, share: float) -> int:
    """The evaluations' slots of ``total``: ``floor(share × total)``, at least 1 and at most ``total − 1`` (the
    gate keeps one). ``total`` ≥ 2 and 0 < ``share`` < 1 are bounds of the settings (engine.settings)."""
    return min(max(1, math.floor(share * total)), total - 1)


class JudgeBudget:
    """``total`` call slots split between the gate lane and the evaluations lane (see the module docstring)."""

    def __init__(self, total: int, eval_share: float, shadow_slots: int = 0) -> None:
        evaluations = eval_slots(total, eval_share)
        self.total = total + shadow_slots
        self.lanes = {
            GATE_LANE: BudgetLane(GATE_LANE, total - evaluations, total),
            EVAL_LANE: BudgetLane(EVAL_LANE, evaluations, evaluations),
            SHADOW_LANE: BudgetLane(SHADOW_LANE, shadow_slots, shadow_slots),
        }
        self._free = self.total

    @property
    def in_flight(self) -> int:
        return self.total - self._free

    def judge(self, inner: Judge, lane: str, deadline_s: float | None) -> Judge:
        """``inner`` with every call holding a slot of ``lane`` while it runs, under ``deadline_s`` from the
        moment it holds the slot (None: no deadline)."""
        return BudgetedJudge(inner, self, self.lanes[lane], deadline_s)

    async def acquire(self, lane: BudgetLane) -> None:
        """Wait for a slot of ``lane`` (at once when one is free, the lane is under its cap and nobody of the
        lane waits ahead)."""
        if not lane.waiting and self._free > 0 and lane.in_flight < lane.cap:
            self._take(lane)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled before it ran: give it back
                self.release(lane)
            elif waiter in lane.waiting:
                lane.waiting.remove(waiter)
            raise

    def release(self, lane: BudgetLane) -> None:
        lane.in_flight -= 1
        self._free += 1
        self._grant()

    def _take(self, lane: BudgetLane) -> None:
        self._free -= 1
        lane.in_flight += 1
        lane.peak = max(lane.peak, lane.in_flight)

    def _grant(self) -> None:
        while self._free > 0 and (lane := self._next_lane()) is not None:
            self._take(lane)
            lane.waiting.popleft().set_result(None)

    def _next_lane(self) -> BudgetLane | None:
        for lane in self.lanes.values():
            while lane.waiting and lane.waiting[0].done():  # cancelled while waiting
                lane.waiting.popleft()
        ready = [lane for lane in self.lanes.values() if lane.waiting and lane.in_flight < lane.cap]
        owed = [lane for lane in ready if lane.in_flight < lane.reserved]
        chosen = owed or ready
        return chosen[0] if chosen else None


class BudgetedJudge(WrappedJudge):
    """A judge whose calls each hold one slot of a :class:`JudgeBudget` lane, then run under the deadline."""

    def __init__(self, inner: Judge, budget: JudgeBudget, lane: BudgetLane, deadline_s: float | None) -> None:
        super().__init__(inner)
        self._budget = budget
        self._lane = lane
        self.deadline_s = deadline_s

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        await self._budget.acquire(self._lane)
        try:
            async with asyncio.timeout(self.deadline_s):
                return await self._inner.evaluate(request)
        except TimeoutError:
            raise JudgeTimeout(f"{self.name}: no answer within {self.deadline_s:g} s") from None
        finally:
            self._budget.release(self._lane)
