"""Progress of a long stage on stderr: ``done/total``, elapsed time and an ETA.

The ETA assumes the remaining steps take as long, on average, as the ones done so far. Lines are
printed at most every ``interval`` seconds (and always for the last step), so a log of a long run
stays short.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO


def format_seconds(seconds: float) -> str:
    """42 -> '42s', 312 -> '5m12s', 3725 -> '1h02m'."""
    s = int(round(max(seconds, 0.0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Counts the steps of one stage and reports them with an ETA."""

    def __init__(self, stage: str, total: int, stream: Optional[TextIO] = None,
                 interval: float = 10.0, clock: Callable[[], float] = time.monotonic):
        if total < 0:
            raise ValueError(f"total must be >= 0, got {total}")
        self.stage, self.total, self.interval, self.clock = stage, total, interval, clock
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.start = clock()
        self._last = None  # time of the last line printed

    def eta(self) -> Optional[float]:
        """Seconds left at the average pace so far (None before the first step)."""
        if self.done == 0:
            return None
        elapsed = self.clock() - self.start
        return elapsed / self.done * max(self.total - self.done, 0)

    def line(self) -> str:
        elapsed = self.clock() - self.start
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta = self.eta()
        tail = "done" if self.done >= self.total else (
            f"ETA {format_seconds(eta)}" if eta is not None else "ETA unknown")
        return (f"{self.stage}: {self.done}/{self.total} ({pct:.0f}%), "
                f"{format_seconds(elapsed)} elapsed, {tail}")

    def step(self, n: int = 1, what: str = "") -> None:
        """Counts `n` finished steps; prints a line when `interval` has passed or at the end."""
        self.done += n
        now = self.clock()
        last = self.done >= self.total
        if last or self._last is None or now - self._last >= self.interval:
            self._last = now
            print(self.line() + (f" ({what})" if what else ""), file=self.stream, flush=True)
