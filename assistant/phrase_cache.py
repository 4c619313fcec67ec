"""A disk cache of synthesized phrases, so fixed replies play at once instead of after the TTS.

Greetings, confirmations, error messages and the fixed parts of tool replies are said again and
again. Synthesizing one costs about a second on the CPU; reading it back costs about a millisecond.
``warm`` synthesizes the missing ones ahead of time (at start-up), ``PhraseCache.get`` returns one.

Each phrase is one file named by a hash of (text, key parts) — the parts being whatever changes the
sound: the model's sha256, the voice, the speed (``tts_key`` builds them). A new model or voice
therefore simply misses; stale files are never played.

Files are 16-bit mono PCM wav rather than .npy. The playback path ends in 16-bit PCM anyway, so
nothing audible is lost, and a wav is half the size of float32, carries its own sample rate, and
can be listened to with any player when someone asks what the assistant will say. Writes are
atomic (temporary file, fsync, rename — as the model store does), so a crash never leaves a
half-written phrase under a real name. A file that still does not parse as what this module
writes (truncated, corrupt, replaced by hand) is a miss: it is logged and removed, never raised.
The audio is stored as the TTS produced it; playback cleans it like any other chunk.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
import wave
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import structlog

from models.protocols import Samples, Tts

log = structlog.get_logger("phrase_cache")

FORMAT = "tingshuo-phrase-1"  # part of every key: a change of file format misses old files
_SCALE = 32767.0


def default_folder() -> Path:
    """``$XDG_CACHE_HOME/tingshuo/phrases`` (~/.cache/tingshuo/phrases), beside the model store."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tingshuo" / "phrases"


def tts_key(model_sha256: str, voice: str, speed: float) -> tuple[str, ...]:
    """The key parts of one TTS set-up, with the speed spelled one way (1 and 1.0 are the same key)."""
    return (model_sha256, voice, repr(float(speed)))


class PhraseCache:
    """Synthesized phrases for one TTS set-up (``key_parts``), stored in ``folder``.

    ``get`` and ``put`` are small blocking file operations (a phrase is some 100 KB); call them
    from the loop only where a millisecond does not matter, or from a worker.
    """

    def __init__(self, folder: Path, key_parts: tuple[str, ...]) -> None:
        if not all(isinstance(part, str) for part in key_parts):
            raise TypeError(f"phrase cache: key parts must be strings, not {key_parts!r}")
        self.folder = folder
        self.key_parts = key_parts

    def path(self, text: str) -> Path:
        """The file that holds ``text`` (surrounding whitespace does not change the speech, nor the key)."""
        key = json.dumps([FORMAT, text.strip(), *self.key_parts], ensure_ascii=False)
        return self.folder / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()[:40]}.wav"

    def get(self, text: str) -> tuple[Samples, int] | None:
        """The stored audio of ``text`` and its sample rate, or None when it is missing or unreadable."""
        path = self.path(text)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:  # a folder in its place, no permission: not ours to delete
            log.warning("phrase cache file unreadable; treated as missing", path=str(path), error=str(exc))
            return None
        try:
            return _decode(data)
        except Exception as exc:  # whatever fails to parse as our own format is corrupt
            log.warning("phrase cache file corrupt; removed", path=str(path), error=str(exc))
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            return None

    def put(self, text: str, audio: Samples, sample_rate: int) -> bool:
        """Store ``audio`` (float32 mono in [-1, 1]) as the sound of ``text``; False if it could not be
        written (full or read-only disk: the assistant works on, just without the shortcut)."""
        if audio.ndim != 1:
            raise ValueError(f"phrase cache: expected mono audio, not shape {audio.shape}")
        if sample_rate <= 0:
            raise ValueError(f"phrase cache: sample rate must be positive, not {sample_rate}")
        target = self.path(text)
        try:
            _write_atomically(target, _encode(audio, sample_rate))
        except (OSError, wave.Error) as exc:
            log.warning("phrase not cached: write failed", path=str(target), error=str(exc))
            return False
        return True


def _encode(audio: Samples, sample_rate: int) -> bytes:
    clean = np.nan_to_num(np.asarray(audio, np.float64), nan=0.0, posinf=1.0, neginf=-1.0)
    pcm = (np.clip(clean, -1.0, 1.0) * _SCALE).round().astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm.tobytes())
    return buffer.getvalue()


def _decode(data: bytes) -> tuple[Samples, int]:
    """Parse a file ``_encode`` wrote; ValueError (or the wave module's own error) for anything else."""
    with wave.open(io.BytesIO(data), "rb") as w:
        channels, width, rate, frames = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
        raw = w.readframes(frames)
    if (channels, width) != (1, 2) or rate <= 0:
        raise ValueError(f"not 16-bit mono ({width * 8}-bit, {channels} channels, {rate} Hz)")
    if len(raw) != frames * 2:
        raise ValueError(f"truncated: {len(raw) // 2} of {frames} samples")
    audio = (np.frombuffer(raw, "<i2").astype(np.float32) / np.float32(_SCALE)).astype(np.float32)
    return audio, rate


def _write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``target``, fsync it, rename it over ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    try:  # make the rename itself durable; some file systems cannot fsync a folder, which is harmless
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


async def warm(cache: PhraseCache, tts: Tts, phrases: Iterable[str]) -> list[str]:
    """Synthesize and store every phrase ``cache`` lacks; returns the phrases synthesized, in order.

    Run it before the TTS speaks replies (at start-up, or in idle): the ``Tts`` protocol cannot tell
    a stream ended by ``stop()`` from a finished one, so a barge-in stopping the TTS while a phrase
    is being warmed would store the phrase cut short. Duplicates and blank phrases are skipped.
    """
    made: list[str] = []
    for text in dict.fromkeys(p.strip() for p in phrases):
        if not text or cache.get(text) is not None:
            continue
        pieces: list[Samples] = []
        stream = tts.synthesize(text)
        try:
            async for piece in stream:
                pieces.append(np.asarray(piece, np.float32).reshape(-1))
        finally:
            aclose = getattr(stream, "aclose", None)  # a cancelled warm-up must not leave the TTS busy
            if aclose is not None:
                await aclose()
        audio = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        cache.put(text, audio, tts.sample_rate)
        made.append(text)
    if made:
        log.info("phrases synthesized into the cache", count=len(made), folder=str(cache.folder))
    return made
