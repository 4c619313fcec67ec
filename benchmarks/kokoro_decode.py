"""Where Kokoro's first sound goes on this CPU, and what streaming its decoder in windows would cost.

    .venv/bin/python benchmarks/kokoro_decode.py [--repeats 5]

Prints, on a quiet machine:
- the decoder's time for 4–128 frames of one piece (25 ms each), median of ``--repeats``;
- its op types by share of the time (onnxruntime's profiler, 64 frames), and the same decoder with its
  int8 weights dequantized to float, and with its ConvInteger weights shifted from uint8 to int8;
- the early head as shipped (``tts.first_frames``, LEAD_FRAMES of lead) against heads with less lead:
  their time, and their log-mel distance from the whole rendering over the head's own frames;
- a piece decoded in growing windows (each with some frames of left context, each as long as the
  audio already made leaves time for), the way a first sound under 0.2 s with no gap would need it
  here: the log-mel distance of the whole piece from its one-call rendering, beside the shipped
  head-and-whole splice.

The pieces are the ten sentences of ``assistant npu build`` and the first pieces of ``assistant bench``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app  # noqa: E402
from assistant.audio.metrics import log_mel_distance  # noqa: E402
from assistant.commands.bench import REPLIES  # noqa: E402
from assistant.commands.npu import SENTENCES  # noqa: E402
from assistant.config import load  # noqa: E402
from models import kokoro_split as ks  # noqa: E402
from models.kokoro_tts import SILENT, KokoroTts  # noqa: E402

Window = tuple[int, int, int]  # decoded from, played from, to (frames)


def growing_windows(s: ks.Span, first: int, lead: int, context: int, share: float) -> list[Window]:
    """The head (``first`` voiced frames after ``lead``), then windows each as long as the audio made so
    far leaves time to decode (at ``share`` s of decoding per s of audio, 85 % of it, 2 frames a call
    overhead), with ``context`` frames before it decoded and dropped; the rest in one when it fits."""
    end = s.end
    windows = [(max(s.start, s.voice - lead), s.voice, min(end, s.voice + first))]
    made, spent = windows[0][2] - s.voice, 0.0
    while windows[-1][2] < end:
        at = windows[-1][2]
        fits = max(int((0.85 * made - spent) / share) - 2 - context, 1)
        to = end if at + fits >= end else at + fits
        start = max(s.start, at - context)
        spent += share * (to - start + 2)
        made += to - at
        windows.append((start, at, to))
    return windows


def render(tts: KokoroTts, front: ks.Front, windows: list[Window]) -> np.ndarray:
    """The windows decoded one by one and joined as the head is joined today (a 20 ms cross-fade)."""
    import onnxruntime as ort

    out = np.zeros(0, np.float32)
    for start, at, to in windows:
        audio = tts._decode(front, start, to, ort.RunOptions())
        assert audio is not None
        cut = (at - start) * ks.FRAME
        fade = min(ks.FADE, cut, out.size)
        ramp = (0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, fade))).astype(np.float32)
        joined = out[out.size - fade:] * (1 - ramp) + audio[cut - fade:cut] * ramp
        out = np.concatenate([out[:out.size - fade], joined, audio[cut:]])
    return out


def timed(call: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def op_shares(tts: KokoroTts, front: ks.Front, s: ks.Span) -> list[tuple[str, float]]:
    import onnxruntime as ort

    _, decoder = ks.split(tts.model_path)
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.intra_op_num_threads = tts.threads
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "kokoro")
        options.log_severity_level = 3
        session = ort.InferenceSession(decoder, options, providers=["CPUExecutionProvider"])
        for _ in range(3):
            session.run(["audio"], front.feed(s.start, s.start + 64))
        events = json.loads(Path(session.end_profiling()).read_text())
    by_op: Counter[str] = Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            by_op[e["args"]["op_name"]] += e["dur"]
    total = sum(by_op.values())
    return [(op, t / total) for op, t in by_op.most_common(6)]


def variants(tts: KokoroTts, front: ks.Front, s: ks.Span, repeats: int) -> list[tuple[str, float]]:
    """64 frames decoded by the shipped graph, its float twin and its int8-weight twin (ms)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    from models import kokoro_graph

    _, decoder = ks.split(tts.model_path)
    signed = onnx.load_from_string(decoder)
    weights = {t.name: t for t in signed.graph.initializer}
    shifted: set[str] = set()
    for node in signed.graph.node:
        for name in node.input[1::2] if node.op_type == "ConvInteger" else ():  # weights and their zero point
            if name in weights and name not in shifted:
                values = numpy_helper.to_array(weights[name]).astype(np.int16) - 128
                weights[name].CopyFrom(numpy_helper.from_array(values.astype(np.int8), name))
                shifted.add(name)
    graphs = {"shipped (uint8 ConvInteger)": decoder,
              "float Conv/MatMul of the int8 weights": kokoro_graph.dequantized(onnx.load_from_string(decoder))
              .SerializeToString(),
              "int8 ConvInteger weights": signed.SerializeToString()}
    options = ort.SessionOptions()
    options.intra_op_num_threads = tts.threads
    options.log_severity_level = 3
    feed = front.feed(s.start, s.start + 64)
    out = []
    for name, graph in graphs.items():
        run = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"]).run
        out.append((name, timed(lambda run=run: run(["audio"], feed), repeats)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import onnxruntime as ort

    cfg = load(ROOT / "config.toml", [])
    with app.one_shot(cfg, "tts") as parts:
        tts: KokoroTts = parts.tts
        call = tts._worker.call
        texts = [*SENTENCES, *(text for _, text in REPLIES)]
        pieces = []
        for text in texts:
            phonemes = tts.pieces(text)[0]
            front = tts.front(phonemes)
            pieces.append((front, ks.span(front, phonemes, SILENT)))
        long_front, long_span = max(pieces, key=lambda p: p[1].frames)

        print("| decoder frames | time (ms) | ms a frame |\n|---|---|---|")
        for n in (4, 8, 16, 24, 32, 64, 128):
            t = timed(lambda n=n: call(tts._decode, long_front, long_span.start, long_span.start + n,
                                       ort.RunOptions()), args.repeats)
            print(f"| {n} | {1000 * t:.0f} | {1000 * t / n:.1f} |")
        print("\nop types, 64 frames: " + ", ".join(f"{op} {100 * share:.0f} %"
                                                    for op, share in op_shares(tts, long_front, long_span)))
        print("\n| decoder graph, 64 frames | time (ms) |\n|---|---|")
        for name, t in variants(tts, long_front, long_span, args.repeats):
            print(f"| {name} | {1000 * t:.0f} |")

        wholes = [call(tts._decode, f, s.start, s.end, ort.RunOptions())[(s.voice - s.start) * ks.FRAME:]
                  for f, s in pieces]
        print(f"\n| head ({len(pieces)} pieces) | decode p50 (ms) | log-mel from the whole, head's frames (dB) |")
        print("|---|---|---|")
        for first, lead in ((tts.first_frames, ks.LEAD_FRAMES), (tts.first_frames, 4), (10, 4), (10, 0)):
            distances, times = [], []
            for (f, s), whole in zip(pieces, wholes, strict=True):
                started = time.perf_counter()
                head = call(tts._decode, f, s.voice - lead, s.voice + first, ort.RunOptions())[lead * ks.FRAME:]
                times.append(time.perf_counter() - started)
                n = min(head.size, whole.size)
                distances.append(log_mel_distance(head[:n], whole[:n]))
            print(f"| {first} voiced frames, {lead} of lead | {1000 * statistics.median(times):.0f} | "
                  f"{statistics.mean(distances):.2f} (max {max(distances):.2f}) |")

        print("\n| whole piece rendered as | log-mel from the one-call rendering (dB) | calls a piece |")
        print("|---|---|---|")
        spliced = []
        for (f, s), whole in zip(pieces, wholes, strict=True):
            head = ks.head_frames(s, tts.first_frames)
            if s.voice + head + 8 >= s.end:
                spliced.append(0.0)
                continue
            early = ks.played(call(tts._decode, f, s.start, s.voice + head, ort.RunOptions()), s)
            joined = np.concatenate([early[:early.size - ks.FADE], ks.splice(early, whole)])
            spliced.append(log_mel_distance(joined, whole))
        print(f"| shipped: the head, then the whole piece spliced in | {statistics.mean(spliced):.2f} "
              f"(max {max(spliced):.2f}) | 2 |")
        for first, lead, context, share in ((10, 4, 8, 0.36), (12, 8, 12, 0.36), (16, 8, 8, 0.36)):
            distances, calls = [], []
            for (f, s), whole in zip(pieces, wholes, strict=True):
                windows = growing_windows(s, first, lead, context, share)
                distances.append(log_mel_distance(call(render, tts, f, windows), whole))
                calls.append(len(windows))
            print(f"| growing windows: head {first} + {lead} lead, {context} frames of context, decode share "
                  f"{share} | {statistics.mean(distances):.2f} (max {max(distances):.2f}) | "
                  f"{statistics.mean(calls):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
