"""How likely the rescoring model finds a transcript, per character: the check that asks again
rather than have the LLM answer a near-miss (``asr.min_char_logprob``).

    .venv/bin/python benchmarks/unlikely.py [--json FILE]

Two lists, each line's mean log-probability per character (natural log, letters and digits) under
the configured ``asr.rescore`` model, sorted, and how many fall below the configured threshold:

- everyday requests typed for this check (none from the evaluation's question sets): each one below
  the threshold would be asked again once if Whisper heard it exactly (the same words said again
  right after are answered);
- what Whisper base heard of the spoken tuning half in the near room (``--from`` a ``spoken.py
  --json`` file), split into transcripts heard right and heard wrong (CER against the request
  over 0.2): the ones wrong below the threshold are the near-misses the check catches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends  # noqa: E402
from assistant.config import load  # noqa: E402
from assistant.text.cer import cer  # noqa: E402
from models.whisper_asr import WEIGHED_MIN_CHARS  # noqa: E402

EVERYDAY = [
    "播放周杰伦的七里香", "帮我记一下明天下午三点开会", "iPhone怎么截屏", "明天杭州会下雪吗", "我家猫不吃东西怎么办",
    "红烧肉怎么做", "给我推荐一部电影", "珠穆朗玛峰有多高", "好的", "不用了谢谢", "你好呀", "再来一个",
    "为什么天空是蓝色的", "今天心情不太好", "帮我翻译一下hello", "二战是哪年结束的", "我想学吉他", "早上好小智",
    "宫保鸡丁辣不辣", "睡不着怎么办", "附近有什么好吃的", "讲个笑话", "李白是哪个朝代的", "一加一等于几",
    "WiFi密码是多少", "我明天要去体检", "孩子发烧了怎么办", "你觉得呢", "那个东西叫什么来着", "帮我看看冰箱里还有什么",
]
HEARD_WRONG_CER = 0.2


def content(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="spoken", type=Path, default=None,
                        help="a benchmarks/spoken.py --json file: also weigh what Whisper heard there")
    parser.add_argument("--json", type=Path, default=None, help="every text's score, as JSON")
    args = parser.parse_args()
    cfg = load(ROOT / "config.toml", [])
    scorer = backends.rescorer(cfg, backends.assets_for(cfg))
    if scorer is None:
        print("unlikely: no rescoring model (asr.rescore is empty, or llama-cpp-python is missing)", file=sys.stderr)
        return 1
    threshold = cfg.asr.min_char_logprob
    groups: dict[str, list[str]] = {"everyday, typed": EVERYDAY}
    if args.spoken is not None:
        try:
            runs = json.loads(args.spoken.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"unlikely: cannot read {args.spoken}: {exc}", file=sys.stderr)
            return 1
        answers = [a for run in runs.values() for a in run]
        heard = [(a["ask"], a["heard"][0]) for a in answers if a["heard"] and a["heard"][0].strip()]
        groups["spoken, heard right"] = [h for ask, h in heard if cer(ask, h) <= HEARD_WRONG_CER]
        groups["spoken, heard wrong"] = [h for ask, h in heard if cer(ask, h) > HEARD_WRONG_CER]
    scorer.load()
    out: dict[str, list[tuple[str, float]]] = {}
    try:
        for name, texts in groups.items():
            judged = [content(t) for t in texts if len(content(t)) >= WEIGHED_MIN_CHARS]
            scores = scorer.logprobs(judged)
            out[name] = sorted(((t, lp / len(t)) for t, lp in zip(judged, scores, strict=True)), key=lambda x: x[1])
    finally:
        scorer.close()
    for name, rows in out.items():
        below = sum(1 for _, v in rows if v < threshold)
        print(f"\n{name}: {len(rows)} texts, {below} below {threshold:g} a character")
        for text, value in rows:
            print(f"  {value:6.2f}  {'<' if value < threshold else ' '}  {text}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
