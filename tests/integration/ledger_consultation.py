"""A 100-turn consultation whose every context build is recorded in the ledger, as issue
52 describes it: an 8,000-token budget the window outgrows, a summary every 20 turns,
state changes, a profile, and a delta save at turn 50 that edits an old message."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ctxstore import Message
from ctxstore.context.builder import ContextBuilder
from ctxstore.storage.store import VersionedStorage

_COMPLAINTS = ["膝盖有下坠感", "腰背酸痛", "肩膀抬不起来", "脚踝扭伤后肿胀", "跑步后小腿抽筋"]
_DETAILS = [
    "走路时明显，上下楼梯更严重",
    "早上起床时僵硬，活动后缓解",
    "伴随轻微的肿胀和发热感",
    "没有外伤史，但最近运动量增加了",
    "晚上睡觉时会被疼醒，翻身困难",
    "按压时有明显的压痛点",
]
_QUESTIONS = ["是否伴随疼痛或肿胀？", "疼痛大概持续多久了？", "有没有麻木或无力的感觉？"]
_STAGES = ["greeting", "collecting_details", "assessing", "advising"]


@dataclass(frozen=True)
class RecordedTurn:
    turn_id: str
    text: str


def _sentence(rng: random.Random, turn: int, extra: str = "") -> str:
    parts = [rng.choice(_COMPLAINTS), rng.choice(_DETAILS), rng.choice(_DETAILS)]
    return f"第{turn}轮：" + "，".join(parts) + extra + "。"


async def consult(
    storage: VersionedStorage,
    session_id: str,
    user_id: str,
    *,
    turns: int = 100,
    seed: int = 52,
    texts: list[str] | None = None,
) -> list[RecordedTurn]:
    """Every turn's recorded contract text, as the builder returned it.  ``texts``:
    message contents to weave in (a property test's), cycled."""
    rng = random.Random(seed)
    builder = ContextBuilder(storage, record=True)
    await storage.save_profile(user_id, {"age": 34, "gender": "female", "exercise_habit": "跑步"})
    messages: list[Message] = []
    recorded: list[RecordedTurn] = []
    for turn in range(1, turns + 1):
        extra = texts[turn % len(texts)] if texts else ""
        turn_id = f"turn-{turn:03d}"
        messages += [
            Message(role="user", content=_sentence(rng, turn, extra), turn_id=turn_id),
            Message(role="assistant", content=rng.choice(_QUESTIONS) + extra, turn_id=turn_id),
        ]
        if turn == 50:  # a delta save that edits an old message
            messages[6] = Message(role="user", content="（已更正）" + messages[6].content)
            await storage.save(session_id, messages, user_id=user_id)
        else:
            await storage.append(session_id, messages[-2:], user_id=user_id)
        if turn % 20 == 0:
            summary = "；".join(_sentence(rng, n) for n in range(6))
            await storage.save_summary(session_id, summary, covers_until=len(messages) - 9)
        if turn % 7 == 0:
            await storage.save_state(
                session_id,
                {
                    "stage": _STAGES[(turn // 7) % len(_STAGES)],
                    "chief_complaint": rng.choice(_COMPLAINTS),
                    "body_parts": ["膝盖"],
                    "symptoms": [rng.choice(_DETAILS)[:6]],
                    "pain_level": turn % 10,
                },
            )
        next_turn = f"turn-{turn + 1:03d}"
        text = await builder.build_json(
            session_id, next_turn, _sentence(rng, turn + 1, extra), token_budget=8000
        )
        recorded.append(RecordedTurn(next_turn, text))
    return recorded
