"""Whisper's n-best hypotheses weighed again by the LLM's GGUF (models.llama_scorer)."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from assistant import backends
from assistant.audio.wav import read_wav
from assistant.text.cer import cer
from models.assets import Assets
from models.llama_llm import QWEN_05B_SHA256
from models.llama_scorer import LlamaScorer
from models.protocols import ModelError
from models.whisper_asr import Hypothesis, WhisperAsr, rescored
from tests.conftest import SHARED, make_config

CORPUS = SHARED / "audio" / "corpus"


@pytest.fixture(scope="module")
def scorer() -> Iterator[LlamaScorer]:
    gguf = Assets([SHARED / "models"]).path("qwen2.5-coder-0.5b-instruct-q4_k_m",
                                             "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    s = LlamaScorer(gguf, expected_sha256=QWEN_05B_SHA256)
    s.load()
    yield s
    s.close()


def test_the_sentence_a_person_would_say_scores_above_whispers_near_misses(scorer: LlamaScorer) -> None:
    pairs = [("孔子是哪个国家的人", "公子是哪个国家的人"), ("一米等于多少厘米", "一米等于多少里米"),
             ("北京是哪个国家的首都", "北京是哪个国家的首度"), ("今天是星期几", "今天是兄弟姐")]
    for right, near in pairs:
        a, b = scorer.logprobs([right, near])
        assert a > b, (right, near, a, b)


def test_scores_do_not_depend_on_what_was_scored_before(scorer: LlamaScorer) -> None:
    # the texts of a call are weighed together, as one tree of their shared tokens: each result must be
    # the text's own, whatever it was weighed with (to llama.cpp's rounding: a batch of another size
    # takes another matrix kernel: a few hundredths of a nat on an AMD EPYC, 0.16 on an Intel Xeon,
    # where near-misses differ by several nats)
    texts = ["一米等于多少厘米", "一米等于多少里米", "今天天气怎么样", "一米"]
    forward = scorer.logprobs(texts)
    backward = scorer.logprobs(texts[::-1])[::-1]
    alone = [scorer.logprobs([t])[0] for t in texts]
    for f, b, a in zip(forward, backward, alone, strict=True):
        assert f == pytest.approx(a, abs=0.5) and b == pytest.approx(a, abs=0.5)
    assert all(v < 0 for v in forward)


def test_the_lead_in_is_evaluated_once_and_a_pass_only_its_readings(scorer: LlamaScorer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the lead-in stays in the cache from load(), and a text's first token is scored from the lead-in's
    # logits kept then: a pass evaluates the readings' tree alone (each pass costs about 7 ms a token)
    import llama_cpp

    from models.llama_scorer import _tree

    sizes: list[int] = []
    decode = llama_cpp.llama_decode

    def counting(ctx: object, batch: object) -> int:
        sizes.append(batch.n_tokens)  # type: ignore[attr-defined]
        return int(decode(ctx, batch))

    monkeypatch.setattr(llama_cpp, "llama_decode", counting)
    texts = ["今天天气怎么样", "今天天气怎么办"]
    first = scorer.logprobs(texts)
    assert sizes == [len(_tree([scorer._tokens(t) for t in texts]))]
    scorer.logprobs(["北京是中国的首都，也是一座历史悠久的城市。"])  # another pass's tokens in the cache ...
    assert scorer.logprobs(texts) == first  # ... are gone before the next: the same scores, to the bit
    one = scorer.logprobs(["好"])[0]  # one token: scored from the lead-in's logits alone, whatever it is weighed with
    assert -math.inf < one < 0 and scorer.logprobs(["好吗", "好"])[1] == one


def test_more_texts_than_one_pass_holds_are_each_weighed_as_alone(scorer: LlamaScorer) -> None:
    # 20 readings (more sequences than one pass takes) and four long sentences (more tokens together
    # than one pass holds): every one is weighed, each as it would be alone
    texts = [f"今天是星期{d}，我们去公园{w}" for d in "一二三四五" for w in ("散步", "跑步", "玩吧", "看花")]
    texts += ["北京是中国的首都，也是一座历史悠久的城市，每年都有很多游客来这里参观游览。",
              "上海是中国最大的城市之一，也是重要的经济中心，每年都有很多人来这里工作生活。",
              "广州的早茶很有名，点心的种类非常多，周末的时候茶楼里总是坐满了一家人。",
              "成都的火锅又麻又辣，很多外地人第一次吃的时候都会被辣得满头大汗。",
              "西安有很多古老的建筑，城墙保存得非常完整，晚上骑自行车在城墙上很舒服。",
              "杭州的西湖一年四季都很美，春天的时候湖边的柳树发芽，桃花也开了。"]
    together = scorer.logprobs(texts)
    alone = [scorer.logprobs([t])[0] for t in texts]
    assert all(-math.inf < v < 0 for v in together)
    for text, t, a in zip(texts, together, alone, strict=True):  # rounding grows with the length
        assert t == pytest.approx(a, abs=0.2 + 0.01 * len(text)), text


def test_duplicates_prefixes_empty_and_too_long_texts_in_one_call(scorer: LlamaScorer) -> None:
    texts = ["一米", "一米等于多少厘米", "", "一米等于多少厘米", "好" * 400, "一米等于"]
    together = scorer.logprobs(texts)
    assert together[2] == -math.inf and together[4] == -math.inf  # nothing to weigh, too long to weigh
    assert together[1] == together[3]  # the same text, the same sequence of rows
    for i in (0, 1, 5):
        assert together[i] == pytest.approx(scorer.logprobs([texts[i]])[0], abs=0.3), texts[i]
    assert together[0] > together[5] > together[1]  # each token more costs log-probability


def test_the_readings_tree_shares_prefixes_and_groups_fit_one_pass() -> None:
    from models.llama_scorer import _groups, _tree

    tree = _tree([[1, 2, 3], [1, 2], [1, 4], [1, 2, 3]])
    assert list(tree) == [(1,), (1, 2), (1, 2, 3), (1, 4)]  # each prefix once, parents first
    assert tree[(1,)] == ([0, 1, 2, 3], True) and tree[(1, 2)] == ([0, 1, 3], True)
    assert tree[(1, 2, 3)] == ([0, 3], False) and tree[(1, 4)] == ([2], False)  # a last token scores nothing
    rng = random.Random(7)
    for _ in range(300):
        texts = sorted([rng.randint(1, 3) for _ in range(rng.randint(1, 30))] for _ in range(rng.randint(1, 40)))
        groups = _groups(texts, 60, 16)
        assert sorted(i for g in groups for i in g) == list(range(len(texts)))
        assert all(len(g) <= 16 and len(_tree([texts[i] for i in g])) <= 60 for g in groups)


def test_near_misses_read_as_nonsense_a_character_at_a_time(scorer: LlamaScorer) -> None:
    # what Whisper base heard of spoken requests in a room (benchmarks/spoken.py), against requests heard
    # right: the per-character log-probability parts them at the default asr.min_char_logprob (-5),
    # each more than a nat a character away from it (llama.cpp's rounding is hundredths)
    right = ["今天是星期几", "北京是哪个国家的首都", "给我讲个故事吧", "周末去哪里玩比较好", "我今天有点累"]
    garbled = ["把空桥叫造26度", "等摩环铁紧张", "玩掉客厅的动", "包个季节醉肉", "太红又极重颜色"]
    per_char = dict(zip(right + garbled, (lp / len(t) for lp, t in zip(scorer.logprobs(right + garbled),
                                                                          right + garbled, strict=True)),
                        strict=True))
    assert all(per_char[t] > -4.0 for t in right), per_char
    assert all(per_char[t] < -6.0 for t in garbled), per_char


def test_a_text_too_long_to_weigh_scores_minus_infinity(scorer: LlamaScorer) -> None:
    assert scorer.logprobs(["好" * 400]) == [-math.inf]


def test_the_scorer_refuses_a_wrong_file_and_use_before_load(tmp_path: Path) -> None:
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="scorer"):
        LlamaScorer(bad, expected_sha256=QWEN_05B_SHA256).load()
    with pytest.raises(ModelError, match="before load"):
        LlamaScorer(bad, expected_sha256=QWEN_05B_SHA256).logprobs(["你好"])


class Weighing:
    """A rescorer double: fixed log-probabilities by text, and what it was asked."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.asked: list[list[str]] = []

    def load(self) -> None: ...

    def close(self) -> None: ...

    def logprobs(self, texts: Sequence[str]) -> list[float]:
        self.asked.append(list(texts))
        return [self.scores[t] for t in texts]


class Counting:
    """A real scorer, counting the calls made of it."""

    def __init__(self, scorer: LlamaScorer) -> None:
        self.scorer = scorer
        self.calls = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def logprobs(self, texts: Sequence[str]) -> list[float]:
        self.calls += 1
        return self.scorer.logprobs(texts)


def hypotheses_chosen(weighing: Weighing, found: list[Hypothesis], weight: float = 0.3) -> str:
    import opencc

    return rescored(found, weighing, weight, opencc.OpenCC("t2s").convert)[0]


def test_whisper_and_the_language_model_choose_together() -> None:
    found = [("公子是哪个国家的人?", -3.0, 10), ("孔子是哪个国家的人?", -4.0, 10)]
    weighing = Weighing({"公子是哪个国家的人": -40.0, "孔子是哪个国家的人": -30.0})
    assert hypotheses_chosen(weighing, found) == "孔子是哪个国家的人?"  # -4 - 9 beats -3 - 12
    assert hypotheses_chosen(weighing, found, weight=0.05) == "公子是哪个国家的人?"  # Whisper's, barely weighed


def test_hypotheses_differing_only_in_punctuation_are_not_weighed() -> None:
    weighing = Weighing({})
    found = [("今天有什么新闻?", -1.0, 8), ("今天有什么新闻。", -2.0, 8), ("今天有什么新闻", -3.0, 7)]
    assert hypotheses_chosen(weighing, found) == "今天有什么新闻?"
    assert weighing.asked == []


def test_traditional_and_simplified_spellings_are_one_hypothesis() -> None:
    weighing = Weighing({"怎么缓解紧张": -20.0, "等摩环节紧张": -30.0})
    found = [("怎么缓解緊張", -2.0, 8), ("怎么缓解紧张", -2.5, 8), ("等摩环节紧张", -2.2, 8)]
    assert hypotheses_chosen(weighing, found) == "怎么缓解緊張"
    assert weighing.asked == [["怎么缓解紧张", "等摩环节紧张"]]


def test_only_readings_of_about_the_first_hypothesis_length_are_weighed() -> None:
    # a summed log-probability favours a hypothesis that stops early: the language model would pick it
    weighing = Weighing({"将溃疡两周以上都应该及时就医": -60.0, "将溃疡两周以上都应该及时救医": -70.0,
                         "将溃疡两周": -15.0})
    found = [("将溃疡两周以上都应该及时救医", -8.0, 14), ("将溃疡两周以上都应该及时就医", -8.5, 14),
             ("将溃疡两周", -4.0, 6)]
    assert hypotheses_chosen(weighing, found) == "将溃疡两周以上都应该及时就医"
    assert weighing.asked == [["将溃疡两周以上都应该及时救医", "将溃疡两周以上都应该及时就医"]]


def test_a_long_first_hypothesis_is_kept_unweighed() -> None:
    weighing = Weighing({})
    long = "我" * 61
    assert hypotheses_chosen(weighing, [(long, -30.0, 61), (long[:-1] + "你", -31.0, 61)]) == long
    assert weighing.asked == []


def test_without_llama_cpp_whisper_keeps_its_first_hypothesis(monkeypatch: pytest.MonkeyPatch) -> None:
    # a board runs its LLM on RKLLM: no llama-cpp-python there, and `assistant transcribe` must still work
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real_find_spec(name, *a))
    assert backends.asr(make_config(), Assets([SHARED / "models"])).rescorer is None


def test_the_configuration_builds_the_rescorer_only_where_it_can_work() -> None:
    assets = Assets([SHARED / "models"])
    assert backends.asr(make_config(), assets).rescorer is not None  # the default: beam 5, the 0.5B
    assert backends.asr(make_config('asr.rescore=""'), assets).rescorer is None
    assert backends.asr(make_config("asr.beam_size=1"), assets).rescorer is None  # one hypothesis only
    names = [m.name for m in backends.configured_models(make_config())]
    assert names.count("qwen2.5-coder-0.5b-instruct-q4_k_m") == 1  # the LLM's own file, listed once


async def test_a_real_clip_is_heard_right_once_its_hypotheses_are_weighed(scorer: LlamaScorer) -> None:
    # corpus 011 says 开放时间早上9点至下午5点; Whisper base's first hypothesis is 开放时间早上9点醉下5点,
    # and on an AMD EPYC weighing its five best makes it the reference (on an Intel Xeon, 顺下5点: the
    # beam differs by CPU). A recogniser may write a homophone on another CPU, so what is checked is
    # that the weighing never makes the transcript worse, and that it kept the beam's other readings.
    audio = read_wav(CORPUS / "011.wav", 16000)
    folder = Assets([SHARED / "models"]).folder("whisper-base")
    plain = WhisperAsr(folder, beam_size=5, window_s=15.0)
    weighed = WhisperAsr(folder, beam_size=5, window_s=15.0, rescorer=scorer)
    weighed.rescorer = None  # the fixture's scorer is loaded already: lend it after load
    plain.load()
    weighed.load()
    weighed.rescorer = scorer
    try:
        before = await plain.transcribe(audio)
        after = await weighed.transcribe(audio)
        counting = Counting(scorer)
        weighed.rescorer = counting
        likely = await weighed.char_logprob(after)  # weighed with the hypotheses already: no model call
        # what the transcript is differs by CPU (-5.3 a character on one AMD EPYC, above -5 on others):
        # a Mandarin sentence's range is checked, and below that a jumble's lower likelihood
        assert counting.calls == 0 and likely is not None and -7.0 < likely < 0
        other = await weighed.char_logprob("天家带伴给花椒水")  # not among them: one forward pass
        assert counting.calls == 1 and other is not None and other < likely
        assert await weighed.char_logprob("") is None and await weighed.char_logprob("好" * 61) is None
        assert await weighed.char_logprob("算了") is None  # too short to judge (-6.3 a character)
        others = await weighed.readings(after)  # the beam's other readings, weighed already
        assert others and all(o and o != after for o in others), others
        assert len(others) == len(set(others))
        assert await weighed.readings("天家带伴给花椒水") == []  # not the last transcript
        assert await plain.readings(before) == []  # nothing was weighed: no readings
    finally:
        weighed.rescorer = None  # the fixture closes its own scorer
        plain.close()
        weighed.close()
    assert "开放时间" in before and "开放时间" in after
    reference = "开放时间早上9点至下午5点"
    assert cer(reference, after) <= cer(reference, before), (before, after)


class PreferringTheLast:
    """A rescorer double that makes the last hypothesis weighed the likeliest by far."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def load(self) -> None: ...

    def close(self) -> None: ...

    def logprobs(self, texts: Sequence[str]) -> list[float]:
        self.asked.append(list(texts))
        return [1000.0 * i for i in range(len(texts))]


async def test_whispers_own_confidence_judges_the_audio_whichever_reading_is_chosen() -> None:
    # The confidence check asks whether Whisper heard the audio surely, not whether the reading the
    # rescoring chose was Whisper's likeliest: real corpus 029 (34 characters of speech) was dropped as
    # "too uncertain" when a less likely reading of it was chosen.
    audio = read_wav(CORPUS / "011.wav", 16000)
    folder = Assets([SHARED / "models"]).folder("whisper-base")
    preferring = PreferringTheLast()
    plain = WhisperAsr(folder, beam_size=5, window_s=15.0)
    other = WhisperAsr(folder, beam_size=5, window_s=15.0, rescorer=preferring)
    plain.load()
    other.load()
    try:
        first = await plain.transcribe(audio)
        chosen = await other.transcribe(audio)
        assert preferring.asked, "Whisper gave no second reading to weigh"
        assert chosen != first  # the rescoring chose another reading…
        assert other.last_scores == plain.last_scores  # … and the audio is judged as sure as before
    finally:
        plain.close()
        other.close()


def test_a_stuttering_reading_is_not_weighed() -> None:
    # the language model finds each repeat likelier than the last: 点点点点点 beat 先量小一点 (音量小一点)
    # in the spoken evaluation's near room, and the reply said 点 fifty times
    weighing = Weighing({"先量小一点": -30.0, "点点点点点": -12.0, "声量小一点": -28.0})
    found = [("先量小一点", -3.0, 6), ("点点点点点", -3.5, 6), ("声量小一点", -3.4, 6)]
    assert hypotheses_chosen(weighing, found) == "声量小一点"
    assert weighing.asked == [["先量小一点", "声量小一点"]]


def test_digits_running_and_a_stuttering_first_hypothesis_are_weighed() -> None:
    weighing = Weighing({"1000除以8": -20.0, "1000处以8": -25.0, "哈哈哈": -5.0, "哈哈": -2.0})
    assert hypotheses_chosen(weighing, [("1000处以8", -3.0, 6), ("1000除以8", -3.2, 6)]) == "1000除以8"
    assert hypotheses_chosen(weighing, [("哈哈哈", -1.0, 3), ("哈哈", -1.5, 2)]) == "哈哈"  # -2.1 beats -2.5
    assert weighing.asked[-1] == ["哈哈哈", "哈哈"]


class Decodings:
    """Records the prompt of each decoding a WhisperAsr starts (its ``_submit``)."""

    def __init__(self, asr: WhisperAsr) -> None:
        self.prompts: list[list[int]] = []
        self.steps: list[str] = []  # "start" and "wait", in the order they happened
        submit, wait = asr._submit, asr._hypotheses

        def submitting(encoded: object, prompt: list[int], *rest: object) -> object:
            self.prompts.append(prompt)
            self.steps.append("start")
            return submit(encoded, prompt, *rest)  # type: ignore[arg-type]

        def waiting(job: object) -> object:
            self.steps.append("wait")
            return wait(job)
        asr._submit = submitting  # type: ignore[method-assign,assignment]
        asr._hypotheses = waiting  # type: ignore[method-assign,assignment]


async def test_pooled_decoding_weighs_the_readings_of_both_prompts_together() -> None:
    # asr.command_bias = "pooled": every short utterance is decoded without the command words and with
    # them, from the same encoder output (side by side), and one weighing chooses among the readings of
    # both; a plain reading too long to be weighed (corpus 013: 64 characters) stands as it is
    folder = Assets([SHARED / "models"]).folder("whisper-base")
    words = "几点 提醒 待办 闹钟 打开 关掉"
    plain_weighing, pooled_weighing = Weighing(defaultdict(float)), Weighing(defaultdict(float))
    plain = WhisperAsr(folder, beam_size=5, window_s=15.0, hotwords=words, likely_command=lambda text: False,
                       rescorer=plain_weighing)
    pooled = WhisperAsr(folder, beam_size=5, window_s=15.0, hotwords=words, likely_command=lambda text: False,
                        rescorer=pooled_weighing, pooled=True)
    assert pooled.pooled and not plain.pooled
    plain.load()
    pooled.load()
    decodings = Decodings(pooled)
    try:
        short = read_wav(CORPUS / "011.wav", 16000)
        await plain.transcribe(short)
        await pooled.transcribe(short)
        assert decodings.prompts == [pooled._plain, pooled._prompt]  # both, the plain one first ...
        assert decodings.steps == ["start", "start", "wait", "wait"]  # ... side by side
        assert len(pooled_weighing.asked) == 1  # one weighing of the readings of both
        assert set(plain_weighing.asked[0]) <= set(pooled_weighing.asked[0])
        decodings.prompts.clear()
        long = read_wav(CORPUS / "013.wav", 16000)
        assert await pooled.transcribe(long) == await plain.transcribe(long)
        assert decodings.prompts == [pooled._plain, pooled._prompt]
        assert len(pooled_weighing.asked) == 1  # nothing more weighed
    finally:
        plain.close()
        pooled.close()


class FailingJob:
    """A started decoding that fails, or one that is only waited for."""

    def __init__(self, fails: bool) -> None:
        self.fails, self.waited = fails, False

    def result(self) -> object:
        self.waited = True
        if self.fails:
            raise RuntimeError("the decoding failed")
        raise AssertionError("only waited for: its result is never read")


async def test_a_failed_decoding_leaves_none_of_its_siblings_running() -> None:
    folder = Assets([SHARED / "models"]).folder("whisper-base")
    pooled = WhisperAsr(folder, beam_size=5, window_s=15.0, hotwords="几点 提醒", likely_command=lambda text: False,
                        rescorer=Weighing(defaultdict(float)), pooled=True)
    pooled.load()
    jobs = [FailingJob(fails=True), FailingJob(fails=False)]
    started = iter(jobs)
    pooled._submit = lambda *args: next(started)  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError, match="decoding failed"):
            await pooled.transcribe(read_wav(CORPUS / "011.wav", 16000))
        assert all(job.waited for job in jobs)  # the second was waited for although the first failed
    finally:
        pooled.close()


def test_whisper_runs_threads_over_decoding_threads_workers() -> None:
    # asr.threads = 2, asr.decoding_threads = 1: two single-threaded CTranslate2 workers, so the two
    # decodings of "pooled" run side by side; decoding_threads = 2: one worker with both threads
    assets = Assets([SHARED / "models"])
    for overrides, workers in ((['asr.rescore=""'], 2), (['asr.rescore=""', "asr.decoding_threads=2"], 1)):
        asr = backends.asr(make_config(*overrides), assets)
        assert isinstance(asr, WhisperAsr)
        asr.load()
        try:
            assert asr._model.model.num_workers == workers
        finally:
            asr.close()


def test_pooled_decoding_needs_the_rescoring_and_the_command_words() -> None:
    assets = Assets([SHARED / "models"])
    pooled = backends.asr(make_config('asr.command_bias="pooled"'), assets)
    assert isinstance(pooled, WhisperAsr) and pooled.pooled and pooled.likely_command is not None
    # without a language model to weigh the two, it is "likely": decoded again only where a command is likely
    alone = backends.asr(make_config('asr.command_bias="pooled"', 'asr.rescore=""'), assets)
    assert isinstance(alone, WhisperAsr) and not alone.pooled and alone.likely_command is not None
    bare = backends.asr(make_config('asr.command_bias="pooled"', "asr.command_words=false"), assets)
    assert isinstance(bare, WhisperAsr) and not bare.pooled


async def test_a_transcription_logs_the_time_of_each_step() -> None:
    # "transcription timed" (debug): where a turn's ASR time went, to find what slows it beside the rest
    import logging

    import structlog

    folder = Assets([SHARED / "models"]).folder("whisper-base")
    asr = WhisperAsr(folder, beam_size=5, window_s=15.0, rescorer=Weighing(defaultdict(float)))
    asr.load()
    configured = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with structlog.testing.capture_logs() as logs:
            await asr.transcribe(read_wav(CORPUS / "020.wav", 16000))
    finally:
        structlog.configure(**configured)
        asr.close()
    timed = [entry for entry in logs if entry["event"] == "transcription timed"]
    assert len(timed) == 1
    steps = timed[0]
    assert steps["audio_s"] == pytest.approx(1.8, abs=0.1) and steps["stopped"] is False
    assert steps["encoder"] > 0 and steps["decoder"] > 0 and steps["queued"] >= 0 and steps["rescoring"] >= 0
    assert steps["encoder"] + steps["decoder"] + steps["rescoring"] <= steps["total"] + 0.002


async def test_a_transcription_dropped_while_decoding_weighs_nothing() -> None:
    # a dropped speculation frees the worker for the final transcription: once its decodings are in,
    # it stops before the weighing (0.1–0.5 s of the 0.5B on a 2-core Xeon)
    folder = Assets([SHARED / "models"]).folder("whisper-base")
    weighing = Weighing(defaultdict(float))
    asr = WhisperAsr(folder, beam_size=5, window_s=15.0, rescorer=weighing)
    asr.load()
    hypotheses = asr._hypotheses

    def dropped_meanwhile(job: object) -> tuple[list[Hypothesis], float]:
        found = hypotheses(job)
        asr.stop()  # the speaker went on while this decoding ran
        return found

    try:
        audio = read_wav(CORPUS / "011.wav", 16000)
        assert await asr.transcribe(audio)
        assert len(weighing.asked) == 1  # heard through: its readings weighed
        asr._hypotheses = dropped_meanwhile  # type: ignore[method-assign]
        assert await asr.transcribe(audio) == ""
        assert len(weighing.asked) == 1  # dropped: nothing more weighed
    finally:
        asr.close()
