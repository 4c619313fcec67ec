"""The settings for being part of a house: the Wyoming services and the satellite Home Assistant reaches."""

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


@dataclass(frozen=True)
class SatelliteConfig:
    uri: str = opt("tcp://127.0.0.1:10701", "`assistant satellite` listens here for Home Assistant (tcp://HOST:PORT); "
                                            "loopback unless you set a LAN address.")
    zeroconf: bool = opt(False, "Advertise the satellite on the LAN by mDNS (_wyoming._tcp); needs a LAN address "
                                "in uri.")
    name: str = opt("tingshuo-satellite", "The satellite's name in Home Assistant.")
    area: str = opt("", "The area (room) Home Assistant puts the satellite in; empty: none.")
    reply_timeout_s: float = opt(15.0, "Give up on a request when Home Assistant sends no transcript, reply or audio "
                                       "for this long.", lo=1.0, hi=300.0)


@dataclass(frozen=True)
class StatusConfig:
    address: str = opt("127.0.0.1:8765", "The status page of `run`, `satellite` and `serve` (HOST:PORT; empty: no "
                                         "page). A LAN address needs a token (token_file or $TINGSHUO_STATUS_TOKEN).",
                       allow_empty=True)
    token_file: str = opt("", "A file (mode 0600) holding the token the page asks for; empty: "
                              "$TINGSHUO_STATUS_TOKEN, and on loopback none is needed.", allow_empty=True)
    sample_s: float = opt(5.0, "The page samples every process's memory this often.", lo=0.5, hi=3600.0)
    turns: int = opt(20, "The page shows this many last turns.", lo=1, hi=500)


@dataclass(frozen=True)
class HaConfig:
    url: str = opt("", "Home Assistant's address, e.g. http://homeassistant.local:8123, for device control; empty: "
                       "none (a request to control a device gets the honest answer).", allow_empty=True)
    token_file: str = opt("", "A file (mode 0600) holding a long-lived access token; empty: $TINGSHUO_HA_TOKEN.",
                          allow_empty=True)
    language: str = opt("zh-cn", "The language of the requests sent to Home Assistant's conversation agent.")
    agent_id: str = opt("", "The conversation agent to ask (empty: Home Assistant's default agent).", allow_empty=True)
    timeout_s: float = opt(5.0, "Give up on Home Assistant's answer after this long (and say so).", lo=0.5, hi=60.0)
