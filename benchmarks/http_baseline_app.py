"""The floor bench_http_wrk measures ctxstore serve against: a minimal Starlette app on
asyncpg, under the same uvicorn, doing the same work with nothing else.

- ``POST /v1/sessions/{id}/messages``: the body's messages appended as rows of its own
  table (role, content, turn id and time as sent), the session's counter bumped (one
  transaction of two statements, as ctxstore's append); ``?one=1``: both in one
  statement, the floor of one round trip;
- ``POST /v1/sessions/{id}/context?window=N``: the newest N rows of the session read
  and their tokens counted with tiktoken's cl100k_base (what a context build must at
  least do; N: as many messages as ctxstore's context of the session includes, 40 if
  not given).

No authentication, validation, versions or problems.  $BASELINE_DATABASE_URL names the
database (its tables are created at start, dropped by the benchmark).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ctxstore.tokens import load_encoding  # tiktoken's cl100k_base, offline

ENCODING = load_encoding("cl100k_base")
SCHEMA = """
CREATE TABLE IF NOT EXISTS baseline_sessions (id text PRIMARY KEY, count int NOT NULL);
CREATE TABLE IF NOT EXISTS baseline_messages (
    session_id text NOT NULL, seq int NOT NULL, role text NOT NULL, content text NOT NULL,
    turn_id text, ts text, PRIMARY KEY (session_id, seq));
"""
APPEND_SESSION = """
INSERT INTO baseline_sessions AS s (id, count) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET count = s.count + $2 RETURNING count
"""
APPEND_ROWS = """
INSERT INTO baseline_messages (session_id, seq, role, content, turn_id, ts)
SELECT $1, $2 + n, r, c, t, ts
FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS m(r, c, t, ts, n)
"""
APPEND_IN_ONE = """
WITH bumped AS (
    INSERT INTO baseline_sessions AS s (id, count) VALUES ($1, $2)
    ON CONFLICT (id) DO UPDATE SET count = s.count + $2 RETURNING count
), added AS (
    INSERT INTO baseline_messages (session_id, seq, role, content, turn_id, ts)
    SELECT $1, bumped.count - $2 + n, r, c, t, ts
    FROM bumped,
         unnest($3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY AS m(r, c, t, ts, n)
)
SELECT count FROM bumped
"""
WINDOW = """
SELECT role, content FROM baseline_messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2
"""


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    pool = await asyncpg.create_pool(os.environ["BASELINE_DATABASE_URL"], min_size=1, max_size=10)
    async with pool.acquire() as connection:
        await connection.execute(SCHEMA)
    app.state.pool = pool
    yield
    await pool.close()


async def append(request: Request) -> Response:
    body = json.loads(await request.body())
    messages = body["messages"]
    session, added = request.path_params["id"], len(messages)
    columns = (
        [m["role"] for m in messages],
        [m["content"] for m in messages],
        [m.get("turn_id") for m in messages],
        [m.get("timestamp") for m in messages],
    )
    async with request.app.state.pool.acquire() as connection:
        if request.query_params.get("one"):
            count = await connection.fetchval(APPEND_IN_ONE, session, added, *columns)
        else:
            async with connection.transaction():
                count = await connection.fetchval(APPEND_SESSION, session, added)
                await connection.execute(APPEND_ROWS, session, count - added, *columns)
    return Response(json.dumps({"version": count}), media_type="application/json")


async def context(request: Request) -> Response:
    body = json.loads(await request.body())
    async with request.app.state.pool.acquire() as connection:
        window = int(request.query_params.get("window", "40"))
        rows = await connection.fetch(WINDOW, request.path_params["id"], window)
    tokens = sum(len(ENCODING.encode(row["content"])) for row in rows)
    tokens += len(ENCODING.encode(body["user_message"]))
    recent = [{"role": row["role"], "content": row["content"]} for row in reversed(rows)]
    return Response(
        json.dumps({"recent_messages": recent, "tokens": tokens}, ensure_ascii=False),
        media_type="application/json",
    )


app = Starlette(
    routes=[
        Route("/v1/sessions/{id}/messages", append, methods=["POST"]),
        Route("/v1/sessions/{id}/context", context, methods=["POST"]),
    ],
    lifespan=lifespan,
)
