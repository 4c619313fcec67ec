"""A screenshot of the status page during a real replay, for the README (docs/status-page.png).

Runs ``assistant replay SESSION --realtime --status`` on the real models (with an acoustic echo, so
the echo defence has something to count), opens the page in headless chromium over the DevTools
protocol, waits until the turns are in, shows the last turn's timeline picture and saves the page.

    .venv/bin/python benchmarks/status_screenshot.py [--session WAV] [--out docs/status-page.png]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_browser import browser
from tests.test_wyoming import free_port

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT.parent / "shared" / "audio" / "real" / "hey_xiaozhi.wav"

TURNS_IN = """
new Promise((resolve) => {
  const rows = document.getElementById("turns");
  const done = () => rows.rows.length >= %d;
  if (done()) resolve(true);
  new MutationObserver(() => done() && resolve(true)).observe(document.body, {childList: true, subtree: true});
})
"""

SHOW_LAST_TIMELINE = """
new Promise((resolve) => {
  const img = document.getElementById("timeline");
  img.onload = () => resolve(img.naturalWidth);
  document.querySelector("#turns a").click();
})
"""


async def until_served(url: str) -> None:
    """Wait while the replay loads its models (its page comes up after them)."""
    import aiohttp

    async with aiohttp.ClientSession() as http:
        for _ in range(1200):
            try:
                async with http.get(url) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.25)
    raise TimeoutError(f"{url} was not served within 5 minutes")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", type=Path, default=SESSION)
    parser.add_argument("--turns", type=int, default=2, help="wait for this many turns (default 2)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "status-page.png")
    args = parser.parse_args()
    from assistant.audio.wav import read_wav, write_wav

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="status-shot-") as folder:
        session = Path(folder) / "session.wav"  # the recording, then quiet: the page stays up meanwhile
        audio = read_wav(args.session, 16000)
        write_wav(session, np.concatenate([audio, np.zeros(20 * 16000, np.float32)]), 16000)
        replay = await asyncio.create_subprocess_exec(
            str(ROOT / ".venv" / "bin" / "assistant"), "replay", str(session), "--out", f"{folder}/out",
            "--realtime", "--status", "--echo", "0.3:40", "--set", f"status.address='127.0.0.1:{port}'",
            "--set", "wake.keywords=['小智']", "--set", "status.sample_s=1.0", "--set", "log.level='warning'")
        await until_served(f"http://127.0.0.1:{port}/api/status")
        async with browser(Path(folder) / "profile") as tab:
            await tab.open(f"http://127.0.0.1:{port}/")
            await tab.evaluate(TURNS_IN % args.turns, timeout_s=300)
            await asyncio.wait_for(tab.evaluate(SHOW_LAST_TIMELINE), 60)
            shot = await tab.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        args.out.write_bytes(base64.b64decode(shot["data"]))
        print(f"wrote {args.out}")
        await replay.wait()


if __name__ == "__main__":
    asyncio.run(main())
