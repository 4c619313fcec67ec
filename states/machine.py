"""The one transition table of the assistant, and the machine built from it.

No other code assigns the state. Callbacks only start or stop tasks; the long work runs in the
tasks a state owns, so any trigger (barge-in above all) takes effect at once.
"""

from __future__ import annotations

from typing import Any

from transitions.extensions.asyncio import AsyncMachine

STATES = ["idle", "listening", "thinking", "speaking"]

TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": "wake", "source": "idle", "dest": "listening"},
    {"trigger": "remind", "source": "idle", "dest": "speaking"},  # a reminder fell due: speak unasked
    {"trigger": "speech_end", "source": "listening", "dest": "thinking"},
    {"trigger": "no_speech_timeout", "source": "listening", "dest": "idle"},
    {"trigger": "first_audio", "source": "thinking", "dest": "speaking"},
    # A reply with nothing to say (an empty transcript) also ends in thinking.
    {"trigger": "reply_done", "source": ["thinking", "speaking"], "dest": "listening",
     "conditions": "follow_up_enabled"},
    {"trigger": "reply_done", "source": ["thinking", "speaking"], "dest": "idle"},
    {"trigger": "barge_in", "source": ["thinking", "speaking"], "dest": "listening"},
    {"trigger": "stop", "source": ["thinking", "speaking"], "dest": "idle"},  # a stop word: silence
    {"trigger": "error", "source": "*", "dest": "idle"},
    {"trigger": "watchdog", "source": "*", "dest": "idle"},
]

TRIGGERS = sorted({t["trigger"] for t in TRANSITIONS})


def attach(model: object) -> AsyncMachine:
    """Give ``model`` the states and triggers; it must define the state callbacks it names.

    Before every change the machine awaits ``model.leave_state`` (the old state stops what it
    owns), after it ``model.state_changed`` (the change is published and the new state entered).
    Triggers that do not apply in the current state are ignored (audio-driven triggers may race
    with a change already made).
    """
    return AsyncMachine(model=model, states=STATES, transitions=TRANSITIONS, initial="idle",
                        send_event=True, auto_transitions=False, ignore_invalid_triggers=True,
                        before_state_change="leave_state", after_state_change="state_changed",
                        queued=False)
