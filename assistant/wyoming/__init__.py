"""Tingshuo in a Home Assistant house, over the Wyoming protocol (the PyPI ``wyoming`` library).

``serve``: the ASR, TTS and wake-word services for Home Assistant's voice pipelines (``handler``
answers one connection, ``info`` describes them). ``satellite``: the hands-free session as a
satellite, each request a Home Assistant pipeline run (``link``). ``pcm``: Wyoming's audio.
"""
