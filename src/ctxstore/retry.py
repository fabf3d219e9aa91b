"""The one retry policy: an operation run again when it failed in a way a new try can fix.

Each place that retries names its policy once, here or beside it: what failure is
retried (``on``, and ``when`` for a finer test), how many tries in all (``attempts``)
and how long to wait between them (``wait``).  ``run``/``run_sync`` take the operation
and two hooks of the call site: ``retrying`` runs before each new try (clear a cache,
count the retry, or re-raise to stop), ``exhausted`` builds the error raised after the
last try (by default the last failure itself).  The operation is only ever run again
after a failure that changed nothing: a write is retried only where its transaction
rolled back.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

Failure = TypeVar("Failure", bound=BaseException)
T = TypeVar("T")
P = ParamSpec("P")


def no_wait(_attempt: int) -> float:
    return 0.0


def linear(step: float) -> Callable[[int], float]:
    """``step`` seconds after the first failure, twice that after the second, ..."""
    return lambda attempt: step * attempt


def jittered(step: float, cap: float) -> Callable[[int], float]:
    """A random pause up to ``step`` per failure so far, at most ``cap``: competing
    callers spread out instead of meeting again."""
    return lambda attempt: random.uniform(0, min(cap, step * attempt))


@dataclass(frozen=True)
class Retry(Generic[Failure]):
    """At most ``attempts`` tries of an operation that failed with ``on`` (and ``when``)."""

    on: type[Failure] | tuple[type[Failure], ...]
    attempts: int
    #: Seconds to wait after the n-th failure (n from 1) before the next try.
    wait: Callable[[int], float] = no_wait
    #: A finer test of a failure of type ``on``: False lets it through at once.
    when: Callable[[Failure], bool] | None = None

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("a retry policy needs at least one attempt")

    def _pause(
        self,
        attempt: int,
        error: Failure,
        retrying: Callable[[Failure], None] | None,
        exhausted: Callable[[Failure], BaseException] | None,
    ) -> float:
        """After the ``attempt``-th failure: the wait before the next try, or raise."""
        if self.when is not None and not self.when(error):
            raise error
        if attempt >= self.attempts:
            if exhausted is None:
                raise error
            raise exhausted(error) from error
        if retrying is not None:
            retrying(error)
        return self.wait(attempt)

    async def run(
        self,
        operation: Callable[[], Awaitable[T]],
        *,
        retrying: Callable[[Failure], None] | None = None,
        exhausted: Callable[[Failure], BaseException] | None = None,
    ) -> T:
        attempt = 1
        while True:
            try:
                return await operation()
            except self.on as error:
                pause = self._pause(attempt, error, retrying, exhausted)
            if pause > 0:
                await asyncio.sleep(pause)
            attempt += 1

    def run_sync(
        self,
        operation: Callable[[], T],
        *,
        retrying: Callable[[Failure], None] | None = None,
        exhausted: Callable[[Failure], BaseException] | None = None,
    ) -> T:
        attempt = 1
        while True:
            try:
                return operation()
            except self.on as error:
                pause = self._pause(attempt, error, retrying, exhausted)
            if pause > 0:
                time.sleep(pause)
            attempt += 1

    def __call__(self, function: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        """The policy as a decorator of a coroutine function (no hooks)."""

        @functools.wraps(function)
        async def retried(*args: P.args, **kwargs: P.kwargs) -> T:
            return await self.run(lambda: function(*args, **kwargs))

        return retried


__all__: list[Any] = ["Retry", "jittered", "linear", "no_wait"]
