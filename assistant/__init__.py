"""Tingshuo (听说): an offline, hands-free Mandarin voice assistant."""
