"""``assistant npu build --target rk3576 OUT``: the project's own NPU models, built on an x86 PC.

Three steps, in two Pythons:

1. Here (the assistant's venv): cut Kokoro into source, fixed-shape decoder window and tail
   (``models/kokoro_graph.py``); run Kokoro's front on real Mandarin sentences and render them with
   the whole graph on the CPU (the reference); save window inputs from them as the simulator's
   samples, and from other sentences as the INT8 calibration set; likewise real inputs for Smart
   Turn (log-mel of real recordings) and silero VAD (real audio chunks).
2. In rknn-toolkit2's own venv (``deploy/rknn-toolkit.sh``): ``models/rknn_build.py`` builds each
   model per precision, simulates it against the ONNX original and renders the sentences window
   by window in the simulator.
3. Here again: score the simulator's Kokoro audio against the whole-graph CPU rendering (log-mel
   distance, and Whisper's character error rate against the text), write ``report.json``, and list
   the built files with their sha256 in ``built.json`` (``models/manifest.py``), laid out as
   ``OUT/<model>/<file>`` so that ``$TINGSHUO_MODELS=OUT`` or ``models.dirs`` finds them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from assistant.audio.metrics import log_mel_distance
from assistant.audio.resample import resample
from assistant.audio.wav import read_wav
from assistant.backends import assets_for
from assistant.config import Config
from assistant.text.cer import cer, ser
from models.assets import Assets
from models.protocols import ModelError

TARGETS = ("rk3576",)
PRECISIONS = ("fp16", "int8")
MODELS = ("kokoro", "smart-turn", "silero-vad")
ROOT = Path(__file__).resolve().parents[2]
SENTENCES = (  # scored: ten everyday Mandarin sentences, several windows each
    "今天天气不错，我们去公园散步吧。", "北京是中国的首都，也是一座历史悠久的城市。",
    "请帮我把客厅的灯打开，再把空调调到二十六度。", "明天早上七点叫我起床，别忘了提醒我带伞。",
    "我最喜欢的水果是苹果和香蕉，你呢？", "这家饭馆的菜很好吃，价格也不贵。",
    "火车将在十分钟后到站，请大家准备下车。", "周末我想和朋友一起去看电影。",
    "图书馆每天上午九点开门，晚上十点关门。", "谢谢你的帮助，祝你今天过得愉快！",
)
CALIBRATION = (  # INT8 calibration: other real sentences
    "你好，我是听说，有什么可以帮你的吗？", "现在是下午三点十五分，外面正在下雨。",
    "我们明天早上八点出发，先去公园散步，然后去图书馆看书。", "好的，我已经帮你记下来了。",
)
CLIPS = ("ask_who_are_you.wav", "hey_xiaozhi.wav", "cmd_qiehuan_1.wav", "greeting_10s.wav")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    npu = sub.add_parser("npu", parents=[common], help="build the NPU models (.rknn) on an x86 PC")
    actions = npu.add_subparsers(dest="npu_action", required=True)
    build = actions.add_parser("build", parents=[common],
                               help="convert Kokoro (windowed decoder), Smart Turn and silero VAD with rknn-toolkit2")
    build.add_argument("out", type=Path, help="folder for the .rknn files, report.json and built.json")
    build.add_argument("--target", required=True, help=f"the NPU: {', '.join(TARGETS)}")
    build.add_argument("--precision", default=",".join(PRECISIONS), help="fp16, int8 or both (default)")
    build.add_argument("--models", default=",".join(MODELS), help=f"any of {', '.join(MODELS)} (default: all)")
    build.add_argument("--sentences", type=int, default=len(SENTENCES), help="how many of the ten to score")
    build.add_argument("--reuse", action="store_true",
                       help="keep the models already built and simulated in OUT/work; build only the others")
    build.add_argument("--toolkit", type=Path, default=None,
                       help="the toolkit venv's python (default: where deploy/rknn-toolkit.sh puts it)")


def toolkit_python() -> Path:
    root = os.environ.get("TINGSHUO_RKNN_TOOLKIT") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tingshuo" / "rknn-toolkit2")
    return Path(root) / "venv" / "bin" / "python"


def _chosen(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in allowed]
    if unknown or not chosen:
        raise ModelError(f"npu build: unknown {what} {', '.join(unknown) or '(none)'}; "
                         f"choose from {', '.join(allowed)}")
    return chosen


def _check(args: argparse.Namespace) -> Path:
    """The toolkit's python, after every argument has been checked (one-line errors)."""
    if args.target not in TARGETS:
        raise ModelError(f"npu build: unknown target {args.target!r}; supported: {', '.join(TARGETS)}")
    if not 1 <= args.sentences <= len(SENTENCES):
        raise ModelError(f"npu build: --sentences must be 1–{len(SENTENCES)}")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        probe = args.out / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ModelError(f"npu build: cannot write to {args.out} ({exc.strerror or exc})") from None
    python = args.toolkit or toolkit_python()
    found = python.is_file() and subprocess.run(
        [str(python), "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('rknn') is None)"],
        capture_output=True, check=False).returncode == 0
    if not found:
        raise ModelError(f"npu build: rknn-toolkit2 is not installed (no toolkit venv at {python}); install it "
                         "with deploy/rknn-toolkit.sh (its own venv: about 3 GB of downloads, 6 GB on disk)")
    return python


def run(cfg: Config, args: argparse.Namespace) -> int:
    python = _check(args)
    precisions = _chosen(args.precision, PRECISIONS, "precision")
    names = _chosen(args.models, MODELS, "model")
    out: Path = args.out.resolve()
    work = out / "work"
    work.mkdir(exist_ok=True)
    assets = assets_for(cfg)
    started = time.monotonic()
    job: dict[str, Any] = {"target": args.target, "out": str(out), "work": str(work), "models": []}
    texts = SENTENCES[:args.sentences]
    kokoro = None
    if "kokoro" in names:
        _say("Kokoro: cutting the decoder and rendering the sentences on the CPU")
        kokoro = _prepare_kokoro(cfg, assets, work, texts)
        job["models"].append({**kokoro["spec"], "precisions": precisions})
    if "smart-turn" in names:
        job["models"].append({**_prepare_smart_turn(assets, work), "precisions": precisions})
    if "silero-vad" in names:
        job["models"].append({**_prepare_silero(assets, work), "precisions": precisions})
    if args.reuse:
        job["reuse"] = _reusable(out, args.target)
    (work / "job.json").write_text(json.dumps(job, indent=1))
    _say(f"converting in the toolkit's venv ({python}); its own log: {work / 'toolkit.log'}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = subprocess.run([str(python), "-m", "models.rknn_build", str(work / "job.json")], cwd=ROOT, env=env,
                          check=False).returncode
    if code != 0 or not (work / "results.json").is_file():
        raise ModelError(f"npu build: the toolkit step failed (exit {code}); see {work / 'toolkit.log'}")
    results = json.loads((work / "results.json").read_text())
    if kokoro is not None:
        _say("scoring the simulator's Kokoro audio (log-mel distance, Whisper round trip)")
        _score_kokoro(assets, results, kokoro, texts)
    if "smart-turn" in names:
        _smart_turn_as_shipped(assets, work, results)
    rebuilt = {spec["name"] for spec in job["models"]}
    results = [*_earlier(out, rebuilt), *results]  # a build of some models keeps the others' results
    report = {"target": args.target, "seconds": round(time.monotonic() - started), "results": results,
              "tts": {"voice": cfg.tts.voice, "onset_frames": cfg.tts.onset_frames}}  # what Kokoro's pieces were
    install = python.parent.parent.parent / "install.json"
    if install.is_file():
        report["toolkit_install"] = json.loads(install.read_text())
    _register(out, results, args.target)  # first: the report names each file where it now is
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    _summary(report)
    return 0 if any(r.get("built") for r in results) else 1


def _reusable(out: Path, target: str) -> list[dict[str, Any]]:
    """The builds an earlier run left in ``out`` (file still there), from its results or its report."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for listing in (out / "work" / "results.json", out / "report.json"):
        try:
            doc = json.loads(listing.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        for r in doc["results"] if isinstance(doc, dict) else doc:
            if not r.get("built"):
                continue
            name = Path(r["file"]).name
            for place in (Path(r["file"]), out / f"{r['model']}-{target}-{r['precision']}" / name):
                if place.is_file():
                    found.setdefault((r["model"], r["precision"]), {**r, "file": str(place)})
                    break
    return list(found.values())


def _earlier(out: Path, rebuilt: set[str]) -> list[dict[str, Any]]:
    """The results of an earlier build into ``out`` for the models not built again now."""
    try:
        earlier = json.loads((out / "report.json").read_text("utf-8"))["results"]
    except (OSError, ValueError, KeyError):
        return []
    return [r for r in earlier if r.get("model") not in rebuilt]


def _say(message: str) -> None:
    print(f"npu build: {message}", file=sys.stderr, flush=True)


def _save(path: Path, feeds: list[dict[str, Any]]) -> Path:
    arrays: dict[str, Any] = {f"{i}/{k}": v for i, feed in enumerate(feeds) for k, v in feed.items()}
    np.savez(path, **arrays)
    return path


def _prepare_kokoro(cfg: Config, assets: Assets, work: Path, texts: tuple[str, ...]) -> dict[str, Any]:
    """Kokoro cut into its three parts, and the sentences' pieces as the board's backend renders them
    (``KokoroRknnTts``): the voiced frames only (``kokoro_split.span``), the source run over the whole
    piece and cut to them. The reference is the whole graph's rendering of every frame; a window
    rendering is scored where the board plays it, in silence where it plays nothing (the start token,
    the end token), so both are heard in the same place."""
    import onnxruntime as ort

    from models import kokoro_graph as kg
    from models import kokoro_split as ks
    from models import kokoro_window as kw
    from models.kokoro_tts import SILENT, KokoroTts

    folder = work / "kokoro"
    folder.mkdir(exist_ok=True)
    model = assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx")
    parts = kg.cut(model)
    paths = {n: folder / f"{n}.onnx" for n in ("source", "window", "tail")}
    for name, path in paths.items():
        path.write_bytes(getattr(parts, name))
    source = ort.InferenceSession(parts.source, providers=["CPUExecutionProvider"])

    def har_of(f0: np.ndarray) -> np.ndarray:
        return np.asarray(source.run([kg.HAR], {kg.F0: f0})[0], np.float32)

    tts = KokoroTts(model, assets.path("kokoro-v1.0-int8", "vocab.json"),
                    assets.path("kokoro-zh-voices", f"{cfg.tts.voice}.bin"))
    tts.load()
    try:
        pieces, wholes, owners, places = [], [], [], []
        for i, text in enumerate(texts):
            for phonemes in tts.pieces(text):
                f = tts.front(phonemes)
                sp = ks.span(f, phonemes, SILENT, cfg.tts.onset_frames)
                pieces.append({"features": f.features[:, :, sp.start:sp.end], "f0": f.f0[:, 2 * sp.start:2 * sp.end],
                               "energy": f.energy[:, 2 * sp.start:2 * sp.end],
                               "style": np.asarray(f.style, np.float32).reshape(1, -1),
                               "har": har_of(f.f0)[:, :, kg.COLUMNS * sp.start:kg.COLUMNS * sp.end + 1]})
                wholes.append(tts.render_whole(f))
                # (lead frames decoded for their level but not played, silence before, silence after)
                places.append(((sp.voice - sp.start) * kw.FRAME, sp.voice * kw.FRAME,
                               (int(f.durations.sum()) - sp.end) * kw.FRAME))
                owners.append(i)
        calibration = [tts.front(p) for text in CALIBRATION for p in tts.pieces(text)]
    finally:
        tts.close()
    plan = kw.Plan()

    def window_feeds(p: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        har = p["har"] if "har" in p else har_of(p["f0"])
        return [kw.feed(p["features"], p["f0"], p["energy"], p["style"], har, w, plan.frames)
                for w in kw.windows(plan, p["features"].shape[-1])]

    samples = [feed for p in pieces[:4] for feed in window_feeds(p)][:8]
    calib = [feed for f in calibration for feed in window_feeds(
        {"features": f.features, "f0": f.f0, "energy": f.energy, "style": np.asarray(f.style).reshape(1, -1)})]
    for i, audio in enumerate(wholes):
        np.save(folder / f"whole{i}.npy", audio)
    spec = {"name": "kokoro-decoder-window", "onnx": str(paths["window"]),
            "inputs": kg.WindowShapes(plan.frames).inputs, "samples": str(_save(folder / "samples.npz", samples)),
            "calibration": str(_save(folder / "calibration.npz", calib)),
            "kokoro": {"source": str(paths["source"]), "tail": str(paths["tail"]),
                       "plan": [plan.frames, plan.context, plan.overlap],
                       "pieces": str(_save(folder / "pieces.npz", pieces))}}
    return {"spec": spec, "owners": owners, "wholes": wholes, "places": places, "parts": parts, "pieces": pieces}


def _clip(name: str) -> np.ndarray:
    return read_wav(ROOT.parent / "shared" / "audio" / "real" / name, 16000)


def _prepare_smart_turn(assets: Assets, work: Path) -> dict[str, Any]:
    import onnx
    from faster_whisper.feature_extractor import FeatureExtractor

    from models.onnx_float import without_qdq

    # As shipped (QDQ int8) the toolkit takes it for a QAT model and its compiler crashed (SIGSEGV):
    # the float graph of the same int8 weights is what is converted.
    model = work / "smart-turn-v3.2-float.onnx"
    onnx.save(without_qdq(onnx.load(str(assets.path("smart-turn-v3.2", "smart-turn-v3.2-cpu.onnx")))), str(model))
    features = FeatureExtractor(feature_size=80, sampling_rate=16000, chunk_length=8)
    feeds = []
    for name in CLIPS:
        audio = _clip(name)[-8 * 16000:]
        audio = np.concatenate([np.zeros(8 * 16000 - audio.size, np.float32), audio])
        feeds.append({"input_features": features(audio, padding=0)[:, -800:].astype(np.float32)[None]})
    path = _save(work / "smart-turn-samples.npz", feeds)
    return {"name": "smart-turn-v3.2", "onnx": str(model), "inputs": {"input_features": [1, 80, 800]},
            "samples": str(path)}


def _smart_turn_as_shipped(assets: Assets, work: Path, results: list[dict[str, Any]]) -> None:
    """Beside each clip's simulated score: the shipped QDQ model's on onnxruntime (the float graph
    that is converted computes the int8 weights with float activations, which moves some scores)."""
    import onnxruntime as ort

    shipped = ort.InferenceSession(str(assets.path("smart-turn-v3.2", "smart-turn-v3.2-cpu.onnx")),
                                   providers=["CPUExecutionProvider"])
    with np.load(work / "smart-turn-samples.npz") as z:
        scores = [round(float(shipped.run(None, {"input_features": z[f"{i}/input_features"]})[0].reshape(-1)[0]), 4)
                  for i in range(len(CLIPS))]
    for r in results:
        if r.get("model") == "smart-turn-v3.2" and r.get("values"):
            r["clips"] = [{"clip": clip, "shipped_qdq_cpu": shipped_p, "float_cpu": float_p, "simulator": sim_p}
                          for clip, shipped_p, (float_p, sim_p) in zip(CLIPS, scores, r["values"]["logits"],
                                                                       strict=True)]


def _prepare_silero(assets: Assets, work: Path) -> dict[str, Any]:
    import onnx
    import onnxruntime as ort

    from models.onnx_fixed import without_ifs

    # As shipped, an If on the sample rate around nested Ifs on shapes: the toolkit refused its inputs.
    # The 16 kHz graph at the NPU's fixed shapes (512 new samples + 64 before them) is converted.
    original = assets.path("silero-vad", "silero_vad.onnx")
    session = ort.InferenceSession(str(original), providers=["CPUExecutionProvider"])

    def chunks(clip: str) -> list[np.ndarray]:
        audio = _clip(clip)
        return [audio[s:s + 576][None].astype(np.float32) for s in range(0, audio.size - 576, 512)]

    state, rate, feeds = np.zeros((2, 1, 128), np.float32), np.array(16000, np.int64), []
    for i, chunk in enumerate(chunks(CLIPS[0])):  # real states, carried as the VAD carries them
        if i % 6 == 0:
            feeds.append({"input": chunk, "state": state})
        state = session.run(["stateN"], {"input": chunk, "state": state, "sr": rate})[0]
    model = work / "silero-vad-16k.onnx"
    onnx.save(without_ifs(onnx.load(str(original)), {**feeds[0], "sr": rate}), str(model))
    sequence = work / "silero-sequence.npz"
    arrays: dict[str, Any] = {str(i): c for i, c in enumerate(chunks(CLIPS[1]))}  # another recording, whole
    np.savez(sequence, **arrays)
    return {"name": "silero-vad", "onnx": str(model), "inputs": {"input": [1, 576], "state": [2, 1, 128]},
            "samples": str(_save(work / "silero-samples.npz", feeds)),
            "sequence": {"chunks": str(sequence), "input": "input", "state": "state", "next_state": "stateN",
                         "output": "output", "state_shape": [2, 1, 128], "threshold": 0.5}}


def spoken_cer(reference: str, heard: str) -> float:
    """``cer`` of what was heard read out in words: Whisper writes numbers as digits (26度 for the
    二十六度 Kokoro said), and the TTS's own normalizer says them back as words."""
    from assistant.text.normalize import normalize

    return cer(reference, normalize(heard))


JUDGES = {"beam5": 5, "greedy": 1}  # Whisper base's beam: 5 is how the assistant hears (asr.beam_size)


def _score_kokoro(assets: Assets, results: list[dict[str, Any]], kokoro: dict[str, Any],
                  texts: tuple[str, ...]) -> None:
    """Per built precision (and for the same windows on onnxruntime): log-mel and CER per sentence.

    The judge is Whisper base decoding as the assistant does (beam 5, chosen on the real recordings in
    README "Whisper base at its best"), without the rescoring language model, which would mend what the
    voice got wrong; greedy decoding (the first reports' judge) is kept beside it as ``greedy``."""
    from models.whisper_asr import WhisperAsr

    def played(audio: list[np.ndarray]) -> list[np.ndarray]:
        """A window rendering as the board plays it, in its place in the whole piece."""
        return [np.concatenate([np.zeros(before, np.float32), a[lead:], np.zeros(after, np.float32)])
                for a, (lead, before, after) in zip(audio, kokoro["places"], strict=True)]

    renders: dict[str, list[np.ndarray]] = {"whole-cpu": kokoro["wholes"],
                                            "windowed-cpu": played(_windowed_on_cpu(kokoro))}
    for r in results:
        if r.get("audio"):
            renders[f"windowed-{r['precision']}-simulator"] = played([np.load(p) for p in r["audio"]])
    clips = {name: [np.concatenate([a for a, o in zip(audio, kokoro["owners"], strict=True) if o == i])
                    for i in range(len(texts))] for name, audio in renders.items()}
    refs = clips["whole-cpu"]
    heard: dict[str, dict[str, list[str]]] = {}
    for judge, beam in JUDGES.items():
        asr = WhisperAsr(assets.folder("whisper-base"), beam_size=beam)
        asr.load()
        try:
            heard[judge] = {name: [asyncio.run(asr.transcribe(resample(c, 24000, asr.sample_rate))) for c in cl]
                            for name, cl in clips.items()}
        finally:
            asr.close()
    scores = {name: _rendering(texts, cl, refs, heard["beam5"][name], heard["greedy"][name])
              for name, cl in clips.items()}
    for r in results:
        if r.get("model") == "kokoro-decoder-window":
            r["rendering"] = scores.get(f"windowed-{r['precision']}-simulator")
    results.append({"model": "kokoro-decoder-window", "precision": "reference", "rendering": {
        k: v for k, v in scores.items() if k in ("whole-cpu", "windowed-cpu")}})


def _heard(text: str, heard: str) -> dict[str, Any]:
    return {"heard": heard, "cer": round(spoken_cer(text, heard), 3), "cer_as_written": round(cer(text, heard), 3),
            "ser": round(ser(text, heard), 3)}


def _rendering(texts: tuple[str, ...], clips: list[np.ndarray], refs: list[np.ndarray], beam: list[str],
               greedy: list[str]) -> dict[str, Any]:
    """One rendering's scores: per sentence, and their means (the beam's, and the greedy judge's)."""
    per = [{"text": t, **_heard(t, b), "log_mel_db": round(log_mel_distance(c, r), 2), "greedy": _heard(t, g)}
           for t, c, r, b, g in zip(texts, clips, refs, beam, greedy, strict=True)]

    def means(rows: list[dict[str, Any]]) -> dict[str, float]:
        return {k: round(float(np.mean([p[k] for p in rows])), 3) for k in ("cer", "cer_as_written", "ser")}

    return {**means(per), "log_mel_db": round(float(np.mean([p["log_mel_db"] for p in per])), 2),
            "judge": "Whisper base, int8, beam 5", "greedy": means([p["greedy"] for p in per]), "sentences": per}


def _windowed_on_cpu(kokoro: dict[str, Any]) -> list[np.ndarray]:
    """The same windows through onnxruntime (fp32, the exact window shapes): the x86 rendering."""
    import onnxruntime as ort

    from models import kokoro_graph as kg
    from models import kokoro_window as kw

    parts = kokoro["parts"]
    window, tail = (ort.InferenceSession(b, providers=["CPUExecutionProvider"]) for b in (parts.window, parts.tail))
    return [np.concatenate(list(kw.render(
        p["features"], p["f0"], p["energy"], p["style"], source=kw.computed(p["har"]),
        window=lambda feed: window.run([kg.POST], feed)[0],
        tail=lambda post: tail.run([kg.AUDIO], {kg.POST: post})[0]))) for p in kokoro["pieces"]]


def _register(out: Path, results: list[dict[str, Any]], target: str) -> None:
    """Each built file moved to OUT/<model>/<file> and listed with its sha256 in OUT/built.json."""
    from models.files import sha256
    from models.manifest import BUILT_MANIFEST

    entries = []
    for r in results:
        if not r.get("built"):
            continue
        src = Path(r["file"])
        name = f"{r['model']}-{target}-{r['precision']}"
        dest = out / name / src.name
        if not src.is_file() and dest.is_file():  # an earlier run's result, its file already in place
            src = dest
        if not src.is_file():
            r.update(built=False, error=f"its built file {src} is gone; build it again")
            continue
        dest.parent.mkdir(exist_ok=True)
        if src != dest:
            shutil.move(str(src), dest)
        r["file"] = str(dest)
        entries.append({"name": name, "kind": "npu", "file": dest.name, "sha256": sha256(dest),
                        "size": dest.stat().st_size, "description": f"{r['model']} for {target}, {r['precision']}"})
    (out / BUILT_MANIFEST).write_text(json.dumps(entries, indent=1))


def _summary(report: dict[str, Any]) -> None:
    for r in report["results"]:
        if r["precision"] == "reference":
            for name, s in r["rendering"].items():
                print(f"{r['model']:<24} {name:<14} CER {s['cer']:.3f}  log-mel {s['log_mel_db']:.2f} dB")
            continue
        line = f"{r['model']:<24} {r['precision']:<14} "
        if not r.get("built"):
            print(line + f"failed: {r.get('error')}")
            continue
        worst = min((o["cosine_min"] for o in r.get("outputs", {}).values()), default=float("nan"))
        snr = min((o["snr_db_min"] for o in r.get("outputs", {}).values()), default=float("nan"))
        extra = f"  CER {r['rendering']['cer']:.3f}  log-mel {r['rendering']['log_mel_db']:.2f} dB" \
            if r.get("rendering") else ""
        if r.get("sequence"):
            q = r["sequence"]
            extra += (f"  {q['chunks']} chunks in sequence: max |Δ| {q['max_abs']}, "
                      f"decisions agree {q['decisions_agree']}")
        print(line + f"built in {r.get('build_seconds')} s, cosine ≥ {worst:.4f}, SNR ≥ {snr:.1f} dB{extra}")
        for c in r.get("clips", []):
            print(f"{'':<24} {c['clip']:<20} p(complete): shipped {c['shipped_qdq_cpu']:.3f}, "
                  f"float {c['float_cpu']:.3f}, simulated {c['simulator']:.3f}")
    print(f"report: {report['seconds']} s in all")
