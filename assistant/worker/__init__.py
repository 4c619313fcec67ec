"""ASR, LLM and TTS in a process of their own, so a model that crashes or hangs never takes the ears down.

``child`` is what runs in the worker process; ``process`` starts, watches and restarts it from the
main process; ``remote`` gives the session the usual model Protocols over the process boundary.
"""
