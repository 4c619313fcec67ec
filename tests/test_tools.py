"""The offline tools' spoken answers, with a real database and a fixed clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assistant.tools import system
from assistant.tools.answers import Tools
from assistant.tools.router import route
from assistant.tools.store import Store
from tests.doubles import FixedClock

TZ = ZoneInfo("Asia/Shanghai")


@pytest.fixture
def tools(tmp_path: Path):
    store = Store(tmp_path / "t.sqlite3")
    t = Tools(store, FixedClock())
    yield t
    store.close()


def ask(tools: Tools, text: str) -> str:
    intent = route(text, tools.now())
    assert intent is not None, text
    return tools.answer(intent, text)


@pytest.mark.parametrize(("text", "answer"), [
    ("现在几点", "现在是下午两点。"),
    ("今天星期几", "今天是十一月二十九号，星期日。"),
    ("明天是几号", "明天是十一月三十号，星期一。"),
    ("后天是星期几", "后天是十二月一号，星期二。"),
    ("昨天几号", "昨天是十一月二十八号，星期六。"),
    ("12乘以8等于多少", "十二乘以八等于九十六。"),
    ("一百除以零", "不能除以零哦。"),
    ("你能做什么", "我可以报时、算数、定时提醒、记待办、看设备状态，也可以陪你聊天。"),
])
def test_answers_are_short_and_in_words(tools, text, answer):
    said = ask(tools, text)
    assert said == answer
    assert len(said) <= 40 and not any(ch.isdigit() for ch in said)


def test_a_reminder_is_confirmed_only_once_it_is_in_the_database(tools, tmp_path):
    said = ask(tools, "二十分钟后提醒我吃药")
    assert said == "好的，二十分钟后，也就是今天下午两点二十分，提醒你吃药。"
    with Store(tmp_path / "t.sqlite3") as other:  # another process's view: already committed
        pending = other.pending()
    assert [(r.text, r.kind) for r in pending] == [("吃药", "reminder")]
    assert pending[0].due == tools.now() + timedelta(minutes=20)
    assert ask(tools, "明天早上八点提醒我开会") == "好的，明天早上八点提醒你开会。"
    assert ask(tools, "看看我的提醒") == "你有两个提醒：今天下午两点二十分吃药，明天早上八点开会。"
    assert ask(tools, "取消所有提醒") == "已取消两个提醒。"
    assert ask(tools, "看看我的提醒") == "现在没有提醒。"


def test_todos_by_voice(tools):
    assert ask(tools, "添加待办买牛奶") == "好的，已记下待办：买牛奶。"
    assert ask(tools, "记一下待办交电费") == "好的，已记下待办：交电费。"
    assert ask(tools, "看看待办") == "你有两项待办：买牛奶，交电费。"
    assert ask(tools, "把买牛奶标记为完成") == "好的，买牛奶已完成。"
    assert ask(tools, "看看待办") == "你有一项待办：交电费。"
    assert ask(tools, "把洗车标记为完成") == "没找到这项待办。"
    assert ask(tools, "清空待办") == "已清空一项待办。"


def test_device_status_from_proc_and_sys(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        3981312 kB\nMemFree:  100 kB\nMemAvailable:    1258291 kB\n")
    assert system.memory_reply(meminfo) == "内存共三点八G，还剩一点二G可用。"
    zones = tmp_path / "thermal"
    for i, (kind, milli) in enumerate([("soc-thermal", 45200), ("gpu-thermal", 41800)]):
        (zones / f"thermal_zone{i}").mkdir(parents=True)
        (zones / f"thermal_zone{i}" / "type").write_text(kind + "\n")
        (zones / f"thermal_zone{i}" / "temp").write_text(f"{milli}\n")
    assert system.temperature_reply(zones) == "芯片四十五度，图形处理器四十二度。"
    assert system.temperature_reply(tmp_path / "none") == "这台设备没有可读的温度传感器。"
    uptime = tmp_path / "uptime"
    uptime.write_text("7530.2 100.0\n")
    assert system.uptime_reply(uptime) == "已经运行了两小时零五分钟。"
    # this machine's own answers are sentences in words
    for reply in (system.memory_reply(), system.load_reply(), system.ip_reply()):
        assert reply.endswith("。") and not any(ch.isdigit() for ch in reply), reply


def test_volume_without_a_sound_card_is_said_not_raised(tools):
    said = ask(tools, "大声点")
    assert said == "没有找到可以调节的音量。" or said.startswith("音量")


async def test_a_spoken_command_is_answered_by_the_tool_not_the_llm(run_replay, tools, tmp_path):
    from tests.conftest import real, session_of, silence
    from tests.doubles import ScriptedAsr, ScriptedLlm

    llm = ScriptedLlm("这句不该说。")
    session = session_of(real("cmd_qiehuan_1.wav"), silence(2.0))
    r = await run_replay(session, "dialog.follow_up_s=0", asr=ScriptedAsr("二十分钟后提醒我吃药"), llm=llm,
                         tools=tools, start=datetime(2026, 11, 29, 14, 0, tzinfo=TZ))
    assert r.first("tool_answered")["intent"] == "reminder_set"
    assert llm.asked == []
    said = r.summary["turns"][0]["reply"]
    assert said.startswith("好的，二十分钟后，也就是今天下午两点二十分") and said.endswith("提醒你吃药。")
    assert [p.text for p in tools.store.pending()] == ["吃药"]


async def test_a_reminder_set_by_voice_falls_due_and_is_spoken_unasked(run_replay, tools):
    from tests.conftest import real, session_of, silence
    from tests.doubles import ScriptedAsr, ScriptedLlm

    session = session_of(real("cmd_qiehuan_1.wav"), silence(16.0))
    r = await run_replay(session, "dialog.follow_up_s=0", asr=ScriptedAsr("十秒后提醒我吃药"), llm=ScriptedLlm(),
                         tools=tools, start=datetime(2026, 11, 29, 14, 0, tzinfo=TZ))
    assert r.transitions() == [
        ("idle", "listening", "wake"), ("listening", "thinking", "speech_end"), ("thinking", "speaking", "first_audio"),
        ("speaking", "idle", "reply_done"), ("idle", "speaking", "remind"), ("speaking", "idle", "reply_done")]
    set_at = r.first("speech_ended")["t"]
    remind = r.first("state_changed", trigger="remind")
    assert set_at + 10.0 <= remind["t"] <= set_at + 11.1  # checked once a second
    replies = [e["text"] for e in r.events if e["type"] == "reply_text"]
    assert replies[-1] == "提醒你：吃药。"
    assert tools.store.pending() == []  # fired, so not said again


async def test_a_reminder_missed_while_the_assistant_was_off_is_said_late(run_replay, tools):
    from tests.conftest import silence

    start = datetime(2026, 11, 29, 14, 0, tzinfo=TZ)
    tools.store.add_reminder("开会", start - timedelta(hours=1), "reminder", start - timedelta(hours=2))
    r = await run_replay(silence(4.0), "dialog.follow_up_s=0", tools=tools, start=start)
    assert r.transitions() == [("idle", "speaking", "remind"), ("speaking", "idle", "reply_done")]
    assert [e["text"] for e in r.events if e["type"] == "reply_text"] == ["抱歉晚了，今天下午一点的提醒：开会。"]


async def test_a_near_miss_transcript_is_corrected_to_a_configured_command(run_replay):
    from tests.conftest import real, session_of, silence
    from tests.doubles import ScriptedAsr, ScriptedLlm

    llm = ScriptedLlm("好的。")
    r = await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(2.0)), "dialog.follow_up_s=0",
                         'tools.hotwords=["切换前视", "切换后视"]', asr=ScriptedAsr("千万前世"), llm=llm)
    assert llm.asked == ["切换前视"]
    assert r.first("transcript")["text"] == "千万前世"  # the transcript event keeps what was heard


async def test_a_reminder_being_spoken_can_be_interrupted_like_any_reply(run_replay, tools):
    from tests.conftest import real, session_of, silence
    from tests.doubles import ScriptedAsr

    start = datetime(2026, 11, 29, 14, 0, tzinfo=TZ)
    tools.store.add_reminder("开会", start - timedelta(hours=1), "reminder", start - timedelta(hours=2))
    session = session_of(silence(1.5), real("cmd_qiehuan_1.wav"), silence(2.0))  # talks over the reminder
    r = await run_replay(session, "dialog.follow_up_s=0", asr=ScriptedAsr("切换前视"), tools=tools, start=start)
    assert r.transitions()[:2] == [("idle", "speaking", "remind"), ("speaking", "listening", "barge_in")]
    assert r.first("playback_finished")["interrupted"] is True


class FakeMixer:
    """Stands in for alsaaudio.Mixer: this machine has no sound card, so no mixer to change."""

    level = 40
    opened: list[tuple[str, str]] = []

    def __init__(self, control: str, device: str = "default") -> None:
        FakeMixer.opened.append((control, device))

    def getvolume(self) -> list[int]:
        return [FakeMixer.level]

    def setvolume(self, value: int) -> None:
        FakeMixer.level = value


def test_volume_commands_change_the_configured_mixer_control(tools, monkeypatch):
    import alsaaudio

    from assistant.tools.answers import Volume

    monkeypatch.setattr(alsaaudio, "Mixer", FakeMixer)
    tools.volume = Volume("PCM", "hw:0")
    assert ask(tools, "大声点") == "音量五十。" and FakeMixer.level == 50
    assert ask(tools, "小声一点") == "音量四十。" and FakeMixer.level == 40
    assert ask(tools, "音量调到八十") == "音量八十。" and FakeMixer.level == 80
    assert ask(tools, "音量调到两百") == "音量一百。" and FakeMixer.level == 100  # kept in range
    assert FakeMixer.opened[0] == ("PCM", "hw:0")


def test_a_duration_timer_is_saved_and_said_back(tools):
    intent = route("帮我设一个五分钟的定时器。", tools.now())
    said = tools.answer(intent, "帮我设一个五分钟的定时器。")
    pending = tools.store.pending()
    assert len(pending) == 1 and pending[0].due == tools.now() + timedelta(minutes=5)
    assert "五分钟" in said


def test_honest_limits_say_what_it_can_do_instead(tools):
    said = tools.answer(route("明天会下雨吗", tools.now()), "明天会下雨吗")
    assert "没有联网" in said and "天气" in said and "提醒" in said
    said = tools.answer(route("打开客厅的灯", tools.now()), "打开客厅的灯")
    assert "没有连接" in said and "灯" in said
    assert "听说" in tools.answer(route("你是谁", tools.now()), "你是谁")


async def test_in_a_session_a_false_claim_is_replaced_and_repeat_says_the_last_reply(run_replay, tools):
    from assistant.text.guard import CANNOT
    from tests.conftest import real, session_of, silence
    from tests.doubles import ScriptedAsr, ScriptedLlm

    llm = ScriptedLlm("听说：好的，客厅的灯已经打开了。")
    session = session_of(real("cmd_qiehuan_1.wav"), silence(3.0), real("cmd_qiehuan_2.wav"), silence(2.0))
    r = await run_replay(session, "dialog.follow_up_s=4", asr=ScriptedAsr("我家客厅亮不亮", "再说一遍"), llm=llm,
                         tools=tools, start=datetime(2026, 11, 29, 14, 0, tzinfo=TZ))
    replies = [e["text"] for e in r.events if e["type"] == "reply_text"]
    assert replies == [CANNOT, CANNOT]  # the honest sentence, then the same again for 再说一遍
    assert "听说" not in "".join(e["text"] for e in r.events if e["type"] == "text_chunk")
    assert llm.asked == ["我家客厅亮不亮"] and llm.stops >= 1


def test_cancelling_this_reminder_cancels_only_the_one_just_set(tools):
    for said in ("二十分钟后提醒我吃药", "明天早上八点提醒我开会"):
        tools.answer(route(said, tools.now()), said)
    assert tools.answer(route("取消这个提醒", tools.now()), "取消这个提醒") == "已取消提醒：开会。"
    assert [r.text for r in tools.store.pending()] == ["吃药"]  # the earlier one is kept
    assert tools.answer(route("取消所有提醒", tools.now()), "取消所有提醒") == "已取消一个提醒。"
