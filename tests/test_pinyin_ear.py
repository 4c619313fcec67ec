"""The second ear (models.pinyin_ear) on real recordings, and Whisper's transcript mended by it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assistant import backends
from assistant.audio.wav import read_wav
from assistant.text.cer import cer
from assistant.text.ear_repair import Mender, distance, jieba_word_list, pinyin
from models.assets import Assets
from models.llama_llm import QWEN_05B_SHA256
from models.llama_scorer import LlamaScorer
from models.pinyin_ear import PinyinEar, syllables_of, toneless
from models.protocols import ModelError, Samples
from models.sherpa_kws import MODEL
from models.whisper_asr import WhisperAsr
from tests.conftest import REAL, SHARED, make_config

CORPUS = SHARED / "audio" / "corpus"


@pytest.fixture(scope="module")
def ear() -> Iterator[PinyinEar]:
    e = PinyinEar(Assets([SHARED / "models"]).folder(MODEL))
    e.load()
    yield e
    e.close()


def test_units_become_toneless_syllables_as_pypinyin_writes_them() -> None:
    assert toneless("ǎo") == "ao" and toneless("ǚ") == "v" and toneless("ü") == "v" and toneless("ē") == "e"
    assert syllables_of(["n", "ǐ", "h", "ǎo", "l", "ǜ"]) == ["ni", "hao", "lv"]
    assert syllables_of(["y", "ī", "A", "zh", "B", "ōng"]) == ["yi", "ong"]  # letters dropped, with a dangling initial


@pytest.mark.parametrize(("clip", "said"), [(REAL / "ask_who_are_you.wav", "告诉我你是谁你叫什么名字"),
                                            (REAL / "hey_xiaozhi.wav", "小智你在吗今天怎么样"),
                                            (CORPUS / "003.wav", "但是对他们是很大的刺激的这些事情")])
def test_the_second_ear_hears_the_syllables_of_real_speech(ear: PinyinEar, clip, said: str) -> None:
    heard = ear.syllables(read_wav(clip, 16000))
    # a near syllable (jiao heard as jia) costs a half or less: a few of those are allowed on any CPU
    assert distance(heard, pinyin(said)) <= 0.25 * len(said), heard


def test_the_second_ear_refuses_use_before_load_and_a_folder_without_its_files(tmp_path) -> None:
    with pytest.raises(ModelError, match="before load"):
        PinyinEar(tmp_path).syllables(read_wav(REAL / "hey_xiaozhi.wav", 16000))
    with pytest.raises(ModelError, match="lacks"):
        PinyinEar(tmp_path).load()


def test_the_configuration_gives_whisper_its_second_ear_only_where_it_can_mend() -> None:
    assets = Assets([SHARED / "models"])
    asr = backends.asr(make_config("asr.second_ear=true"), assets)
    assert isinstance(asr, WhisperAsr) and asr.ear is not None and asr.mender is not None
    off = backends.asr(make_config(), assets)  # the default: off (README "A second ear": its time)
    assert isinstance(off, WhisperAsr) and off.ear is None
    # nothing to judge a spelling by
    unweighed = backends.asr(make_config('asr.rescore=""', "asr.second_ear=true"), assets)
    assert isinstance(unweighed, WhisperAsr) and unweighed.ear is None and unweighed.mender is None


class HearingThe:
    """An ear double that hears the syllables of the sentence it was given, whatever the audio."""

    def __init__(self, said: str) -> None:
        self.said = said

    def load(self) -> None: ...

    def close(self) -> None: ...

    def syllables(self, samples: Samples) -> list[str]:
        return pinyin(self.said)


@pytest.mark.slow
async def test_whispers_transcript_is_mended_towards_what_the_second_ear_heard() -> None:
    # corpus 001 says 广州市房地产中介协会分析; Whisper base hears the 房 as another word (佛 on an AMD
    # EPYC). With an ear that heard the sentence's syllables the transcript comes nearer it, and
    # Whisper's own transcript is kept as another reading.
    said = "广州市房地产中介协会分析"
    folder, words = Assets([SHARED / "models"]).folder("whisper-base"), jieba_word_list()
    assert words is not None
    gguf = Assets([SHARED / "models"]).path("qwen2.5-coder-0.5b-instruct-q4_k_m",
                                             "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    scorer = LlamaScorer(gguf, expected_sha256=QWEN_05B_SHA256)
    plain = WhisperAsr(folder, beam_size=5, window_s=15.0, rescorer=scorer)
    mended = WhisperAsr(folder, beam_size=5, window_s=15.0, rescorer=scorer, ear=HearingThe(said),
                        mender=Mender(words))
    plain.load()
    mended.rescorer = None  # one scorer, loaded once: lent after load
    mended.load()
    mended.rescorer = scorer
    try:
        audio = read_wav(CORPUS / "001.wav", 16000)
        before = await plain.transcribe(audio)
        after = await mended.transcribe(audio)
        others = await mended.readings(after)
        mended.mend_below = -100.0  # only a transcript less likely than this is mended: none is
        kept = await mended.transcribe(audio)
    finally:
        mended.rescorer = None
        mended.close()
        plain.close()
    assert cer(said, after) < cer(said, before), (before, after)
    assert before in others, others  # Whisper's own words are one of the other readings
    assert kept == before
