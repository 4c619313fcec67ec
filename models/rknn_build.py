"""Build .rknn models with rknn-toolkit2 and check each one in the toolkit's simulator.

Runs inside the toolkit's own venv (``deploy/rknn-toolkit.sh``), started by ``assistant npu
build``: ``python -m models.rknn_build JOB.json``. It imports only numpy, onnxruntime, the toolkit
and the Kokoro window code, never the assistant.

The job (JSON) names the target, the output folder, a work folder and the models. Each model is
built once per precision (``fp16``; ``int8`` with a calibration list of real inputs), exported, and
then — in the same session, since a model loaded back from a .rknn file cannot be simulated — run in
the simulator on the job's sample inputs beside onnxruntime on the ONNX original: per output, the
cosine, the SNR and the largest difference. For the Kokoro window it also renders every sample piece
window by window with the simulator as the window runner (the source and tail on onnxruntime, as on
the board) and saves the audio for the caller to score; for a recurrent model (silero VAD) it runs a
whole recording with the simulator and onnxruntime each carrying its own state. A model that does
not build is recorded with the toolkit's own message; the others go on.

Each model and precision is converted in a child process (the toolkit's compiler has ended its
process with SIGSEGV on a quantized model): a crash is recorded with its signal and the log's last
lines. Results the job lists under ``reuse`` (an earlier build of the same inputs) are taken as they
are. The toolkit prints its own logs and progress bars; they go to ``toolkit.log`` in the work
folder, and this module prints one line per step on the real stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from models import kokoro_window as kw

_progress = sys.stderr


def say(message: str) -> None:
    print(f"npu build: {message}", file=_progress, flush=True)


@contextlib.contextmanager
def toolkit_output(log: Path) -> Iterator[None]:
    """The process's stdout and stderr (the toolkit's logs, its C++ prints too) into ``log``."""
    global _progress
    saved_out, saved_err = os.dup(1), os.dup(2)
    _progress = os.fdopen(os.dup(2), "w")
    with log.open("ab") as f:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved_out, 1)
            os.dup2(saved_err, 2)
            os.close(saved_out)
            os.close(saved_err)
            _progress.close()
            _progress = sys.stderr


def compare(expected: list[np.ndarray], got: list[np.ndarray]) -> list[dict[str, float]]:
    """Per output: cosine similarity, SNR (dB) and largest absolute difference of ``got`` against ``expected``.

    A one-value output (a probability) has a cosine of ±1 whatever the error: its SNR and difference say more.
    """
    out = []
    for e, g in zip(expected, got, strict=True):
        a = np.asarray(e, np.float64).reshape(-1)
        b = np.asarray(g, np.float64).reshape(-1)
        if a.size != b.size:
            out.append({"cosine": float("nan"), "snr_db": float("nan"), "max_abs": float("nan"),
                        "size_mismatch": float(b.size)})
            continue
        cos = float(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-30)
        noise = float(np.sum((a - b) ** 2))
        snr = float(10 * np.log10(max(float(np.sum(a * a)), 1e-30) / max(noise, 1e-30)))
        out.append({"cosine": round(cos, 6), "snr_db": round(snr, 2), "max_abs": float(np.max(np.abs(a - b)))})
    return out


def _samples(path: Path, names: list[str]) -> list[list[np.ndarray]]:
    """Feeds saved as ``<i>/<input name>`` keys in an .npz, in input order."""
    with np.load(path) as z:
        count = len({k.split("/", 1)[0] for k in z.files})
        return [[z[f"{i}/{n}"] for n in names] for i in range(count)]


def _dataset(samples: list[list[np.ndarray]], folder: Path) -> Path:
    """The toolkit's calibration list: one line per sample, one .npy per input."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, feed in enumerate(samples):
        paths = []
        for j, array in enumerate(feed):
            p = folder / f"{i}_{j}.npy"
            np.save(p, array)
            paths.append(str(p))
        lines.append(" ".join(paths))
    listing = folder / "dataset.txt"
    listing.write_text("\n".join(lines) + "\n")
    return listing


def build_one(spec: dict[str, Any], precision: str, job: dict[str, Any]) -> dict[str, Any]:
    """Build, export and simulate one model at one precision; the result as a JSON-able dict."""
    import onnxruntime as ort
    from rknn.api import RKNN  # type: ignore[import-not-found]  # only in the toolkit's venv

    name, onnx_path = spec["name"], Path(spec["onnx"])
    work = Path(job["work"]) / name / precision
    work.mkdir(parents=True, exist_ok=True)
    out_file = Path(job["out"]) / f"{name}-{job['target']}-{precision}.rknn"
    result: dict[str, Any] = {"model": name, "precision": precision, "built": False}
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    shapes = [list(spec["inputs"][n]) for n in names]
    samples = _samples(Path(spec["samples"]), names)
    rknn = RKNN(verbose=False)
    start = time.monotonic()
    try:
        config: dict[str, Any] = {"target_platform": job["target"], "optimization_level": 3}
        if precision == "int8":
            config.update(quantized_dtype="w8a8", quantized_algorithm="normal")
        rknn.config(**config)
        say(f"{name} {precision}: loading {onnx_path.name}")
        if rknn.load_onnx(str(onnx_path), inputs=names, input_size_list=shapes) != 0:
            return {**result, "error": "load_onnx failed (see toolkit.log)"}
        dataset = None
        if precision == "int8":
            calibration = _samples(Path(spec["calibration"]), names) if spec.get("calibration") else samples
            dataset = str(_dataset(calibration, work / "calibration"))
        say(f"{name} {precision}: building (this is the long step)")
        if rknn.build(do_quantization=precision == "int8", dataset=dataset) != 0:
            return {**result, "error": "build failed (see toolkit.log)", "seconds": round(time.monotonic() - start)}
        if rknn.export_rknn(str(out_file)) != 0:
            return {**result, "error": "export_rknn failed"}
        result.update(built=True, file=str(out_file), bytes=out_file.stat().st_size,
                      build_seconds=round(time.monotonic() - start))
        say(f"{name} {precision}: built in {result['build_seconds']} s; simulating")
        if rknn.init_runtime() != 0:
            return {**result, "error": "init_runtime (simulator) failed"}
        outputs = [o.name for o in session.get_outputs()]
        scores: list[list[dict[str, float]]] = []
        values: dict[str, list[list[float]]] = {}
        for feed in samples:
            expected = session.run(outputs, dict(zip(names, feed, strict=True)))
            got = rknn.inference(inputs=list(feed))
            scores.append(compare(expected, got))
            for o, e, g in zip(outputs, expected, got, strict=True):
                if np.size(e) == 1:  # a score (Smart Turn's, the VAD's): each sample's [onnx, simulator]
                    values.setdefault(o, []).append([round(float(np.ravel(x)[0]), 4) for x in (e, g)])
        if values:
            result["values"] = values
        result["outputs"] = {o: {"cosine_min": min(s[k]["cosine"] for s in scores),
                                 "cosine_mean": round(float(np.mean([s[k]["cosine"] for s in scores])), 6),
                                 "snr_db_min": min(s[k]["snr_db"] for s in scores),
                                 "snr_db_mean": round(float(np.mean([s[k]["snr_db"] for s in scores])), 2),
                                 "max_abs": float(f"{max(s[k]['max_abs'] for s in scores):.3g}")}
                             for k, o in enumerate(outputs)}
        result["samples"] = len(samples)
        if spec.get("sequence"):
            say(f"{name} {precision}: running the recorded sequence with its state carried")
            result["sequence"] = _sequence(spec["sequence"], outputs, session.run,
                                           lambda feed: rknn.inference(inputs=[feed[n] for n in names]))
        if spec.get("kokoro"):
            result["audio"] = _render_kokoro(spec["kokoro"], lambda feed: rknn.inference(
                inputs=[feed[n] for n in names])[0], work)
        result["seconds"] = round(time.monotonic() - start)
        return result
    except Exception as exc:  # the toolkit raises plain exceptions; record it, go on with the next model
        traceback.print_exc()
        return {**result, "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}"}
    finally:
        rknn.release()


def _sequence(spec: dict[str, Any], outputs: list[str], cpu: Any, npu: Any) -> dict[str, Any]:
    """A recurrent model over a whole recording, each side carrying its own state (as the VAD runs).

    The per-sample scores feed both sides the same state; here the NPU's state errors add up over the
    recording as they would on the board. Compared: the score output, and the decisions at ``threshold``.
    """
    state_in, state_out, score = spec["state"], spec["next_state"], spec["output"]
    with np.load(spec["chunks"]) as z:
        chunks = [z[k] for k in sorted(z.files, key=int)]
    zero = np.zeros(spec["state_shape"], np.float32)
    cpu_state, npu_state, expected, got = zero, zero, [], []
    for chunk in chunks:
        e = dict(zip(outputs, cpu(outputs, {spec["input"]: chunk, state_in: cpu_state}), strict=True))
        g = dict(zip(outputs, npu({spec["input"]: chunk, state_in: npu_state}), strict=True))
        cpu_state, npu_state = e[state_out], np.asarray(g[state_out], np.float32).reshape(zero.shape)
        expected.append(float(np.asarray(e[score]).reshape(-1)[0]))
        got.append(float(np.asarray(g[score]).reshape(-1)[0]))
    a, b = np.array(expected), np.array(got)
    t = spec["threshold"]
    return {"chunks": len(chunks), "max_abs": round(float(np.max(np.abs(a - b))), 4),
            "mean_abs": round(float(np.mean(np.abs(a - b))), 4),
            "decisions_agree": round(float(np.mean((a > t) == (b > t))), 4), "threshold": t,
            "cpu_above": int(np.sum(a > t)), "npu_above": int(np.sum(b > t))}


def _render_kokoro(spec: dict[str, Any], window: Any, work: Path) -> list[str]:
    """Every sample piece rendered window by window with ``window``; the saved audio files."""
    import onnxruntime as ort

    from models.kokoro_graph import AUDIO, F0, HAR, POST

    source = ort.InferenceSession(spec["source"], providers=["CPUExecutionProvider"])
    tail = ort.InferenceSession(spec["tail"], providers=["CPUExecutionProvider"])
    plan = kw.Plan(*spec["plan"])
    saved = []
    with np.load(spec["pieces"]) as z:
        count = len({k.split("/", 1)[0] for k in z.files})
        for i in range(count):
            say(f"  rendering piece {i + 1}/{count} in the simulator")
            har = z[f"{i}/har"] if f"{i}/har" in z.files else source.run([HAR], {F0: z[f"{i}/f0"]})[0]
            audio = np.concatenate(list(kw.render(
                z[f"{i}/features"], z[f"{i}/f0"], z[f"{i}/energy"], z[f"{i}/style"], source=kw.computed(har),
                window=window,
                tail=lambda post: tail.run([AUDIO], {POST: post})[0], plan=plan)))
            path = work / f"piece{i}.npy"
            np.save(path, audio.astype(np.float32))
            saved.append(str(path))
    return saved


def _isolated(job_path: Path, index: int, precision: str, work: Path) -> dict[str, Any]:
    """One build in a child process: the toolkit's compiler can end its process (SIGSEGV seen)."""
    job = json.loads(job_path.read_text())
    spec = job["models"][index]
    result_path = work / spec["name"] / precision / "result.json"
    result_path.unlink(missing_ok=True)
    with (work / "toolkit.log").open("ab") as log:
        code = subprocess.run([sys.executable, "-m", "models.rknn_build", str(job_path), str(index), precision],
                              stdout=log, stderr=None, check=False).returncode
    if result_path.is_file():
        result: dict[str, Any] = json.loads(result_path.read_text())
        return result
    how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit {code}"
    return {"model": spec["name"], "precision": precision, "built": False,
            "error": f"the toolkit's process ended with {how} while converting; its last lines: "
                     + " | ".join(_tail(work / "toolkit.log"))}


def _tail(log: Path, lines: int = 3) -> list[str]:
    """The last meaningful lines of the toolkit's log (no progress bars)."""
    text = log.read_text("utf-8", errors="replace").replace("\r", "\n")
    kept = [line.strip()[:200] for line in text.splitlines()
            if line.strip() and "it/s]" not in line and "s/it]" not in line and "|" not in line]
    return kept[-lines:]


def main(argv: list[str]) -> int:
    job_path = Path(argv[0])
    job = json.loads(job_path.read_text())
    work = Path(job["work"])
    work.mkdir(parents=True, exist_ok=True)
    if len(argv) == 3:  # the child: one model at one precision
        spec, precision = job["models"][int(argv[1])], argv[2]
        with toolkit_output(work / "toolkit.log"):
            result = build_one(spec, precision, job)
        (work / spec["name"] / precision / "result.json").write_text(json.dumps(result, indent=1))
        return 0
    reused = {(r["model"], r["precision"]): r for r in job.get("reuse", [])}
    results = []
    for index, spec in enumerate(job["models"]):
        for precision in spec["precisions"]:
            earlier = reused.get((spec["name"], precision))
            if earlier is not None:
                say(f"{spec['name']} {precision}: reusing the earlier build and simulation")
                results.append(earlier)
            else:
                results.append(_isolated(job_path, index, precision, work))
            (work / "results.json").write_text(json.dumps(results, indent=1))
            r = results[-1]
            say(f"{r['model']} {precision}: " + (f"error: {r['error']}" if "error" in r else "done"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
