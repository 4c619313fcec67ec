"""Tingshuo in a Home Assistant house, over the Wyoming protocol (the PyPI ``wyoming`` library).

``serve``: the ASR, TTS and wake-word services for Home Assistant's voice pipelines.
"""
