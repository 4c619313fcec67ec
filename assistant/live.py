"""The sound-card front end (``assistant run``): conversations on the ALSA devices until Ctrl-C or
SIGTERM, optionally recorded for replay. The devices and the holding of a session are
``assistant.frontend``'s, shared with the satellite."""

from __future__ import annotations

import asyncio
from pathlib import Path

from assistant import app
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.frontend import hold, open_devices, recorder


def run(cfg: Config, record: Path | None = None) -> None:
    """Hold conversations on the configured devices; with ``record``, save each session under it."""
    from assistant.status.web import page_for, with_page

    page = page_for(cfg, "run")
    clock = SampleClock(cfg.audio.sample_rate, realtime=True)
    source, sink = open_devices(cfg, clock)  # before the models load: a missing card is found at once
    rec = None
    try:
        with app.conversation(cfg, live=True) as parts:
            page.board.pids = parts.pids
            if record is not None:
                rec = recorder(record, cfg.audio.sample_rate, cfg.audio.record_max_minutes, cfg.audio.record_keep)
            asyncio.run(with_page(page, lambda: hold(parts, clock, source, sink, [page.board], recorder=rec)))
    finally:
        source.close()
        sink.close()
        if rec is not None:
            rec.close()
            kept = f" (and {len(rec.folders) - 1} earlier folders beside it)" if len(rec.folders) > 1 else ""
            print(f"recorded this session in {rec.folder}{kept} (replay it with: assistant replay "
                  f"{rec.folder} --out OUT)")
