"""A progress bar and a closing summary for long commands, without a dependency."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``[#####-----]  52%  5,200/10,000  1,830/s`` on one line of stderr.

    On a terminal the line redraws in place (at most ten times a second); elsewhere (CI
    logs) it prints a line at each tenth of the way, so logs stay short.
    """

    def __init__(
        self, label: str, total: int | None, stream: TextIO | None = None, *, shown: bool = True
    ) -> None:
        """``shown=False``: draws nothing, so a quiet command runs the same loop."""
        self.label = label
        self.total = total
        self.done = 0
        self._stream = stream or sys.stderr
        self._interactive = self._stream.isatty()
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._last_tenth = -1
        self._shown = shown

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        if not self._shown:
            return
        now = time.monotonic()
        if self._interactive:
            if now - self._last_draw >= 0.1:
                self._last_draw = now
                self._stream.write("\r" + self.line())
                self._stream.flush()
        elif self.total:
            tenth = min(10, self.done * 10 // self.total)
            if tenth != self._last_tenth:
                self._last_tenth = tenth
                self._stream.write(self.line() + "\n")

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = f"{self.done / elapsed:,.0f}/s"
        if not self.total:
            return f"{self.label}: {self.done:,} {rate}"
        fraction = min(1.0, self.done / self.total)
        bar = "#" * int(fraction * 30)
        return f"{self.label} [{bar:<30}] {fraction:4.0%} {self.done:,}/{self.total:,} {rate}"

    def finish(self) -> float:
        """Draw the final state (when shown); return the elapsed seconds."""
        if self._shown:
            if self._interactive:
                self._stream.write("\r" + self.line() + "\n")
            elif self.total and self._last_tenth != 10:
                self._stream.write(self.line() + "\n")
            self._stream.flush()
        return time.monotonic() - self._started


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``1 session``, ``2 sessions``, ``1,000 summaries`` (``plural`` when not noun + s)."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"
