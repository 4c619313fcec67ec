"""Honest limits: what Tingshuo cannot do, said plainly by a rule instead of invented by the LLM.

It has no network (weather, news, prices, parcels, search, tickets, messages), nothing connected
(lights, air conditioning, music, phone calls) and one name. Requests like these are recognised
here and answered with a short true sentence that says what it can do instead; the LLM never sees
them, so it cannot make up a forecast or claim it switched a lamp on. Thanks and goodbyes get their
short answer here too (the LLM tends to turn them into speeches).

``match(text)`` reads a transcript with punctuation removed; ``reply(intent)`` says the answer.
"""

from __future__ import annotations

import re

from assistant.text.guard import IDENTITY

OFFER = "我可以报时、算数、定时提醒和记待办。"
OFFLINE = "不需要，我在这台设备上离线运行，所以也查不了天气和新闻。"
THANKS = "不客气，有需要随时叫我。"
BYE = "再见，有事再叫我。"
OKAY = "好的，有事再叫我。"
NO_MUSIC = "我这里没有音乐，也连不上音乐软件，放不了歌。"
NO_PHONE = "我打不了电话，也发不了消息。"

# (topic said in the reply, pattern) — the first that matches names what cannot be looked up.
NETWORK: list[tuple[str, re.Pattern[str]]] = [
    ("天气", re.compile(r"天气|气温|下雨(?!天)|下雪(?!天)|降雨|降温|刮风|台风|雾霾|空气质量|紫外线|带伞|"
                        r"(今天|明天|后天|今晚|明晚|外面|室外|户外|这周|周末|最近|这几天)[^，。]{0,4}?(多少度|几度|温度|冷不冷|热不热)")),
    ("新闻", re.compile(r"新闻|头条|热搜|时事|发生了什么(大)?事")),
    ("行情", re.compile(r"股价|股票|股市|大盘|基金|比特币|金价|油价|房价|行情|(黄金|白银)[^，。]{0,4}(价|多少钱)")),
    ("汇率", re.compile(r"汇率|兑人民币|兑美元")),
    ("快递", re.compile(r"快递|物流|包裹|外卖(到|送)")),
    ("路况", re.compile(r"路况|堵车|堵不堵|航班")),
    ("比赛结果", re.compile(r"比赛|比分|谁赢了|赛果|球赛")),
    ("网上的信息", re.compile(r"搜(一下|索|搜)|百度一下|上网|网上|谷歌一下")),
]
BOOKING = re.compile(r"(订|买|抢|查)[^，。]{0,8}(机票|火车票|高铁票|车票|酒店)"
                     r"|买票|订票|打车|叫(个|一辆)?车|点(个)?外卖")
MESSAGE = re.compile(r"(发|回)(个|一个|一条)?(微信|短信|消息|邮件)|打(个|一个)?电话|打给|视频通话|呼叫")
MUSIC = re.compile(r"(播放|放|来|听|唱)(一)?(首|点|个|些)?[^，。]{0,8}(歌|音乐|曲子|歌曲)|下一首|上一首|换一首|切歌|"
                   r"^(暂停|继续)(播放|音乐)?$|停止播放")
_DEVICES = (r"台灯|灯带|灯光|吊灯|灯|空调|电视|窗帘|风扇|电扇|热水器|扫地机器人|扫地机|加湿器|净化器|冰箱|洗衣机|"
            r"门锁|插座|暖气|地暖|电饭煲|烤箱|微波炉|投影仪|蓝牙|智能音箱")
_ON_OFF = r"打开|开一下|开启|关掉|关闭|关上|关了|开了|调|拉上|拉开|开始|启动|停|开着|关着|亮着"
# A command or a question about a device: 把客厅的灯打开, 打开蓝牙, 让扫地机器人开始打扫, 灯开着吗.
DEVICE = re.compile(rf"^(请|帮我|麻烦你?|给我)?(把|将|让)?[^，。]{{0,6}}?(?P<d>{_DEVICES})[^，。]{{0,6}}?({_ON_OFF})"
                    rf"|^(请|帮我|麻烦你?|给我)?(打开|开一下|开启|关掉|关闭|关上|关|开|调到|调高|调低|调|拉上|拉开|启动|停止)"
                    rf"[^，。]{{0,6}}?(?P<d2>{_DEVICES})")
IDENTITY_ASKED = re.compile(
    r"你是谁|你叫(什么|啥)|你的名字|叫你什么|(你是|你来自)(哪个|哪家|什么)(公司|厂)|谁(开发|做|造|创造|发明|训练|设计)(了|的)?你|"
    r"你是(由)?谁(开发|做|造|创造|发明|训练|设计)的|"
    r"你是(不是)?(百度|小度|Siri|siri|小爱|天猫精灵|ChatGPT|chatgpt|通义|千问|文心|Alexa|谷歌|小艺|机器人|人工智能|AI|ai|真人)")
OFFLINE_ASKED = re.compile(r"(需要|要|用)(联网|网络|上网)吗|(能|可以|会)上网吗|联网了?吗|有(没有)?网络?吗")
THANKS_SAID = re.compile(r"^(好的)?(谢谢|谢了|多谢|感谢|太感谢|非常感谢|谢啦|辛苦)(你|您)?(了|啦|啊|呀)?$")
BYE_SAID = re.compile(r"^(好的?)?(再见|拜拜|回头见|下次再聊|下次聊|晚点聊|我先走了|先这样|就这样)(吧|啦|了)?$")
OKAY_SAID = re.compile(r"^(没事了?|没什么|好的?我知道了|知道了|好的)$")


def match(text: str) -> tuple[str, str] | None:
    """(intent, detail) for a request Tingshuo answers with an honest limit, or None."""
    if IDENTITY_ASKED.search(text):
        return "identity", ""
    if OFFLINE_ASKED.search(text):
        return "offline", ""
    for said, name in ((THANKS_SAID, "thanks"), (BYE_SAID, "bye"), (OKAY_SAID, "okay")):
        if said.search(text):
            return name, ""
    for topic, pattern in NETWORK:
        if pattern.search(text):
            return "no_network", topic
    if BOOKING.search(text):
        return "no_network", "票"
    if MESSAGE.search(text):
        return "no_phone", ""
    if MUSIC.search(text):
        return "no_music", ""
    device = DEVICE.search(text)
    if device is not None:
        return "no_device", device.group("d") or device.group("d2")
    return None


def reply(intent: str, detail: str) -> str:
    """The honest answer of a limit ``intent`` (from ``match``)."""
    if intent == "no_network":
        verb = "订不了" if detail == "票" else "查不了"
        return f"我没有联网，{verb}{detail}。{OFFER}"
    if intent == "no_device":
        return f"我还没有连接家里的设备，控制不了{detail}。"
    fixed = {"identity": IDENTITY, "offline": OFFLINE, "thanks": THANKS, "bye": BYE, "okay": OKAY,
             "no_music": NO_MUSIC, "no_phone": NO_PHONE}
    return fixed[intent]


INTENTS = ("identity", "offline", "thanks", "bye", "okay", "no_network", "no_phone", "no_music", "no_device")
