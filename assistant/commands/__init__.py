"""The one-shot and maintenance commands: transcribe, say, ask, file, bench, vad, normalize, config,
todos, reminders, models, doctor.

They stand beside the runtime core (the session in ``states/``, its front ends and
``assistant/app.py``): each loads only the models it needs, does its job and exits.
"""
