"""What the device itself can tell: memory, temperatures, load, uptime, addresses — read from
/proc and /sys (Linux), answered as short spoken sentences."""

from __future__ import annotations

import array
import fcntl
import os
import socket
import struct
from pathlib import Path

from assistant.tools.calculator import say_number
from assistant.tools.timeparse import say_duration

SIOCGIFADDR = 0x8915


def meminfo(path: Path = Path("/proc/meminfo")) -> dict[str, int]:
    """Fields of /proc/meminfo in bytes."""
    out: dict[str, int] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


def _gb(n: int) -> str:
    return say_number(round(n / 2**30, 1)) + "G"


def memory_reply(path: Path = Path("/proc/meminfo")) -> str:
    info = meminfo(path)
    total, free = info.get("MemTotal"), info.get("MemAvailable")
    if total is None or free is None:
        return "读不到内存信息。"
    return f"内存共{_gb(total)}，还剩{_gb(free)}可用。"


def temperatures(root: Path = Path("/sys/class/thermal")) -> list[tuple[str, float]]:
    """(zone type, °C) for each thermal zone that can be read."""
    found = []
    for zone in sorted(root.glob("thermal_zone*")):
        try:
            kind = (zone / "type").read_text(encoding="ascii").strip()
            milli = int((zone / "temp").read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            continue
        found.append((kind, milli / 1000))
    return found


ZONE_NAMES = {"soc": "芯片", "cpu": "处理器", "gpu": "图形处理器", "npu": "神经网络处理器", "ddr": "内存",
              "x86_pkg": "处理器"}


def temperature_reply(root: Path = Path("/sys/class/thermal")) -> str:
    zones = temperatures(root)
    if not zones:
        return "这台设备没有可读的温度传感器。"
    said = []
    for kind, celsius in zones[:3]:
        name = next((v for k, v in ZONE_NAMES.items() if k in kind.lower()), "设备")
        said.append(f"{name}{say_number(round(celsius))}度")
    return "，".join(said) + "。"


def load_reply() -> str:
    one, five, _ = os.getloadavg()
    return f"最近一分钟平均负载{say_number(round(one, 2))}，五分钟{say_number(round(five, 2))}。"


def uptime_reply(path: Path = Path("/proc/uptime")) -> str:
    seconds = int(float(path.read_text(encoding="ascii").split()[0]))
    return f"已经运行了{say_duration(seconds - seconds % 60 if seconds >= 60 else seconds)}。"


def addresses() -> list[tuple[str, str]]:
    """(interface, IPv4 address) of every interface but loopback."""
    out = []
    for _, name in socket.if_nameindex():
        if name == "lo":
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                req = array.array("B", struct.pack("256s", name.encode()[:15]))
                fcntl.ioctl(s.fileno(), SIOCGIFADDR, req)
            except OSError:
                continue
            out.append((name, socket.inet_ntoa(req.tobytes()[20:24])))
    return out


def ip_reply() -> str:
    found = addresses()
    if not found:
        return "现在没有联网的地址。"
    digits = "零一二三四五六七八九"
    spoken = ["点".join("".join(digits[int(d)] for d in part) for part in ip.split(".")) for _, ip in found[:2]]
    return "本机地址是" + "，和".join(spoken) + "。"
