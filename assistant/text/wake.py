"""Taking the wake word off the front of a transcript.

A request spoken in the same breath as the wake word ("小智小智，现在几点") is transcribed from the
wake word on, so the transcript starts with it, as the ASR heard it (小志, 晓智): it is matched in
toneless pinyin and removed, repeatedly (小智小智 with the keyword 小智), after at most ``max_lead``
characters of lead-in (嘿，).
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.text.echo_match import match

_PUNCT = " \t,，.。!！?？、;；:：~～"


def strip_wake_words(text: str, keywords: Sequence[str], *, max_lead: int = 2, threshold: float = 0.75) -> str:
    changed = True
    while changed and text:
        changed = False
        for kw in keywords:
            head = text[:len(kw) + max_lead]
            found = match(kw, [head])
            pos = head.find(found.span) if found.span else -1
            if found.score >= threshold and 0 <= pos <= max_lead:
                text = text[pos + len(found.span):].lstrip(_PUNCT)
                changed = True
                break
    return text
