"""What an LLM writes for the eye and a TTS must not say: Markdown, code and emoji.

``strip_markup`` keeps the words a listener needs (a heading's text, a link's text, a table's cells,
a numbered item's number) and drops the rest (code blocks, markers, link targets, emoji). It never joins or
splits lines, so the normalizer can keep its promise of one output line per input line.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"```|~~~")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_RULE = re.compile(r"^\s{0,3}(?:([-*_])(?:\s*\1){2,}|={3,})\s*$")  # a thematic break or a setext underline
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
# List and heading markers are taken wherever a chunk may start (after 「，」 too), not only at a line
# start, so that a reply cut into chunks reads the same as the whole; 3 - 5, 3 * 4 and C# are kept.
_TASK = re.compile(r"^\s*[-*+]\s+\[[ xX]\]\s+")
_BULLET = re.compile(r"(?<![0-9A-Za-z*])(?<![0-9A-Za-z][ \t])[-*+•·][ \t]+")
_NUMBERED = re.compile(r"(?<![0-9A-Za-z.])([0-9]{1,3})[.)][ \t]+")
_HASHES = re.compile(r"(?<![0-9A-Za-z#])#{1,6}[ \t]+")
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]+)\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_INLINE_CODE = re.compile(r"`+([^`\n]*?)`+")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
# A lone * or _ is emphasis only when no ASCII letter or digit touches it from outside: 3*4 stays.
_EM_STAR = re.compile(r"(?<![0-9A-Za-z*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![0-9A-Za-z*])")
_EM_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![0-9A-Za-z_])")
_STRIKE = re.compile(r"~~(.+?)~~")
_RUN = re.compile(r"[-_*=~]{3,}")  # a rule, wherever a chunk puts it: a pause, never spoken
_STRAY = re.compile(r"\*\*|~~")  # markers left unpaired by a chunk cut
_HTML = re.compile(r"</?(?:b|i|u|em|strong|p|div|span|sup|sub|br|code|pre|small|mark|del|ins)\b[^>]*>", re.I)
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~>])")
# Emoji and pictographs, flags, keycap and skin-tone modifiers, joiners and variation selectors.
# Not ℃ (U+2103), ×, ÷ or ©: those are read or kept.
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U0001f1e6-\U0001f1ff\U000e0020-\U000e007f"
    "\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff\u2190-\u21ff\ufe0e\ufe0f\u200d\u20e3]+"
)


def strip_markup(text: str) -> list[str]:
    """The lines of ``text`` (split at \\n, a trailing \\r dropped) as they should be heard: code fences
    (``` or ~~~, also mid-line, and an unclosed one to the end) are dropped, Markdown markers and emoji
    are removed from the rest."""
    return [_strip_line(line.removesuffix("\r")) for line in _drop_code(text).split("\n")]


def _drop_code(text: str) -> str:
    """Remove everything between fence pairs, keeping the newlines so the line count is kept."""
    if "```" not in text and "~~~" not in text:
        return text
    kept: list[str] = []
    inside = False
    opener = ""
    pos = 0
    for mark in _FENCE.finditer(text):
        if inside and mark.group() != opener:
            continue
        segment = text[pos : mark.start()]
        kept.append("\n" * segment.count("\n") if inside else segment)
        inside, opener, pos = not inside, mark.group(), mark.end()
    tail = text[pos:]
    kept.append("\n" * tail.count("\n") if inside else tail)
    return "".join(kept)


def _strip_line(line: str) -> str:
    """One line of Markdown to plain text (emphasis, links, headings, quotes, lists, table rows)."""
    if _RULE.match(line) or ("|" in line and _TABLE_RULE.match(line)):
        return ""
    row = _TABLE_ROW.match(line)
    if row:
        line = "，".join(cell.strip() for cell in row.group(1).split("|") if cell.strip())
    heading = _HEADING.match(line)
    if heading:
        line = heading.group(1)
    line = _QUOTE.sub("", line)
    line = _TASK.sub("", line)
    line = _BULLET.sub("", line)
    line = _HASHES.sub("", line)
    line = _NUMBERED.sub(r"\1、", line)  # keep the item's number: a listener needs it
    line = _IMAGE.sub("", line)
    line = _LINK.sub(r"\1", line)
    line = _AUTOLINK.sub(r"\1", line)
    line = _INLINE_CODE.sub(r"\1", line)
    line = _STRONG.sub(r"\2", line)
    line = _EM_STAR.sub(r"\1", line)
    line = _EM_UNDERSCORE.sub(r"\1", line)
    line = _STRIKE.sub(r"\1", line)
    line = _RUN.sub("，", line)
    line = _STRAY.sub("", line)
    line = _HTML.sub("", line)
    line = _ESCAPE.sub(r"\1", line)
    return _EMOJI.sub(_emoji_gap, line)


def _emoji_gap(match: re.Match[str]) -> str:
    """An emoji between two English words leaves a space; elsewhere (Chinese) it leaves nothing."""
    text, start, end = match.string, match.start(), match.end()
    between_words = start > 0 and end < len(text) and text[start - 1].isascii() and text[end].isascii()
    return " " if between_words and text[start - 1].isalnum() and text[end].isalnum() else ""
