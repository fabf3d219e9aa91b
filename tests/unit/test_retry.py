"""The one retry policy (ctxstore/retry.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from ctxstore.errors import ConflictError, StorageTimeoutError, StorageUnavailableError
from ctxstore.retry import Retry, jittered, linear


def failing(times: int, error: BaseException) -> tuple[list[int], Callable[[], Awaitable[str]]]:
    calls: list[int] = []

    async def operation() -> str:
        calls.append(len(calls) + 1)
        if len(calls) <= times:
            raise error
        return "done"

    return calls, operation


def test_a_failure_is_tried_again_up_to_the_attempts() -> None:
    calls, operation = failing(2, ConflictError("busy"))
    policy = Retry(ConflictError, attempts=3)
    assert asyncio.run(policy.run(operation)) == "done"
    assert calls == [1, 2, 3]


def test_the_last_failure_is_raised_or_what_exhausted_builds() -> None:
    calls, operation = failing(5, ConflictError("busy"))
    policy = Retry(ConflictError, attempts=3)
    with pytest.raises(ConflictError, match="busy"):
        asyncio.run(policy.run(operation))
    assert calls == [1, 2, 3]
    _, again = failing(5, ConflictError("busy"))
    with pytest.raises(ConflictError, match="gave up") as caught:
        asyncio.run(policy.run(again, exhausted=lambda _error: ConflictError("gave up")))
    assert isinstance(caught.value.__cause__, ConflictError)


def test_other_failures_and_those_when_refuses_pass_through_at_once() -> None:
    policy = Retry(
        StorageUnavailableError,
        attempts=2,
        when=lambda error: not isinstance(error, StorageTimeoutError),
    )
    calls, operation = failing(1, StorageTimeoutError("slow"))
    with pytest.raises(StorageTimeoutError):
        asyncio.run(policy.run(operation))
    assert calls == [1]
    calls, operation = failing(1, ValueError("bug"))
    with pytest.raises(ValueError, match="bug"):
        asyncio.run(policy.run(operation))
    assert calls == [1]


def test_retrying_runs_before_each_new_try_and_may_stop_it() -> None:
    seen: list[str] = []
    calls, operation = failing(2, ConflictError("busy"))
    policy = Retry(ConflictError, attempts=3)
    asyncio.run(policy.run(operation, retrying=lambda error: seen.append(str(error))))
    assert seen == ["busy", "busy"]

    def stop(error: ConflictError) -> None:
        raise error

    calls, operation = failing(2, ConflictError("busy"))
    with pytest.raises(ConflictError):
        asyncio.run(policy.run(operation, retrying=stop))
    assert calls == [1]


def test_the_sync_form_waits_as_told(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("ctxstore.retry.time.sleep", slept.append)
    calls: list[int] = []

    def operation() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise ConflictError("busy")
        return len(calls)

    assert Retry(ConflictError, attempts=8, wait=linear(0.1)).run_sync(operation) == 3
    assert slept == pytest.approx([0.1, 0.2])


def test_jittered_waits_stay_under_their_cap() -> None:
    wait = jittered(0.002, cap=0.05)
    assert all(0 <= wait(n) <= min(0.05, 0.002 * n) for n in range(1, 200))


def test_the_decorator_form() -> None:
    calls: list[int] = []

    @Retry(ConflictError, attempts=2)
    async def flaky(value: int) -> int:
        calls.append(value)
        if len(calls) == 1:
            raise ConflictError("busy")
        return value * 2

    assert asyncio.run(flaky(21)) == 42
    assert calls == [21, 21]


def test_a_policy_needs_an_attempt() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Retry(ConflictError, attempts=0)
