"""The settings for being part of a house: the Wyoming services Home Assistant reaches."""

from __future__ import annotations

from dataclasses import dataclass

from assistant.config_fields import opt


@dataclass(frozen=True)
class WyomingConfig:
    uri: str = opt("tcp://127.0.0.1:10700", "`assistant serve` listens here (tcp://HOST:PORT or unix://PATH); "
                                            "loopback unless you set a LAN address, e.g. tcp://0.0.0.0:10700.")
    zeroconf: bool = opt(False, "Advertise the services on the LAN by mDNS (_wyoming._tcp), so Home Assistant "
                                "discovers them; needs a LAN address in uri.")
    name: str = opt("tingshuo", "The name the services are described and advertised under.")
