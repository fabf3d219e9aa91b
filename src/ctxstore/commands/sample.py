"""``ctxstore seed-sample``: realistic consultations, written through the public API.

Chinese and English sports-injury consultations with varied complaints, stages (some
stop early, as real users do), red flags and lengths, spread over the last weeks.
Deterministic for a given seed.  Used by the tests, the benchmarks and the demo.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ctxstore.context.compression import extractive_summarizer
from ctxstore.models import Message
from ctxstore.progress import Progress
from ctxstore.storage.store import VersionedStorage

STAGES = ("greeting", "collecting_details", "assessing", "advising", "completed")


@dataclass(frozen=True)
class Complaint:
    chief_complaint: str
    body_parts: tuple[str, ...]
    symptoms: tuple[str, ...]
    opening: str
    details: tuple[str, ...]
    aggravating: tuple[str, ...]


ZH = (
    Complaint(
        "膝盖下坠感",
        ("膝盖",),
        ("下坠感", "打软腿"),
        "我膝盖有下坠感",
        ("走路的时候比较明显", "上下楼梯的时候会突然打软", "打篮球扭过一下"),
        ("走路", "下楼梯"),
    ),
    Complaint(
        "脚踝扭伤",
        ("脚踝",),
        ("肿胀", "疼痛"),
        "跑步的时候脚踝扭了一下",
        ("外侧肿起来了", "走路有点疼", "昨天晚上发生的"),
        ("走路", "跑步"),
    ),
    Complaint(
        "腰痛",
        ("腰部",),
        ("酸痛", "僵硬"),
        "最近腰一直很酸",
        ("久坐以后更严重", "早上起床比较僵", "弯腰的时候疼"),
        ("久坐", "弯腰"),
    ),
    Complaint(
        "肩膀疼痛",
        ("肩膀",),
        ("疼痛", "活动受限"),
        "右边肩膀抬起来会疼",
        ("打羽毛球以后开始的", "举过头顶最疼", "晚上侧睡会痛"),
        ("举手", "投掷"),
    ),
    Complaint(
        "足底疼痛",
        ("足底", "脚跟"),
        ("晨起疼痛",),
        "早上下床第一步脚跟特别疼",
        ("走一会儿会好一些", "最近跑量增加了", "已经两周了"),
        ("晨起", "跑步"),
    ),
)
EN = (
    Complaint(
        "knee gives way",
        ("knee",),
        ("instability", "clicking"),
        "My knee feels like it gives way",
        (
            "It happens mostly on stairs.",
            "I twisted it playing football.",
            "There's a click sometimes.",
        ),
        ("stairs", "pivoting"),
    ),
    Complaint(
        "ankle sprain",
        ("ankle",),
        ("swelling", "pain"),
        "I rolled my ankle on a run",
        ("The outside is swollen.", "It hurts to walk.", "It happened yesterday."),
        ("walking",),
    ),
    Complaint(
        "lower back pain",
        ("lower back",),
        ("aching", "stiffness"),
        "My lower back has been aching",
        ("Sitting makes it worse.", "It's stiff in the morning.", "Bending hurts."),
        ("sitting",),
    ),
    Complaint(
        "runner's knee",
        ("knee",),
        ("anterior knee pain",),
        "The front of my knee hurts when I run",
        ("It started after a long run.", "Downhill is the worst.", "About three weeks now."),
        ("running", "squatting"),
    ),
)
RED_FLAGS_ZH = ("无法负重", "夜间痛醒", "发热", "腿部麻木无力")
RED_FLAGS_EN = ("unable to bear weight", "night pain", "fever", "numbness")
ANSWERS_ZH = (
    "持续多久了？",
    "是否伴随疼痛或肿胀？",
    "之前有没有受过伤？",
    "疼痛大概几分（0-10）？",
    "什么情况下会加重？",
    "有没有麻木或者发热？",
)
ANSWERS_EN = (
    "How long has this been going on?",
    "Is there pain or swelling?",
    "Any injury before?",
    "How bad is the pain from 0 to 10?",
    "What makes it worse?",
    "Any numbness or fever?",
)


@dataclass
class SeedReport:
    sessions: int = 0
    messages: int = 0
    state_versions: int = 0
    summaries: int = 0
    red_flag_sessions: int = 0
    seconds: float = 0.0
    stages: dict[str, int] = field(default_factory=dict)
    #: Consultations of this seed the database held whole already: left as they are.
    already: int = 0

    def summary(self) -> str:
        rate = self.sessions / self.seconds if self.seconds else 0.0
        stages = ", ".join(f"{stage} {count:,}" for stage, count in self.stages.items())
        return (
            f"seeded {self.sessions:,} consultations in {self.seconds:.1f} s ({rate:,.0f}/s): "
            f"{self.messages:,} messages, {self.state_versions:,} state versions, "
            f"{self.summaries:,} summaries, {self.red_flag_sessions:,} with red flags\n"
            f"final stages: {stages}"
            + (
                f"\n{self.already:,} consultations of this seed were there already: left "
                "as they are (another --seed writes others)"
                if self.already
                else ""
            )
        )


@dataclass(frozen=True)
class SampleConsultation:
    session_id: str
    user_id: str
    messages: list[Message]
    states: list[dict[str, Any]]
    profile: dict[str, Any]


def sample_consultation(
    index: int, seed: int = 7, now: datetime | None = None
) -> SampleConsultation:
    """The ``index``-th sample consultation (the same for the same seed)."""
    rng = random.Random(seed * 1_000_003 + index)
    chinese = rng.random() < 0.7
    complaint = rng.choice(ZH if chinese else EN)
    answers = ANSWERS_ZH if chinese else ANSWERS_EN
    final_stage = rng.choices(range(len(STAGES)), weights=(8, 22, 25, 25, 20))[0]
    red_flags = (
        [rng.choice(RED_FLAGS_ZH if chinese else RED_FLAGS_EN)] if rng.random() < 0.12 else []
    )
    turns = rng.randint(1, 3) + 2 * final_stage
    started = (now or datetime.now(UTC)) - timedelta(
        days=rng.uniform(0, 56), hours=rng.uniform(0, 24)
    )
    messages = _sample_messages(rng, complaint, answers, turns, started)
    states = [
        _sample_state(rng, complaint, stage_index, red_flags)
        for stage_index in range(final_stage + 1)
    ]
    profile: dict[str, Any] = {
        "age": rng.randint(16, 70),
        "gender": rng.choice(("female", "male")),
        "exercise_habit": rng.choice(("跑步", "篮球", "健身", "running", "football", None)),
        "known_limitations": [],
    }
    return SampleConsultation(
        f"sample-{seed}-{index:07d}", f"user-{seed}-{index % 9973:05d}", messages, states, profile
    )


def _sample_messages(
    rng: random.Random,
    complaint: Complaint,
    answers: tuple[str, ...],
    turns: int,
    started: datetime,
) -> list[Message]:
    stamp = started
    messages: list[Message] = []
    for turn in range(turns):
        question = complaint.opening if turn == 0 else rng.choice(complaint.details)
        for role, content in (("user", question), ("assistant", rng.choice(answers))):
            messages.append(
                Message(role=role, content=content, turn_id=f"turn_{turn + 1:04d}", timestamp=stamp)
            )
            stamp += timedelta(seconds=rng.randint(8, 150))
    return messages


def _sample_state(
    rng: random.Random, complaint: Complaint, stage_index: int, red_flags: list[str]
) -> dict[str, Any]:
    """The state at ``STAGES[stage_index]``: the complaint known from the second stage,
    pain and red flags from the third."""
    known = stage_index >= 1
    return {
        "stage": STAGES[stage_index],
        "chief_complaint": complaint.chief_complaint if known else None,
        "body_parts": list(complaint.body_parts) if known else [],
        "symptoms": list(complaint.symptoms) if known else [],
        "duration": rng.choice(("一周", "两周", "三天", "a week", "two weeks")) if known else None,
        "aggravating_factors": list(complaint.aggravating) if known else [],
        "pain_level": rng.randint(1, 8) if stage_index >= 2 else None,
        "red_flags": red_flags if stage_index >= 2 else [],
        "missing_slots": [] if stage_index >= 2 else ["pain_level"],
    }


async def write_consultation(storage: VersionedStorage, sample: SampleConsultation) -> SeedReport:
    """Write one consultation the way the service would: profile, messages, states, summary.

    Once per seed: a consultation already there whole is left alone (its states written
    again would be transitions that never happened); one a stopped run left half-written
    is written again from the start."""
    report = SeedReport()
    stored = await storage.load_state(sample.session_id)
    if stored is not None:
        if stored.version == len(sample.states):
            report.already = 1
            return report
        await storage.delete(sample.session_id)
    await storage.save_profile(sample.user_id, sample.profile)
    await storage.save(sample.session_id, sample.messages, user_id=sample.user_id)
    for state in sample.states:
        await storage.save_state(sample.session_id, state)
    if len(sample.messages) > 8:
        text = await extractive_summarizer()(sample.messages[:-4], None)
        await storage.save_summary(sample.session_id, text, covers_until=len(sample.messages) - 5)
        report.summaries = 1
    report.sessions = 1
    report.messages = len(sample.messages)
    report.state_versions = len(sample.states)
    report.red_flag_sessions = 1 if sample.states[-1]["red_flags"] else 0
    report.stages = {sample.states[-1]["stage"]: 1}
    return report


async def seed_sample(
    storage: VersionedStorage,
    sessions: int,
    *,
    seed: int = 7,
    concurrency: int = 8,
    show: bool = True,
    now: datetime | None = None,
) -> SeedReport:
    """Write ``sessions`` sample consultations over the 56 days before ``now`` (default:
    the current time); a progress bar and a summary."""
    total = SeedReport(stages={stage: 0 for stage in STAGES})
    progress = Progress("seeding consultations", sessions, shown=show)
    now = now or datetime.now(UTC)
    started = asyncio.get_running_loop().time()
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < sessions:
            index = next_index
            next_index += 1
            one = await write_consultation(storage, sample_consultation(index, seed, now))
            total.sessions += one.sessions
            total.messages += one.messages
            total.state_versions += one.state_versions
            total.summaries += one.summaries
            total.red_flag_sessions += one.red_flag_sessions
            total.already += one.already
            for stage, count in one.stages.items():
                total.stages[stage] = total.stages.get(stage, 0) + count
            progress.advance()

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    progress.finish()
    total.seconds = asyncio.get_running_loop().time() - started
    return total
