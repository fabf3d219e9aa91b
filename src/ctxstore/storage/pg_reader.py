"""SessionReader on PostgreSQL: one REPEATABLE READ, read-only transaction."""

from __future__ import annotations

from typing import Any

from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER, rows_to_messages
from ctxstore.models import ConsultationState, Message, Summary, UserProfile, Versioned
from ctxstore.storage import pg_documents as docs
from ctxstore.storage.base import SessionHead, StoredMessage
from ctxstore.storage.pg_sql import LIVE

_COLUMNS = ", ".join(MESSAGE_COLUMN_ORDER)

HEAD = f"""
SELECT version, message_count, created_at, user_id FROM sessions AS s
 WHERE session_id = $1 AND {LIVE}
"""

# A backward range scan of the primary key: reads only the rows the window takes.
NEWEST = f"""
SELECT {_COLUMNS}, token_count FROM messages
 WHERE session_id = $1 AND seq < $2
 ORDER BY seq DESC LIMIT $3
"""

# The same, cut after the first message whose stored count no longer fits $4: the window
# sum streams over the backward index scan, so only $3 rows are read at most, and only
# the ones the window needs are sent.  Uncounted (older-format) messages count as 0 here;
# the caller counts them exactly and asks for more if it must.
NEWEST_WITHIN = f"""
SELECT {_COLUMNS}, token_count FROM (
    SELECT {_COLUMNS}, token_count,
           sum(coalesce(token_count, 0)) OVER (ORDER BY seq DESC)
             - coalesce(token_count, 0) AS before_me
      FROM messages
     WHERE session_id = $1 AND seq < $2
     ORDER BY seq DESC LIMIT $3
) AS window_rows
 WHERE before_me < $4
 ORDER BY seq DESC
"""

SPAN = f"""
SELECT {_COLUMNS} FROM messages
 WHERE session_id = $1 AND seq >= $2 AND seq < $3
 ORDER BY seq
"""

# Messages without a stored count (older formats) are estimated from their length: a
# trigger threshold, not a budget, depends on this.
TOKEN_TOTAL = """
SELECT count(*), coalesce(sum(coalesce(token_count, char_length(content) + 16)), 0)
  FROM messages WHERE session_id = $1 AND seq > $2
"""

_TOKEN_COUNT = len(MESSAGE_COLUMN_ORDER)


class PostgresSessionReader:
    def __init__(self, driver: Any, session_id: str) -> None:
        self._driver = driver
        self.session_id = session_id

    async def head(self) -> SessionHead:
        row = await self._driver.fetchrow(HEAD, self.session_id)
        if row is None:
            return SessionHead(False, 0, 0, None, None)
        version, count, created_at, user_id = row
        return SessionHead(True, int(version), int(count), created_at, user_id)

    async def latest_summary(self) -> Summary | None:
        row = await self._driver.fetchrow(docs.LATEST_SUMMARY, self.session_id)
        return docs.summary_from_row(row) if row is not None else None

    async def state(self) -> Versioned[ConsultationState] | None:
        row = await self._driver.fetchrow(docs.CURRENT_STATE, self.session_id)
        return docs.state_from_row(row, self.session_id) if row is not None else None

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None:
        row = await self._driver.fetchrow(docs.CURRENT_PROFILE, user_id)
        return docs.profile_from_row(row, user_id) if row is not None else None

    async def newest(
        self, before: int, limit: int, token_budget: int | None = None
    ) -> list[StoredMessage]:
        if token_budget is None:
            rows = await self._driver.fetch(NEWEST, self.session_id, before, limit)
        else:
            rows = await self._driver.fetch(
                NEWEST_WITHIN, self.session_id, before, limit, token_budget
            )
        messages = rows_to_messages(rows, session_id=self.session_id)
        return [
            StoredMessage(row[0], message, row[_TOKEN_COUNT])
            for row, message in zip(rows, messages, strict=True)
        ]

    async def span(self, start: int, stop: int) -> list[Message]:
        rows = await self._driver.fetch(SPAN, self.session_id, start, stop)
        return rows_to_messages(rows, session_id=self.session_id)

    async def token_total(self, after: int) -> tuple[int, int]:
        count, tokens = await self._driver.fetchrow(TOKEN_TOTAL, self.session_id, after)
        return int(count), int(tokens)
