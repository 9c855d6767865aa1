"""A bounded log that keeps its first items and drops old ones in steps: what the worker's history view holds of a
channel (streams/runtime/history.py).

A plain bounded deque forgets one item per new one, so past its cap everything it returns moves with every
item: the first items it still holds change, and so do the numbers counted from them. A :class:`SteppedLog`
pins its first ``head`` items and, when it is full, forgets the ``step`` oldest items after them at once; what
it has forgotten is a :class:`~engine.windows.Gap` (where, how many), so a trajectory window computed over the
log with its gap shows what it would show over the whole history (engine/windows.py) as long as the window's
first part fits in the head and its recent part in what is left after a step. Below its cap it holds and returns
everything, like the deque it replaces. Memory: at most ``cap`` items.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Generic, TypeVar

from engine.errors import ConfigurationError
from engine.windows import Gap

T = TypeVar("T")


class SteppedLog(Generic[T]):
    """At most ``cap`` items: the first ``head`` ever appended, then the newest, the oldest of which are dropped
    ``step`` at a time when an append would exceed ``cap``."""

    __slots__ = ("_head", "_tail", "cap", "dropped", "head_n", "step")

    def __init__(self, cap: int, head: int, step: int) -> None:
        if not 0 <= head < cap or not 1 <= step <= cap - head:
            raise ConfigurationError(f"a stepped log needs 0 <= head < cap and 1 <= step <= cap - head, not "
                                     f"cap={cap}, head={head}, step={step}")  # fmt: skip
        self.cap, self.head_n, self.step = cap, head, step
        self._head: list[T] = []
        self._tail: deque[T] = deque()
        self.dropped = 0  # items forgotten so far, all between the head and the tail

    def append(self, item: T) -> None:
        if len(self._head) < self.head_n and not self._tail:
            self._head.append(item)
            return
        if len(self._head) + len(self._tail) >= self.cap:
            for _ in range(self.step):
                self._tail.popleft()
            self.dropped += self.step
        self._tail.append(item)

    @property
    def head(self) -> Sequence[T]:
        """The first items (the whole log until it first drops)."""
        return self._head

    @property
    def tail(self) -> Sequence[T]:
        return self._tail

    @property
    def gap(self) -> Gap | None:
        """What has been forgotten: ``size`` items after the first ``at`` held; None before the first step."""
        return Gap(len(self._head), self.dropped) if self.dropped else None

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def __iter__(self) -> Iterator[T]:
        return chain(self._head, self._tail)

    def __reversed__(self) -> Iterator[T]:
        return chain(reversed(self._tail), reversed(self._head))


@dataclass(frozen=True, slots=True)
class Held(Generic[T]):
    """Items in order with what is missing among them: ``gap.size`` items after the first ``gap.at``."""

    items: tuple[T, ...]
    gap: Gap | None = None

    def after_gap(self) -> tuple[T, ...]:
        """The items after the gap (all of them without one): a contiguous stretch of the history."""
        return self.items[self.gap.at :] if self.gap is not None else self.items

    def keep(self, wanted: Callable[[T], bool]) -> Held[T]:
        """The items ``wanted`` keeps, the gap moved past the removed items before it."""
        if self.gap is None:
            return Held(tuple(i for i in self.items if wanted(i)))
        before = [i for i in self.items[: self.gap.at] if wanted(i)]
        after = [i for i in self.items[self.gap.at :] if wanted(i)]
        return Held((*before, *after), Gap(len(before), self.gap.size))


def merge_logs(logs: Sequence[SteppedLog[T]], order: Callable[[T], int]) -> Held[T]:
    """The items of several logs of one history in ``order`` (each log already in that order), with one gap.

    Without a gap the items are the logs' merge. Otherwise each log's missing items lie, in ``order``, strictly
    between its last head item and its first tail item; the merged gap spans from the earliest such start to the
    latest such end, and the held items inside that span (from the logs with no gap there) join it, so the
    numbering of every item after the gap stays the one the whole history gives."""
    merged = sorted(chain.from_iterable(logs), key=order)
    gapped = [log for log in logs if log.dropped]
    if not gapped:
        return Held(tuple(merged))
    low = min(order(log.head[-1]) if log.head else float("-inf") for log in gapped)
    high = max(order(log.tail[0]) for log in gapped)
    before = [i for i in merged if order(i) <= low]
    after = [i for i in merged if order(i) >= high]
    inside = len(merged) - len(before) - len(after)
    return Held((*before, *after), Gap(len(before), inside + sum(log.dropped for log in gapped)))
