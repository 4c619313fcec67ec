"""The conversation every LLM backend shares: the system prompt, its worked examples, the short history.

The examples are real chat turns (user, assistant) placed after the system prompt, not lines inside
it: written inside the prompt as "听说：…" they taught the model to begin its replies with its own
name as a speaker tag. They show, more than the rules can say, what a spoken answer looks like —
short, plain, kind. A small model copies what it sees, so they stay away from the subjects people
ask about most (an example about 上海 made the 0.5B name 上海 as China's capital, one about metres
made a kilogram a hundred grams, one about a stain had it answer 心情不好 with 先用热水泡一泡, and a
fact example, 《红楼梦》的作者是曹雪芹, came back as the answer to a misheard 换一首歌).
None of them is a question of the answer evaluation (``benchmarks/questions.toml``; a test checks).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

Message = dict[str, str]
Example = tuple[str, str]

SYSTEM_PROMPT = (
    "你是“听说”，一个在这台设备上离线运行的中文语音助手。你说的每个字都会被直接朗读出来。\n"
    "规则：\n"
    "1. 用简体中文口语回答，一般不超过三十个字，先说结论；用户要求详细时才多说。\n"
    "2. 只输出要说的话：不要Markdown、列表、编号和表情符号。\n"
    "3. 你没有联网，也没有连接任何家电：不知道的事就说不知道，绝不编造，也绝不说自己做了什么。"
)
"""The default system prompt: who it is, and what it may and may not say."""

EXAMPLES: tuple[Example, ...] = (
    ("你好呀。", "你好！我是听说，有什么可以帮你？"),
    ("我今天好烦。", "抱抱你，先深呼吸歇一会儿，想聊聊吗？"),
)
"""The default worked examples, as chat turns after the system prompt."""


def prompt(configured: str) -> tuple[str, tuple[Example, ...]]:
    """The system prompt and examples an LLM is given: the built-in ones, or a configured prompt alone."""
    return (configured, ()) if configured else (SYSTEM_PROMPT, EXAMPLES)


def inline_examples(system_prompt: str, examples: Sequence[Example]) -> str:
    """The examples written into the system prompt, for runtimes that take a system text only (RKLLM)."""
    if not examples:
        return system_prompt
    lines = "\n".join(f"问：{asked}\n答：{answered}" for asked, answered in examples)
    return f"{system_prompt}\n示例：\n{lines}"


class History:
    """The last few exchanges (user text, assistant reply), oldest first.

    A reply that was interrupted is remembered as far as it got, because that is what the user
    heard. An exchange where nothing at all was said is dropped: an empty assistant turn would
    teach the model to answer with nothing.
    """

    def __init__(self, turns: int) -> None:
        if turns < 0:
            raise ValueError(f"history_turns must be >= 0, not {turns}")
        self._exchanges: deque[tuple[str, str]] = deque(maxlen=turns)

    @property
    def exchanges(self) -> list[tuple[str, str]]:
        return list(self._exchanges)

    def messages(self, system_prompt: str, text: str, examples: Sequence[Example] = ()) -> list[Message]:
        """The chat to send: system prompt, examples, remembered exchanges, then the new user ``text``."""
        chat: list[Message] = [{"role": "system", "content": system_prompt}] if system_prompt else []
        for asked, answered in [*examples, *self._exchanges]:
            chat += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
        chat.append({"role": "user", "content": text})
        return chat

    def remember(self, text: str, reply: str) -> None:
        if reply.strip():
            self._exchanges.append((text, reply))

    def amend(self, text: str, reply: str) -> None:
        """The last exchange was ``text``, but what was said is ``reply`` (the reply guard changed it)."""
        self.forget(text)
        self.remember(text, reply)

    def forget(self, text: str) -> None:
        """The last exchange, if it was ``text``, is not to be remembered (its reply was replaced)."""
        if self._exchanges and self._exchanges[-1][0] == text:
            self._exchanges.pop()

    def clear(self) -> None:
        self._exchanges.clear()

    def restore(self, exchanges: Sequence[tuple[str, str]]) -> None:
        """Remember exactly ``exchanges`` again (as ``exchanges`` gave them): a reply that was
        prepared and dropped is undone."""
        self._exchanges.clear()
        self._exchanges.extend(exchanges)
