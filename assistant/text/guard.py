"""The reply guard: what the LLM writes is checked clause by clause before any of it is spoken.

A small model, asked something it cannot know or do, writes it anyway: another assistant's name as
its own (我是百度), a speaker tag copied from its prompt (听说：…), a device it "turned on" or a
timer it "set" when nothing was done, a forecast it cannot have. The guard sits between the LLM's
stream and the chunker and, per clause (text up to a clause-ending mark):

- drops a role prefix (听说：, 助手：, AI:) and ends the reply where the model starts writing the
  user's next line (a made-up dialogue);
- strips Markdown markers (``markdown.strip_markup``), so the printed reply is clean too;
- replaces a claim the assistant cannot make — another identity, an action nothing performed, a
  live fact (weather) it has no way to know — with an honest sentence, and ends the reply there;
- asks again when the reply's first clause only says the request back (``parrot.restates``: the
  model echoing a garbled transcript is no answer), or when it writes a worked example's request
  (``examples``) that was not asked: the 0.5B, lost on a misheard 我做的 or 多么去哪里玩比较好,
  replays its prompt's example dialogue (我今天好烦，抱抱你，先深呼吸歇一会儿…); later in the reply
  such a line ends it;
- holds back a bare acknowledgement (好的，) until the clause after it is known to be honest, so an
  honest replacement never follows a "好的";
- says 这个我不太确定 instead of a first clause the model itself doubted (``min_confidence``: the
  lowest probability it gave its own first choice at a token of the clause), when the request
  asks for a fact: a small model's wrong fact is most often a guess at one token (孔子是古希腊人);
- ends the reply at the first sentence end after ``soft_chars`` characters, and before a clause that
  would take it past ``max_chars`` (the model is asked for about 40; it does not always listen).

Holding text back until its clause ends costs nothing: the chunker cuts the first chunk at the first
clause end anyway (and a run of ``LONG_CLAUSE`` characters without one is checked and let through).
``ClauseGuard`` is pure text in, text out; ``assistant.respond`` runs it on the stream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from assistant.text.cer import cer
from assistant.text.markdown import strip_markup
from assistant.text.parrot import restates

IDENTITY = "我是听说，在这台设备上离线运行的语音助手。"
CANNOT = "这个我还做不到。我可以报时、算数、定时提醒和记待办。"
NO_NETWORK = "我没有联网，查不了天气和新闻。"
NO_LOOKUP = "我没有联网，这个查不了。"  # a look-up it claimed to make (好的，我帮你查一下)
NOT_HEARD = "没听清是什么时候，请再说一遍。"  # a clear timer request never reaches the LLM: the tools take it
ASK_AGAIN = "没听清，请再说一遍。"  # the reply only said the request back
UNSURE = "这个我不太确定。"  # the model guessed at its first clause

_NAMES = (r"百度|小度|通义|千问|Qwen|qwen|Google|谷歌|小爱|Siri|siri|ChatGPT|chatgpt|OpenAI|阿里|天猫精灵|Alexa|"
          r"文心|讯飞|小艺|Cortana|Gemini|Claude|小冰|GPT")
_MAKERS = r"百度|阿里巴巴|阿里云|阿里|Google|谷歌|OpenAI|微软|腾讯|华为|小米|Anthropic|字节"
_DEVICES = (r"灯|空调|电视|窗帘|风扇|电扇|热水器|扫地机器人|扫地机|加湿器|净化器|冰箱|洗衣机|门锁|插座|音箱|蓝牙|"
            r"暖气|地暖|电饭煲|烤箱|微波炉|投影|窗户")
_ACTIONS = (r"打开|关闭|关掉|关上|开启|启动|调到|调成|调为|调高|调低|调亮|调暗|调大|调小|设置|设定|设好|设了|定好|"
            r"定了|播放|拨打|拨通|发送|发出|预订|订好|下单|拉上|拉开|切换")

_TAG = re.compile(r"^\s*(听说|助手|小助手|语音助手|AI|assistant|Assistant|回答|答|机器人|系统)\s*[:：]\s*")
_USER_LINE = re.compile(r"(用户|User|user|问)\s*[:：]")
_ACK = re.compile(r"^\s*(好的|好|嗯|行|可以|没问题|当然|当然可以|收到|明白|知道了|OK|ok)[，,！!。]?\s*$")
_CLAIMS: dict[str, re.Pattern[str]] = {
    NOT_HEARD: re.compile(r"(设|定|设置|设定|开)(了|好了|好)?(一个|个)[^，。！？]{0,8}(定时器|计时器|闹钟|倒计时)"
                          r"|(定时器|计时器|闹钟|倒计时)(已|已经)?(设好|设置好|启动|开始)"),
    IDENTITY: re.compile(rf"(我是|我叫|我的名字(是|叫)|叫我)\s*({_NAMES})|由\s*({_MAKERS})"
                         rf"|({_MAKERS}|{_NAMES})(公司)?(开发|研发|推出|训练|打造)的"),
    CANNOT: re.compile(rf"^(好的|好|当然可以|当然|没问题|可以|行)[，,！!]?(我)?(来|这就|马上|现在)?(帮你|为你|给你)?"
                       rf"({_ACTIONS})"
                       rf"|(已经?|已为你|已帮你|(?<!可以)(?<!能)(?<!会)(帮你|为你|给你)|这就|马上|正在|现在就)(把|将)?"
                       rf"[^，。！？,!?]{{0,8}}?({_ACTIONS})"
                       rf"|我(把|将)?[^，。！？,!?]{{0,6}}?({_ACTIONS})了"
                       rf"|({_DEVICES})[^，。！？]{{0,3}}(是|已经?|现在|正)?(开着|关着|打开的|打开了|关上了|关了|开了|亮着)"),
    NO_LOOKUP: re.compile(r"(我|我来|这就|马上|正在)(帮你|为你|给你)?(查|搜|找|查询|搜索)(一下|一查|查|看看)"
                          r"|(帮你|为你|给你)(查|搜|找)(一下|一查|查|看看)|正在(为你|帮你)?(查询|搜索)"),
    NO_NETWORK: re.compile(r"(今天|明天|后天|今晚|明晚|周末|这周|现在|外面)[^，。！？]{0,6}"
                           r"(会下雨|不会下雨|有雨|下雪|晴|多云|阴天|气温|温度为|温度是|[0-9一二三四五六七八九十]+度)"),
}
LONG_CLAUSE = 16  # characters without a clause end that are checked (and released) as one clause anyway
_CLAUSE_END = re.compile(r"[，。！？；…\n!?;]|[:：](?![0-9])|[,.](?=[^0-9])")
_SENTENCE_END = re.compile(r"[。！？!?…]\s*$")


class Verdict(StrEnum):
    SAID = "said"
    HELD = "held"  # an acknowledgement waiting for the clause after it
    DROPPED = "dropped"  # a speaker tag, or nothing left to say
    REPLACED = "replaced"  # a claim it cannot make: an honest sentence instead, and the end
    ENDED = "ended"  # long enough, or a made-up dialogue: the end


@dataclass(frozen=True)
class GuardOptions:
    soft_chars: int = 30  # end at the first sentence end after this many characters
    max_chars: int = 50  # never go past this many (0: no limit)
    min_confidence: float = 0.0  # a doubted first clause below this is not said (0: never doubted)
    # The worked examples' requests the model was shown (models.chat.EXAMPLES), which it may copy
    examples: tuple[str, ...] = ()


class ClauseGuard:
    """Feed the LLM's text as it streams; get back the parts that may be said, in order."""

    def __init__(self, options: GuardOptions | None = None, request: str = "") -> None:
        self.options = options or GuardOptions()
        self.request = request  # what was asked: a first clause that only says it back is no answer
        self.ended = False
        self.replaced: str | None = None  # the honest sentence that replaced a claim, if any
        self._buffer = ""
        self._doubt = 1.0  # the lowest confidence of a piece in the buffer
        self._held = ""
        self._said: list[str] = []

    @property
    def said(self) -> str:
        return "".join(self._said)

    def feed(self, piece: str, confidence: float = 1.0) -> list[str]:
        """``piece`` of the stream, with the model's confidence in it (1.0: none given)."""
        out: list[str] = []
        self._buffer += piece
        if any(ch.isalnum() for ch in piece):
            self._doubt = min(self._doubt, confidence)
        while not self.ended and (m := _CLAUSE_END.search(self._buffer)) is not None:
            clause, self._buffer = self._buffer[: m.end()], self._buffer[m.end():]
            out += self._clause(clause)
        if not self.ended and len(self._buffer) >= LONG_CLAUSE:  # no clause end coming: do not hold speech back
            clause, self._buffer = self._buffer, ""
            out += self._clause(clause)
        return out

    def finish(self) -> list[str]:
        """The end of the stream: the last clause, and an acknowledgement still held."""
        out: list[str] = []
        if not self.ended and self._buffer.strip():
            out += self._clause(self._buffer)
        self._buffer = ""
        if not self.ended and self._held:
            out += self._say(self._held)
            self._held = ""
        self.ended = True
        return out

    def check(self, clause: str, confidence: float = 1.0) -> tuple[Verdict, str]:
        """What becomes of one clause, of which the model was ``confidence`` sure: the verdict and
        the text to say (pure; no state changes)."""
        text = "\n".join(strip_markup(clause))
        spoken = self.said + self._held
        if not spoken or _SENTENCE_END.search(spoken):
            text = _TAG.sub("", text)  # a role prefix, where a line of dialogue would begin
        if not spoken:
            text = text.lstrip()
        user = _USER_LINE.search(text)
        if user is not None:
            return Verdict.ENDED, text[: user.start()]
        if not any(ch.isalnum() for ch in text):
            return Verdict.DROPPED, text if self._said and text.strip() else ""
        context = self._held + text
        for honest, claim in _CLAIMS.items():
            if claim.search(context):
                return Verdict.REPLACED, honest
        if not self._said and not self._held and _ACK.match(text):
            return Verdict.HELD, text
        if not self._said and self.request and restates(self.request, text):
            return Verdict.REPLACED, ASK_AGAIN
        if copies_an_example(text, self.options.examples):
            return (Verdict.ENDED, "") if self._said else (Verdict.REPLACED, ASK_AGAIN)
        if not self._said and confidence < self.options.min_confidence and asks_a_fact(self.request):
            return Verdict.REPLACED, UNSURE
        limit = self.options.max_chars
        if limit and self.said and len(self.said) + len(self._held) + len(text.strip()) > limit:
            return Verdict.ENDED, ""
        return Verdict.SAID, text

    def _clause(self, clause: str) -> list[str]:
        verdict, text = self.check(clause, self._doubt)
        self._doubt = 1.0
        if verdict is Verdict.HELD:
            self._held = text
            return []
        if verdict is Verdict.REPLACED:
            self._held = ""
            self.replaced = text
            self.ended = True
            if self.said and text.startswith(self.said):  # 我是听说， said already: only the rest of 我是听说，…
                text = text[len(self.said):]
            return self._say(text)
        if verdict is Verdict.ENDED:
            self.ended = True
            return self._say(text) if text.strip() else []
        if verdict is Verdict.DROPPED:
            return self._say(text) if text else []  # punctuation after what was said stays
        out = self._say(self._held + text)
        self._held = ""
        if len(self.said) >= self.options.soft_chars and _SENTENCE_END.search(self.said):
            self.ended = True
        return out

    def _say(self, text: str) -> list[str]:
        if not text:
            return []
        self._said.append(text)
        return [text]


EXAMPLE_MIN_CHARS = 4  # a shorter example request (你好呀) is also an everyday first clause of a reply
EXAMPLE_NEAR = 0.25  # a clause this near (CER) an example's request is that request


def copies_an_example(clause: str, examples: tuple[str, ...]) -> bool:
    """Whether ``clause`` of a reply is one of the worked ``examples``' requests (我今天好烦; 你今天好烦
    too): the model writing its prompt's dialogue, not answering. (Where the request itself was that,
    the clause says it back, which ``restates`` catches first.)"""
    return any(len(example) >= EXAMPLE_MIN_CHARS and cer(example, clause) <= EXAMPLE_NEAR
               for example in map(_content, examples))


def _content(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


_FACT_QUESTION = re.compile(r"谁|什么|哪|几|多少|多大|多高|多长|多远|多久|为什么|为啥|怎么会|是不是|吗|呢")
_NOT_A_FACT = re.compile(r"怎么办|怎么样|好吗|什么好|好不好|穿什么|可以吗|行吗|能不能|建议|推荐|吃什么|做什么|玩什么"
                         r"|比较好|有什么(好处|坏处|用处|作用|区别|意义|影响)|什么.{0,3}好|去哪|哪里玩|讲个|说个|聊聊"
                         r"|帮我")


def asks_a_fact(request: str) -> bool:
    """Whether ``request`` asks something with one right answer (谁、哪、几、多少、为什么、…吗), not for
    advice, a story or a chat, where no single continuation is expected of the model."""
    return bool(_FACT_QUESTION.search(request)) and not _NOT_A_FACT.search(request)
