"""The answers of the offline tools: each intent from the router becomes one short spoken reply.

Replies are written for the ear: Chinese words rather than digits, at most about 40 characters;
the reply pipeline still normalizes them. Anything written to the database is committed before the
reply that confirms it is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import structlog

from assistant.tools import calculator, limits, system, timeparse
from assistant.tools.router import Intent
from assistant.tools.store import Store, StoreError

log = structlog.get_logger("tools")

WEEKDAYS = "一二三四五六日"
DAY_OFFSETS = {"前天": -2, "昨天": -1, "今天": 0, "明天": 1, "后天": 2, "大后天": 3}
NOT_SAVED = "抱歉，没能保存，可能是存储空间满了。之前记下的都还在。"
HELP = "我可以报时、算数、定时提醒、记待办、看设备状态，也可以陪你聊天。"
MAX_LISTED = 3


class Volume:
    """The ALSA mixer control named in config, or None when there is no sound card."""

    def __init__(self, control: str = "Master", device: str = "default") -> None:
        self.control, self.device = control, device

    def change(self, direction: int | None, level: int | None) -> str:
        try:
            import alsaaudio

            mixer = alsaaudio.Mixer(self.control, device=self.device)
            now = int(mixer.getvolume()[0])
            target = level if level is not None else now + 10 * (direction or 0)
            target = max(0, min(100, target))
            mixer.setvolume(target)
        except Exception as exc:  # no card, no such control: said, not raised
            log.info("volume not changed", error=str(exc))
            return "没有找到可以调节的音量。"
        return f"音量{calculator.say_number(target)}。"


# The intents whose answer changes something (saved, or the volume): done when answered, so the
# request is never answered twice.
ACTIONS = frozenset({"volume", "reminder_set", "reminder_cancel", "todo_add", "todo_done", "todo_clear"})


class Tools:
    def __init__(self, store: Store | None, now: Callable[[], datetime], volume: Volume | None = None) -> None:
        self.store = store
        self.now = now
        self.volume = volume or Volume()

    def answer(self, intent: Intent, text: str) -> str:
        if intent.name in limits.INTENTS:
            return limits.reply(intent.name, intent.slots.get("detail", ""))
        handler: Callable[[Intent, str], str] = getattr(self, f"_{intent.name}")
        try:
            return handler(intent, text)
        except StoreError as exc:  # a full disk, a broken file: said, and nothing saved before is touched
            log.error("the database failed", intent=intent.name, error=str(exc))
            return NOT_SAVED

    # -- time and numbers ------------------------------------------------------------------------
    def _time(self, intent: Intent, text: str) -> str:
        now = self.now()
        return "现在是" + timeparse.say_when(now, now).removeprefix("今天") + "。"

    def _date(self, intent: Intent, text: str) -> str:
        day = intent.slots.get("day", "今天").replace("今日", "今天").replace("明日", "明天")
        when = self.now() + timedelta(days=DAY_OFFSETS[day])
        n = calculator.say_number
        return f"{day}是{n(when.month)}月{n(when.day)}号，星期{WEEKDAYS[when.weekday()]}。"

    def _calc(self, intent: Intent, text: str) -> str:
        try:
            return calculator.calculate(intent.slots["expression"]).answer + "。"
        except calculator.CalcError as exc:
            return str(exc)

    # -- the device ------------------------------------------------------------------------------
    def _memory(self, intent: Intent, text: str) -> str:
        return system.memory_reply()

    def _temperature(self, intent: Intent, text: str) -> str:
        return system.temperature_reply()

    def _ip(self, intent: Intent, text: str) -> str:
        return system.ip_reply()

    def _load(self, intent: Intent, text: str) -> str:
        return system.load_reply()

    def _uptime(self, intent: Intent, text: str) -> str:
        return system.uptime_reply()

    def _status(self, intent: Intent, text: str) -> str:
        return system.memory_reply() + system.temperature_reply()

    def _volume(self, intent: Intent, text: str) -> str:
        words = intent.slots.get("dir", "")
        if "level" in intent.slots:
            import cn2an  # type: ignore[import-untyped]

            try:
                level = int(cn2an.cn2an(intent.slots["level"], "smart"))
            except ValueError:
                return "没听清音量调到多少。"
            return self.volume.change(None, level)
        up = any(w in words for w in ("大", "高", "增", "提", "加"))
        return self.volume.change(1 if up else -1, None)

    def _help(self, intent: Intent, text: str) -> str:
        return HELP

    # -- timers and reminders --------------------------------------------------------------------
    def _reminder_set(self, intent: Intent, text: str) -> str:
        now = self.now()
        when = timeparse.parse_when(intent.slots.get("when") or text, now)
        if when is None:
            return "没听清是什么时候，请再说一遍。"
        if when.at <= now:
            return "这个时间已经过去了。"
        what, kind = intent.slots.get("what", ""), intent.slots.get("kind", "reminder")
        self._db().add_reminder(what, when.at, kind, now)
        at = timeparse.say_when(when.at, now)
        if when.relative:  # said back both ways: the delay as heard, and the clock time it means
            at = f"{timeparse.say_duration(round((when.at - now).total_seconds()))}后，也就是{at}，"
        return f"好的，{at}提醒你{what}。" if what else f"好的，{at}叫你。"

    def _reminder_list(self, intent: Intent, text: str) -> str:
        now, pending = self.now(), self._db().pending()
        if not pending:
            return "现在没有提醒。"
        said = [f"{timeparse.say_when(r.due.astimezone(now.tzinfo), now)}{r.text or '叫你'}" for r in pending]
        more = "等" if len(said) > MAX_LISTED else ""
        return f"你有{_count(len(said))}个提醒：" + "，".join(said[:MAX_LISTED]) + more + "。"

    def _reminder_cancel(self, intent: Intent, text: str) -> str:
        if "one" in intent.slots:  # 取消这个提醒: the one just set, not all of them
            pending = self._db().pending()
            if not pending:
                return "没有要取消的提醒。"
            latest = max(pending, key=lambda r: r.id)
            self._db().cancel(latest.id)
            return f"已取消提醒：{latest.text}。" if latest.text else "已取消这个定时器。"
        n = self._db().cancel_all()
        return f"已取消{_count(n)}个提醒。" if n else "没有要取消的提醒。"

    # -- todos -----------------------------------------------------------------------------------
    def _todo_add(self, intent: Intent, text: str) -> str:
        item = intent.slots.get("item", "").strip("：:")
        if not item:
            return "要记什么待办？"
        self._db().add_todo(item, self.now())
        return f"好的，已记下待办：{item}。"

    def _todo_list(self, intent: Intent, text: str) -> str:
        todos = self._db().todos()
        if not todos:
            return "没有待办事项。"
        more = "等" if len(todos) > MAX_LISTED else ""
        return f"你有{_count(len(todos))}项待办：" + "，".join(t.text for t in todos[:MAX_LISTED]) + more + "。"

    def _todo_done(self, intent: Intent, text: str) -> str:
        db = self._db()
        todo = db.find_todo(intent.slots.get("item", ""))
        if todo is None:
            return "没找到这项待办。"
        db.mark_done(todo.id)
        return f"好的，{todo.text}已完成。"

    def _todo_clear(self, intent: Intent, text: str) -> str:
        db = self._db()
        n = len(db.todos())  # what the user has been told about: the open ones
        db.clear_todos()
        return f"已清空{_count(n)}项待办。" if n else "没有待办事项。"

    def due_announcement(self, late_after_s: float = 60.0) -> str | None:
        """What to say for the reminders that have fallen due (marked fired), or None.

        A reminder that fell due while the assistant was off is said with a note that it is late.
        """
        if self.store is None:
            return None
        now = self.now()
        due = self.store.due(now)
        if not due:
            return None
        said = []
        for r in due:
            self.store.mark_fired(r.id, now)
            what = r.text or ("时间到了" if r.kind == "timer" else "该做的事")
            late = (now - r.due).total_seconds() > late_after_s
            when = timeparse.say_when(r.due.astimezone(now.tzinfo), now) if late else ""
            said.append(f"抱歉晚了，{when}的提醒：{what}" if late else f"提醒你：{what}")
            log.info("reminder due", id=r.id, text=r.text, late=late)
        return "。".join(said) + "。"

    def _db(self) -> Store:
        if self.store is None:
            raise RuntimeError("tools: no database configured")
        return self.store


def _count(n: int) -> str:
    """Counts before a measure word: 两个, not 二个."""
    return "两" if n == 2 else calculator.say_number(n)
