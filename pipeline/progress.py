"""Progress of a run: a redrawn bar on a terminal, periodic plain log lines otherwise.

Counts are games (rows: one deal played by one policy under one variant).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    """``1:02:03`` / ``2:03`` for a duration in seconds; ``?`` if unknown.

    >>> format_duration(3723)
    '1:02:03'
    >>> format_duration(59.6)
    '1:00'
    """
    if seconds != seconds or seconds == float("inf") or seconds < 0:
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Reports ``update(done)`` calls for a run of ``total`` games.

    On a terminal: one line redrawn at most ``redraw`` times a second
    (bar, games done, games per second, time left once the caller has an
    estimate worth showing). Elsewhere (a log file, a Prefect worker): one
    plain line every ``interval`` seconds and at the end.
    """

    def __init__(self, total: int, *, label: str = "", stream: TextIO | None = None,
                 interval: float = 10.0, tty: bool | None = None, already: int = 0):
        self.total = max(int(total), 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval if not self.tty else 0.1
        self.already = already  # games present before this run started (not counted in the rate)
        self.start = time.monotonic()
        self.last_emit = 0.0
        self.done = 0
        self.left: float | None = None

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        frac = self.done / self.total if self.total else 1.0
        head = f"{self.label}: " if self.label else ""
        if self.done >= self.total:
            when = f"done in {format_duration(elapsed)}"
        elif self.left is None:
            when = "time left not known yet"
        else:
            when = f"about {format_duration(self.left)} left"
        if self.tty:
            width = 24
            filled = int(round(frac * width))
            bar = "#" * filled + "." * (width - filled)
            return f"{head}[{bar}] {self.done:,}/{self.total:,} games {frac:6.1%}  {rate:,.0f}/s  {when}"
        return f"{head}{self.done:,} of {self.total:,} games ({frac:.1%}), {rate:,.0f} games/s, {when}"

    def update(self, done: int, *, left: float | None = None, force: bool = False) -> None:
        """Record ``done`` games; ``left``: the caller's estimate of seconds left, or None while
        there is none worth showing (players differ in cost by 1000x, so games per second alone
        predict nothing; see pipeline.execute.WorkEstimate)."""
        self.done = int(done)
        self.left = left
        now = time.monotonic()
        if not force and now - self.last_emit < self.interval:
            return
        self.last_emit = now
        if self.tty:
            self.stream.write("\r" + self.line() + "\x1b[K")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.update(self.done, left=self.left, force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
