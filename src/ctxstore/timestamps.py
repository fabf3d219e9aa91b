"""Message timestamps as text, exactly: what Go and Python write, read without change.

ctxstore keeps an instant with its UTC offset, to the nanosecond: a datetime, or for a
time with digits below the microsecond a :class:`NanoDatetime` (a datetime that also
keeps those three digits); on PostgreSQL a timestamptz, the offset in seconds and the
nanoseconds below the microsecond.  Go's encoding/json writes ``time.Time`` as RFC 3339
with up to nine fractional digits; Python's isoformat writes up to six and may put seconds
in the offset.  :func:`parse_timestamp` reads both without altering them: text that could
only be read by changing it (digits below the nanosecond, a year outside 1-9999) is
refused.  :func:`go_timestamp` writes what Go's ``MarshalJSON`` would for the same time,
and :func:`postgres_timestamp` what PostgreSQL reads exactly (to the microsecond;
:func:`nanoseconds_of` is the rest).  Nothing here depends on the process's time zone.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, Self

from ctxstore.errors import InvalidMessageError

# Date and time, a fraction of any length, and an offset: Z, +hh:mm, +hhmm or (Python)
# +hh:mm:ss[.ffffff].  Only ASCII digits ([0-9], not \d, which matches any script's).
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:[.,]([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):?([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?)?"
)

#: The first and last instants a datetime (and so ctxstore) holds, in UTC.  asyncpg sends
#: exactly these two as -infinity and infinity, which is why rows carry them as text.
FIRST_INSTANT = datetime(1, 1, 1, tzinfo=UTC)
LAST_INSTANT = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class NanoDatetime(datetime):
    """A datetime that also keeps ``nanosecond``: the digits below its microsecond (1-999).

    What Go's ``time.Time`` holds and marshals.  Compared, hashed and computed with as the
    datetime it extends (the microsecond instant); ``isoformat()`` and ``str()`` write all
    nine digits (``isoformat(timespec=...)`` what the timespec asks), and a Message
    compares and stores them.  A datetime computed from it
    (``astimezone``, ``+ timedelta``, ``replace``) is to the microsecond: its
    ``nanosecond`` is 0.  Build one with :func:`with_nanoseconds`.
    """

    nanosecond: int = 0

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        if not self.nanosecond or timespec != "auto":
            return super().isoformat(sep, timespec)
        text = super().isoformat(sep, "microseconds")
        end = 10 + len(sep) + 15  # date, sep, HH:MM:SS.ffffff (years have four digits)
        return f"{text[:end]}{self.nanosecond:03d}{text[end:]}"

    def __str__(self) -> str:
        return self.isoformat(" ")

    def __repr__(self) -> str:
        return f"with_nanoseconds({datetime(*self._fields()).__repr__()}, {self.nanosecond})"

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (with_nanoseconds, (datetime(*self._fields()), self.nanosecond))

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.year, self.month, self.day, self.hour, self.minute, self.second,
            self.microsecond, self.tzinfo,
        )  # fmt: skip

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


_PICKLED = datetime.__reduce__


def with_nanoseconds(moment: datetime, nanosecond: int) -> datetime:
    """``moment`` (to the microsecond) with ``nanosecond`` (0-999) below it: a
    NanoDatetime, or ``moment`` itself for 0."""
    if not nanosecond:
        return moment
    if not 0 < nanosecond < 1000:
        raise ValueError(f"nanosecond must be within 0-999, not {nanosecond}")
    # From datetime's pickled state (date, time and fold in bytes, then the zone): a third
    # of the field-by-field constructor's time, and loads build one per such message.
    precise = NanoDatetime(*_PICKLED(moment)[1])
    precise.nanosecond = nanosecond
    return precise


def nanoseconds_of(moment: datetime | None) -> int:
    """The nanoseconds below ``moment``'s microsecond (0 for a plain datetime)."""
    return getattr(moment, "nanosecond", 0) if moment is not None else 0


def parse_timestamp(text: str) -> datetime | str:
    """The exact datetime ``text`` writes, or ``text`` itself when it is not an ISO 8601
    time with an offset (the model then rejects it, or reads another form as before).

    InvalidMessageError when it is one but could only be held by changing it.
    """
    found = _TIMESTAMP.fullmatch(text)
    if found is None or (found[8] is None and found[9] is None):
        return text
    text, nanosecond = _split_nanoseconds(text, found)
    if found[8] == "z":
        text = text[:-1] + "Z"
    # fromisoformat (C, exact to the microsecond) reads what the pattern admits, but
    # takes a minute of 60 for an hour: the pattern's groups are checked first.
    if found[9] is not None and (found[11] > "59" or (found[12] or "00") > "59"):
        raise InvalidMessageError(f"timestamp {found[0]!r} has no such UTC offset")
    try:
        return with_nanoseconds(datetime.fromisoformat(text), nanosecond)
    except ValueError as error:
        raise InvalidMessageError(
            f"timestamp {found[0]!r} is not a time ctxstore can hold: {error}"
        ) from error


def _split_nanoseconds(text: str, found: re.Match[str]) -> tuple[str, int]:
    """``text`` with its fraction cut to microseconds (what fromisoformat reads), and the
    nanoseconds below them."""
    fraction = found[7]
    if fraction is None or len(fraction) <= 6:
        return text, 0
    if fraction[9:].strip("0"):
        raise InvalidMessageError(
            f"timestamp {text!r} has digits below the nanosecond: ctxstore keeps "
            "nanoseconds (as Go's time.Time), so it would be changed"
        )
    nanosecond = int(fraction[6:9].ljust(3, "0"))
    return text[: found.start(7) + 6] + text[found.end(7) :], nanosecond


def go_timestamp(moment: datetime) -> str:
    """What Go's ``time.Time.MarshalJSON`` writes for ``moment``: RFC 3339, ``Z`` for UTC,
    the fraction without trailing zeros.

    RFC 3339 offsets are whole minutes; Go drops an offset's seconds and so writes another
    instant: InvalidMessageError instead (the storage rules already refuse such offsets).
    """
    # From datetime's own isoformat (C: a context build writes one for every message):
    # date and time in 19 characters, ".ffffff" when there are microseconds, then the
    # offset, "+hh:mm" when it is whole minutes (else seconds follow; none: no offset).
    text = _isoformat(moment)
    microsecond = moment.microsecond
    cut = 26 if microsecond else 19
    zone = text[cut:]
    if len(zone) != 6:
        if not zone:
            raise InvalidMessageError(f"timestamp {moment.isoformat()} has no UTC offset")
        raise InvalidMessageError(
            f"timestamp {moment.isoformat()}: RFC 3339 (Go) has no seconds in a UTC offset"
        )
    nanosecond = getattr(moment, "nanosecond", 0)
    if nanosecond:
        head = f"{text[:19]}.{microsecond:06d}{nanosecond:03d}".rstrip("0")
    elif microsecond:
        head = text[:26].rstrip("0")
    else:
        head = text[:19]
    return head + ("Z" if zone == "+00:00" else zone)


#: datetime's own isoformat, which a NanoDatetime's leaves as it is (go_timestamp adds the
#: nanoseconds itself).
_isoformat = datetime.isoformat


def postgres_timestamp(moment: datetime | None) -> str | None:
    """``moment`` as the text a timestamptz reads exactly, whatever the session's TimeZone.

    Sent as text because asyncpg sends the first and last instants as -infinity and
    infinity; in UTC, because PostgreSQL refuses offsets of 16 hours or more, which Go and
    Python allow (the row keeps the offset apart).  An explicit offset leaves PostgreSQL
    nothing to interpret.
    """
    return None if moment is None else moment.astimezone(UTC).isoformat(timespec="microseconds")


def activity_time(moment: datetime | None) -> datetime | None:
    """``moment`` for a session's activity columns, sent as a datetime: the two instants
    asyncpg would send as infinities move one microsecond inwards (a session statistic,
    not a message's own time)."""
    if moment is None:
        return None
    if moment == FIRST_INSTANT:
        return FIRST_INSTANT + _MICROSECOND
    if moment == LAST_INSTANT:
        return LAST_INSTANT - _MICROSECOND
    return moment
