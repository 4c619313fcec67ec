"""The memory budget checked at start: the board has 3.8 GB and no swap."""

from __future__ import annotations

import pytest

from assistant import budget, config
from models.protocols import ModelError


def meminfo(tmp_path, available_mb: int):
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal: 3981312 kB\nMemFree: 1000 kB\nMemAvailable: {available_mb * 1024} kB\n")
    return path


def test_the_default_chain_and_the_0_5b_chain_are_counted(tmp_path):
    cfg = config.load(None, [])
    need = sum(i.bytes for i in budget.needs(cfg)) / budget.MB
    assert 2100 < need < 2500  # Qwen 1.5B 1097 MB, the 0.5B weighing Whisper's hypotheses 469, Whisper 141 …
    assert budget.check(cfg, meminfo(tmp_path, 3000)) is not None
    small = config.load(None, ['llm.model="qwen2.5-coder-0.5b-instruct-q4_k_m"'])
    need = sum(i.bytes for i in budget.needs(small)) / budget.MB
    assert 900 < need < 1200  # Qwen 0.5B 469 MB (one file for both), Whisper 141, Kokoro 88, KV 24, working set 300 …
    assert budget.check(small, meminfo(tmp_path, 2500)) is not None


def test_the_calibrated_decoder_is_counted_only_where_it_is_used():
    kinds = {d: {i.what: i.bytes for i in budget.needs(config.load(None, [f'tts.decoder="{d}"']))}
             for d in ("calibrated", "dynamic")}
    assert kinds["calibrated"]["tts calibrated decoder"] == budget.CALIBRATED_DECODER_EXTRA_MB * budget.MB
    assert "tts calibrated decoder" not in kinds["dynamic"]
    board = config.load(None, ['models.tts="kokoro-rknn"'])
    assert "tts calibrated decoder" not in {i.what for i in budget.needs(board)}


def test_over_budget_is_refused_with_one_line_naming_the_biggest_items(tmp_path):
    cfg = config.load(None, ['llm.model="qwen2.5-coder-1.5b-instruct-q4_k_m"', "llm.context=32768"])
    with pytest.raises(ModelError) as caught:
        budget.check(cfg, meminfo(tmp_path, 2000))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("not enough memory: the assistant needs")
    assert "llm " in message and "llm KV cache 896 MB (try a smaller llm.context)" in message
    assert "budget.check = false" in message


def test_the_check_can_be_turned_off_and_is_skipped_without_meminfo(tmp_path):
    cfg = config.load(None, ["budget.check=false"])
    assert budget.check(cfg, meminfo(tmp_path, 10)) is None
    assert budget.check(config.load(None, []), tmp_path / "missing") is None


def test_the_npu_chain_counts_its_configured_model_files(tmp_path):
    for name, size in (("matcha.rknn", 70 * 2**20), ("vocos.rknn", 30 * 2**20), ("qwen.rkllm", 600 * 2**20)):
        with open(tmp_path / name, "wb") as f:
            f.truncate(size)  # sparse: sized without taking the disk
    cfg = config.load(None, ['models.tts="matcha-rknn"', 'models.llm="rkllm"', "rkllm.max_context=4096",
                             'asr.rescore=""',  # as the board's config: no llama.cpp there
                             f'matcha.acoustic_model="{tmp_path / "matcha.rknn"}"',
                             f'matcha.vocoder="{tmp_path / "vocos.rknn"}"', f'rkllm.model="{tmp_path / "qwen.rkllm"}"'])
    items = {i.what: i.bytes / budget.MB for i in budget.needs(cfg)}
    assert items["tts"] == 100 and items["llm"] == 600 and items["rkllm KV cache"] == 48
    assert "llm KV cache" not in items
    refusal = r"llm 600 MB \(try a smaller .rkllm model \(rkllm.model\)\); working set 300 MB"
    with pytest.raises(ModelError, match=refusal):
        budget.check(cfg, meminfo(tmp_path, 1000))
    missing = config.load(None, ['models.tts="matcha-rknn"', f'matcha.vocoder="{tmp_path / "none.rknn"}"'])
    assert {i.what: i.bytes for i in budget.needs(missing)}["tts"] == 0


def test_the_asr_rescoring_counts_its_own_context_and_a_model_file_the_llm_does_not_map():
    def items(*overrides):
        return {i.what: i.bytes for i in budget.needs(config.load(None, list(overrides)))}

    small = items('llm.model="qwen2.5-coder-0.5b-instruct-q4_k_m"')
    assert 50 * budget.MB < small["asr rescoring"] < 70 * budget.MB  # 96 positions of logits and KV
    assert "asr rescoring model" not in small  # the 0.5B the LLM maps already
    default = items()
    assert default["asr rescoring model"] > 400 * budget.MB  # the 0.5B beside the 1.5B
    assert "asr rescoring" not in items('asr.rescore=""') and "asr rescoring" not in items("asr.beam_size=1")
