"""A real Home Assistant core (PyPI ``homeassistant`` 2024.3.3, the last release for Python 3.11) for
the device-control tests: installed once into its own virtualenv under ~/.cache/tingshuo (about 30 s
and 480 MB), started on a loopback port with a fresh config of Chinese-named devices, onboarded, and
given a long-lived access token — as a user would make one.

The house: lights 客厅灯 (alias 大灯) and 卧室灯, a curtain 窗帘 and an air conditioner 空调, all
template entities over input helpers (no network, no cloud, no frontend). Home Assistant 2024.3
has no zh-cn sentence to set a temperature, so one custom sentence adds it (newer releases have it).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

VERSION = "2024.3.3"
HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tingshuo" / f"home-assistant-{VERSION}"
# What the integrations of this config need, installed up front so it runs with --skip-pip.
REQUIREMENTS = ["hassil==1.6.1", "home-assistant-intents==2024.3.12", "SQLAlchemy==2.0.27", "fnv-hash-fast==0.5.0",
                "Pillow==10.2.0", "securetar==2024.2.1", "psutil-home-assistant==0.0.1", "ifaddr==0.2.0",
                "aiohttp_cors==0.7.0", "aiohttp-fast-url-dispatcher==0.3.0", "aiohttp-zlib-ng==0.3.1"]
# … and what its Wyoming integration needs (it also sets up assist_pipeline, stt, tts, wake_word)
VOICE = ["wyoming==1.5.3", "webrtc-noise-gain==1.2.3", "mutagen==1.47.0", "ha-ffmpeg==3.1.0", "zeroconf==0.131.0"]
EXTRA_PINS = ["josepy<2"]  # josepy 2 broke acme, which Home Assistant imports on every HTTP request
MARKER = f"{VERSION} + wyoming"

LIGHT = """\
      {key}:
        unique_id: {key}
        friendly_name: {name}
        value_template: "{{{{ is_state('input_boolean.{key}', 'on') }}}}"
        turn_on: {{service: input_boolean.turn_on, target: {{entity_id: input_boolean.{key}}}}}
        turn_off: {{service: input_boolean.turn_off, target: {{entity_id: input_boolean.{key}}}}}
"""

CONFIG = """\
homeassistant:
  name: 测试之家
  unit_system: metric
  time_zone: Asia/Shanghai
  country: CN
  language: zh-Hans
  customize:
    climate.air_conditioner: {{friendly_name: 空调}}
http: {{server_host: 127.0.0.1, server_port: {port}}}
logger: {{default: warning}}
api:
config:
onboarding:
conversation:
input_boolean: {{living_room_light: {{}}, bedroom_light: {{}}, curtain: {{}}, compressor: {{}}}}
input_number:
  room_temperature: {{min: 0, max: 40, step: 0.5, initial: 27}}
template:
  - sensor:
      - name: room temperature
        unique_id: room_temperature
        unit_of_measurement: "°C"
        device_class: temperature
        state: "{{{{ states('input_number.room_temperature') }}}}"
light:
  - platform: template
    lights:
{lights}
cover:
  - platform: template
    covers:
      curtain:
        unique_id: curtain
        friendly_name: 窗帘
        device_class: curtain
        value_template: "{{{{ is_state('input_boolean.curtain', 'on') }}}}"
        open_cover: {{service: input_boolean.turn_on, target: {{entity_id: input_boolean.curtain}}}}
        close_cover: {{service: input_boolean.turn_off, target: {{entity_id: input_boolean.curtain}}}}
climate:
  - platform: generic_thermostat
    name: air conditioner
    unique_id: air_conditioner
    heater: input_boolean.compressor
    target_sensor: sensor.room_temperature
    ac_mode: true
    initial_hvac_mode: cool
    target_temp: 26
    min_temp: 16
    max_temp: 30
    target_temp_step: 1
intent_script:
  SetAirConditionerTemperature:
    speech: {{text: "空调已调到{{{{ temperature }}}}度"}}
    action:
      - service: climate.set_temperature
        target: {{entity_id: climate.air_conditioner}}
        data: {{temperature: "{{{{ temperature }}}}"}}
"""

# hassil reads no Chinese numerals here, so the words are listed; the rule's name must not be one of
# the built-in zh-cn rules (a rule named "temp" would replace the stock one).
SENTENCES = """\
language: "zh-cn"
intents:
  SetAirConditionerTemperature:
    data:
      - sentences:
          - "[把|将]空调[的][温度](调|设|设置|调节|设定)(到|为|成|至)<ac_degrees>[度|摄氏度|℃]"
expansion_rules:
  ac_degrees: "({{temperature}}|{{temperature_words:temperature}})"
lists:
  temperature: {{range: {{from: 16, to: 30}}}}
  temperature_words:
    values:
{words}"""

FRONTEND_STUB = '"""No user interface: Home Assistant 2024.3 always sets up a frontend; this one does nothing."""\n\n' \
                "async def async_setup(hass, config):\n    return True\n"


def zh_number(n: int) -> str:
    """16 → 十六, 24 → 二十四, 30 → 三十."""
    digits = "零一二三四五六七八九"
    tens, ones = divmod(n, 10)
    return ("" if tens <= 1 else digits[tens]) + ("十" if tens else "") + (digits[ones] if ones else "")


def installed() -> Path:
    """The virtualenv's python, installing Home Assistant into it first if need be."""
    python = HOME / "bin" / "python"
    marker = HOME / "installed"
    if marker.is_file() and marker.read_text(encoding="utf-8") == MARKER:
        return python
    print(f"installing Home Assistant {VERSION} into {HOME} (once; about 30 s)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(HOME)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    wheels = HOME / "wheel"
    subprocess.run([*pip[:3], "download", "--quiet", "--no-deps", f"homeassistant=={VERSION}", "-d", str(wheels)],
                   check=True)
    wheel = next(wheels.glob(f"homeassistant-{VERSION}-*.whl"))
    with zipfile.ZipFile(wheel) as z:  # its own pins of everything below it
        (HOME / "constraints.txt").write_bytes(z.read("homeassistant/package_constraints.txt"))
    (HOME / "extra.txt").write_text("\n".join(EXTRA_PINS) + "\n", encoding="utf-8")
    pins = ["-c", str(HOME / "constraints.txt"), "-c", str(HOME / "extra.txt")]
    subprocess.run([*pip, *pins, str(wheel), *REQUIREMENTS, *VOICE], check=True)
    marker.write_text(MARKER, encoding="utf-8")
    return python


VOICE_CONFIG = """\
media_source:
"""  # the pipeline's speech is handed over as a media source (default_config has it)


def write_config(folder: Path, port: int, voice: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lights = "".join(LIGHT.format(key=k, name=n) for k, n in (("living_room_light", "客厅灯"),
                                                              ("bedroom_light", "卧室灯")))
    config = CONFIG.format(port=port, lights=lights)
    if voice:  # the speech Home Assistant makes is fetched from its own address, loopback here
        config = config.replace("homeassistant:\n", f"homeassistant:\n  internal_url: http://127.0.0.1:{port}\n", 1)
        config += VOICE_CONFIG
    (folder / "configuration.yaml").write_text(config, encoding="utf-8")
    stub = folder / "custom_components" / "frontend"
    stub.mkdir(parents=True)
    (stub / "manifest.json").write_text(json.dumps({"domain": "frontend", "name": "no frontend", "version": "0.0.1",
                                                    "dependencies": [], "codeowners": []}), encoding="utf-8")
    (stub / "__init__.py").write_text(FRONTEND_STUB, encoding="utf-8")
    words = "".join(f'      - in: "{zh_number(n)}"\n        out: {n}\n' for n in range(16, 31))
    sentences = folder / "custom_sentences" / "zh-cn"
    sentences.mkdir(parents=True)
    (sentences / "air_conditioner.yaml").write_text(SENTENCES.format(words=words), encoding="utf-8")


@dataclass
class House:
    """A running Home Assistant and its long-lived access token."""

    url: str
    token: str
    process: subprocess.Popen[bytes]
    folder: Path

    async def state(self, entity_id: str) -> dict[str, Any]:
        async with aiohttp.ClientSession() as http, http.get(
                f"{self.url}/api/states/{entity_id}", headers={"Authorization": f"Bearer {self.token}"}) as r:
            r.raise_for_status()
            data: dict[str, Any] = await r.json()
            return data

    def log(self) -> str:
        path = self.folder / "home-assistant.log"
        return path.read_text(encoding="utf-8", errors="replace")[-3000:] if path.is_file() else ""


async def start(folder: Path, port: int, voice: bool = False) -> House:
    """Home Assistant on ``127.0.0.1:port`` with the house in ``folder``, onboarded, with a token;
    ``voice``: ready for voice pipelines with Wyoming services and satellites."""
    process = await asyncio.to_thread(_launch, folder, port, voice)
    url = f"http://127.0.0.1:{port}"
    house = House(url, "", process, folder)
    async with aiohttp.ClientSession() as http:
        await _until_up(http, house)
        house.token = await _token(http, url)
    return house


def _launch(folder: Path, port: int, voice: bool) -> subprocess.Popen[bytes]:
    python = installed()
    write_config(folder, port, voice)
    with (folder / "stdout.log").open("wb") as log:
        return subprocess.Popen([str(python), "-m", "homeassistant", "--config", str(folder), "--skip-pip",
                                 "--log-no-color"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


async def stop(house: House) -> None:
    house.process.terminate()
    try:
        await asyncio.to_thread(house.process.wait, 60)
    except subprocess.TimeoutExpired:
        house.process.kill()
        await asyncio.to_thread(house.process.wait)


async def _until_up(http: aiohttp.ClientSession, house: House, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if house.process.poll() is not None:
            raise RuntimeError(f"Home Assistant exited ({house.process.returncode}):\n{house.log()}")
        try:
            async with http.get(f"{house.url}/api/onboarding") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)  # polling a process we do not control: its start has no event to wait for
    raise TimeoutError(f"Home Assistant did not answer within {timeout_s:g} s:\n{house.log()}")


async def _token(http: aiohttp.ClientSession, url: str) -> str:
    """Onboard the first user and make a long-lived access token, as the profile page does."""
    client = f"{url}/"
    async with http.post(f"{url}/api/onboarding/users", json={
            "client_id": client, "name": "听说", "username": "tingshuo", "password": "tingshuo-test-password",
            "language": "zh-Hans"}) as r:
        r.raise_for_status()
        code = (await r.json())["auth_code"]
    async with http.post(f"{url}/auth/token", data={"grant_type": "authorization_code", "code": code,
                                                     "client_id": client}) as r:
        r.raise_for_status()
        access = (await r.json())["access_token"]
    async with http.ws_connect(f"{url}/api/websocket") as ws:
        await ws.receive_json()  # auth_required
        await ws.send_json({"type": "auth", "access_token": access})
        if (await ws.receive_json())["type"] != "auth_ok":
            raise RuntimeError("Home Assistant refused its own access token")
        await ws.send_json({"id": 1, "type": "auth/long_lived_access_token", "client_name": "tingshuo",
                            "lifespan": 30})
        while (reply := await ws.receive_json()).get("id") != 1:
            continue
        if not reply.get("success"):
            raise RuntimeError(f"no long-lived token: {reply}")
        token: str = reply["result"]
        return token
