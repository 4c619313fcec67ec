"""The status page: a small web page served from the assistant's own loop, to look at from a phone.

``board``: what is shown, kept as the session runs. ``web``: the page, its JSON and its live stream.
"""
