"""The RKLLM 1.3.0 ctypes binding, tested against a stand-in librkllmrt.so built here with gcc.

The stand-in (tests/stand_ins/librkllmrt.c) implements the runtime's ABI: the same structs, the
callback protocol, rkllm_abort from another thread, error returns. Its gate lets a test hold the
run at an exact step (prefill, or before token N), so stopping mid-prefill and mid-generation is
deterministic; its counters and texts show what reached the runtime.
"""

from __future__ import annotations

import asyncio
import ctypes
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from models import rkllm_abi as abi
from models.chat import SYSTEM_PROMPT
from models.npu import NpuScheduler
from models.protocols import ModelError
from models.rkllm_llm import RkllmLlm

SOURCE = Path(__file__).parent / "stand_ins" / "librkllmrt.c"
REPLY = "你好，我是听说。"
PIECES = ["你", "好，", "我是", "听说", "。"]  # 听 arrives split across two callbacks
PREFIX = "<|im_start|>user\n"
POSTFIX = "<|im_end|>\n<|im_start|>assistant\n"
WAIT_S = 5.0  # generous bound for anything that should take milliseconds


def build(out: Path, *flags: str) -> Path:
    cmd = ["gcc", "-shared", "-fPIC", "-pthread", "-O1", "-Wall", "-Wextra", *flags, "-o", str(out), str(SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"building the stand-in RKLLM runtime failed:\n{done.stderr}")
    return out


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in RKLLM runtime")
    return tmp_path_factory.mktemp("rkllm")


@pytest.fixture(scope="session")
def library(build_dir: Path) -> Path:
    return build(build_dir / "librkllmrt.so")


class StandIn:
    """The stand-in's test-only functions."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))  # the same loaded library the binding uses
        lib.standin_count.restype = ctypes.c_long
        lib.standin_count.argtypes = [ctypes.c_char_p]
        lib.standin_text.restype = ctypes.c_long
        lib.standin_text.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.standin_last_param.argtypes = [ctypes.POINTER(abi.RKLLMParam)]
        for name in ("standin_gate", "standin_allow"):
            getattr(lib, name).argtypes = [ctypes.c_int]
        lib.standin_wait_blocked.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.standin_wait_running.argtypes = [ctypes.c_int]
        lib.standin_wait_idle.argtypes = [ctypes.c_int]
        self._lib = lib

    def reset(self) -> None:
        self._lib.standin_reset()

    def count(self, name: str) -> int:
        value = int(self._lib.standin_count(name.encode()))
        assert value >= 0, f"unknown counter {name}"
        return value

    def text(self, name: str) -> str:
        size = int(self._lib.standin_text(name.encode(), None, 0))
        assert size >= 0, f"no text {name}"
        out = ctypes.create_string_buffer(size + 1)
        self._lib.standin_text(name.encode(), out, size + 1)
        return out.value.decode()

    def param(self) -> abi.RKLLMParam:
        param = abi.RKLLMParam()
        self._lib.standin_last_param(ctypes.byref(param))
        return param

    def gate(self, enabled: bool) -> None:
        self._lib.standin_gate(int(enabled))

    def allow(self, steps: int) -> None:
        self._lib.standin_allow(steps)

    def wait_blocked(self, phase: int) -> None:
        """Until the run waits at the gate: in prefill (1) or before a token (2)."""
        assert self._lib.standin_wait_blocked(phase, int(WAIT_S * 1000)) == 1, f"the run never blocked in {phase}"

    def wait_running(self) -> None:
        assert self._lib.standin_wait_running(int(WAIT_S * 1000)) == 1, "the run never started"

    def wait_idle(self) -> None:
        assert self._lib.standin_wait_idle(int(WAIT_S * 1000)) == 1, "the run never ended"


@pytest.fixture
def standin(library: Path) -> Iterator[StandIn]:
    s = StandIn(library)
    s.reset()
    yield s
    s.gate(False)  # never leave a run blocked


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "qwen.rkllm"
    path.write_bytes(b"RKLLM-STANDIN model\n")
    return path


@pytest.fixture
def make_llm(library: Path, model: Path) -> Iterator[Callable[..., RkllmLlm]]:
    made: list[RkllmLlm] = []

    def make(**kwargs: Any) -> RkllmLlm:
        llm = RkllmLlm(library, model, **kwargs)
        made.append(llm)
        return llm

    yield make
    for llm in made:
        llm.close()


@pytest.fixture
def loaded(make_llm: Callable[..., RkllmLlm]) -> RkllmLlm:
    llm = make_llm()
    llm.load()
    return llm


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """Every log event, whatever level another test configured."""
    saved = structlog.get_config()
    structlog.reset_defaults()
    try:
        with capture_logs() as captured:
            yield captured
    finally:
        structlog.configure(**saved)


async def collect(stream: AsyncIterator[str]) -> list[str]:
    async def drain() -> list[str]:
        return [piece async for piece in stream]

    return await asyncio.wait_for(drain(), WAIT_S)


def one_line(exc: pytest.ExceptionInfo[ModelError]) -> str:
    text = str(exc.value)
    assert "\n" not in text and text.startswith("llm: ")
    return text


def stopped_by_us(standin: StandIn) -> bool:
    """Did an abort, or the callback's pause, end the run? (If the stop lands while token N's callback
    is still returning, the callback pauses the run and no abort is needed.)"""
    return standin.count("aborts") + standin.count("pauses") >= 1


def eventually(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.001)


# ---- the ABI ----


def test_struct_sizes_and_offsets_match_the_1_3_0_header() -> None:
    abi.check_layout()
    assert {cls.__name__: ctypes.sizeof(cls) for cls in abi.SIZES} == {
        "RKLLMExtendParam": 120, "RKLLMParam": 184, "RKLLMInput": 160,
        "RKLLMInferParam": 40, "RKLLMResult": 72, "RKLLMCallback": 48,
    }
    assert abi.RKLLMExtendParam.enabled_cpus_mask.offset == 8
    assert abi.RKLLMParam.extend_param.offset == 60
    assert abi.RKLLMInput.input.offset == 16
    assert abi.RKLLMInferParam.keep_history.offset == 32
    assert abi.RKLLMInferParam.max_new_tokens.offset == 36
    assert abi.RKLLMResult.perf.offset == 48


def test_runtime_version_is_read_from_the_library(library: Path, build_dir: Path) -> None:
    assert abi.runtime_versions(library) == {"1.3.0", "0.9.8"}  # 0.9.8: the NPU driver it prints beside it
    other = build(build_dir / "librkllmrt-1.2.3.so", '-DSTANDIN_VERSION="1.2.3"')
    assert abi.runtime_versions(other) == {"1.2.3", "0.9.8"}


@pytest.mark.parametrize(("data", "versions"), [
    (b"\x00rkllm-runtime version: %s\x001.3.0\x00", {"1.3.0"}),
    (b"\x00rkllm-runtime version: %s\x00v1.3.0\x000.9.7\x00", {"1.3.0", "0.9.7"}),
    (b"\x00rkllm-runtime version: %s\x001.2.3 (4f1e2d@2025-11-01)\x0011.3.0.1\x00", {"1.2.3"}),
    (b"\x00I rkllm: rkllm-runtime version: 1.3.0, rknpu driver version: %s\x00", {"1.3.0"}),
    (b"\x00librknnrt version: %s\x001.3.0\x00", None),
])
def test_version_strings_are_whole_strings(tmp_path: Path, data: bytes, versions: set[str] | None) -> None:
    path = tmp_path / "lib.so"
    path.write_bytes(data)
    assert abi.runtime_versions(path) == versions


def test_default_param_comes_back_by_value(library: Path) -> None:
    param = abi.open_runtime(library).create_default_param()
    assert (param.max_context_len, param.top_k, param.extend_param.n_batch) == (512, 40, 1)
    assert param.top_p == pytest.approx(0.9)


# ---- replies ----


async def test_reply_streams_in_order_and_joins_a_split_character(loaded: RkllmLlm, standin: StandIn) -> None:
    pieces = await collect(loaded.reply("你是谁？"))

    assert pieces == PIECES
    assert "".join(pieces) == REPLY
    assert standin.text("input") == "你是谁？"
    assert standin.text("role") == "user"
    assert standin.count("keep_history") == 0
    assert standin.count("max_new_tokens") == 160


async def test_chat_template_and_system_prompt_reach_the_runtime(make_llm: Callable[..., RkllmLlm],
                                                                 standin: StandIn) -> None:
    llm = make_llm(system_prompt="你是测试助手。")
    llm.load()
    await collect(llm.reply("问题"))

    system = "<|im_start|>system\n你是测试助手。<|im_end|>\n"
    assert (standin.text("system"), standin.text("prefix"), standin.text("postfix")) == (system, PREFIX, POSTFIX)
    assert standin.text("prompt") == f"{system}{PREFIX}问题{POSTFIX}"


async def test_default_system_prompt_is_the_shared_one(loaded: RkllmLlm, standin: StandIn) -> None:
    assert standin.text("system") == f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n"


async def test_history_is_written_into_the_prompt_with_the_template(make_llm: Callable[..., RkllmLlm],
                                                                     standin: StandIn) -> None:
    llm = make_llm(history_turns=1)
    llm.load()
    await collect(llm.reply("第一"))
    await collect(llm.reply("第二"))
    assert standin.text("input") == f"第一{POSTFIX}{REPLY}<|im_end|>\n{PREFIX}第二"

    await collect(llm.reply("第三"))
    assert standin.text("input") == f"第二{POSTFIX}{REPLY}<|im_end|>\n{PREFIX}第三"  # one exchange kept
    assert llm.history.exchanges == [("第三", REPLY)]


async def test_settings_reach_the_runtime(make_llm: Callable[..., RkllmLlm], model: Path, standin: StandIn) -> None:
    make_llm(max_context=2048, max_tokens=64, temperature=0.5, top_p=0.8, top_k=5, repeat_penalty=1.2,
             cpu_mask=0x30).load()
    param = standin.param()

    assert standin.text("model") == str(model)
    assert (param.max_context_len, param.max_new_tokens, param.top_k) == (2048, 64, 5)
    assert (param.temperature, param.top_p, param.repeat_penalty) == pytest.approx((0.5, 0.8, 1.2))
    assert (param.extend_param.enabled_cpus_mask, param.extend_param.enabled_cpus_num) == (0x30, 2)
    assert (param.extend_param.n_batch, param.extend_param.embed_flash) == (1, 1)
    assert param.skip_special_token and not param.is_async


# ---- stopping ----


async def test_stop_during_prefill_aborts_and_clears_the_turn(loaded: RkllmLlm, standin: StandIn,
                                                              logs: list[dict[str, Any]]) -> None:
    standin.gate(True)
    task = asyncio.create_task(collect(loaded.reply("问")))
    await asyncio.to_thread(standin.wait_blocked, 1)  # the loop runs on: the reply starts

    loaded.stop()

    assert await task == []
    standin.wait_idle()
    loaded.close()  # joins the abort thread, so its report is in
    assert standin.count("aborts") >= 1
    assert (standin.count("kv_clears"), standin.count("kv_keep_system")) == (1, 1)
    assert loaded.history.exchanges == []  # nothing was said
    assert loaded.last_abort_s is not None and loaded.last_abort_s < 1.0
    [event] = [e for e in logs if e["event"] == "llm aborted"]
    assert event["phase"] == "prefill" and event["abort_ms"] >= 0


async def test_stop_during_generation_keeps_what_was_said(loaded: RkllmLlm, standin: StandIn,
                                                          logs: list[dict[str, Any]]) -> None:
    standin.gate(True)
    standin.allow(1 + 2)  # prefill and two tokens
    stream = loaded.reply("问")
    said = [await anext(stream), await anext(stream)]
    standin.wait_blocked(2)

    loaded.stop()

    assert said + await collect(stream) == ["你", "好，"]
    loaded.close()
    assert standin.count("tokens") == 2
    assert standin.count("kv_clears") == 1
    assert loaded.history.exchanges == [("问", "你好，")]
    assert [e["phase"] for e in logs if e["event"] == "llm aborted"] == ["generation"]


@pytest.mark.parametrize("blocking_abort", [False, True], ids=["abort-returns", "abort-blocks"])
async def test_abort_latency_in_a_long_prefill_is_measured(loaded: RkllmLlm, standin: StandIn,
                                                           logs: list[dict[str, Any]], blocking_abort: bool,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if blocking_abort:  # rkllm_abort returns only once the run has stopped (rknn-llm#400)
        monkeypatch.setenv("STANDIN_RKLLM_ABORT_BLOCKS", "1")
    task = asyncio.create_task(collect(loaded.reply("[[prefill_ms=4000]]问")))
    await asyncio.to_thread(standin.wait_running)

    loaded.stop()

    assert await task == []  # well before the 4 s prefill would have ended
    loaded.close()
    assert loaded.last_abort_s is not None and loaded.last_abort_s < 1.0  # the stand-in checks every 2 ms
    [event] = [e for e in logs if e["event"] == "llm aborted"]
    assert event["abort_ms"] == pytest.approx(loaded.last_abort_s * 1000, abs=0.1)
    assert event["calls"] >= 1


async def test_abort_latency_while_generating_is_measured(loaded: RkllmLlm, standin: StandIn) -> None:
    stream = loaded.reply("[[long]][[token_ms=20]]问")
    said = [await anext(stream) for _ in range(3)]

    loaded.stop()

    said += await collect(stream)
    loaded.close()
    assert 3 <= len(said) < 400
    assert loaded.last_abort_s is not None and loaded.last_abort_s < 1.0


async def test_cancelling_the_consumer_aborts(loaded: RkllmLlm, standin: StandIn) -> None:
    standin.gate(True)
    standin.allow(1 + 1)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in loaded.reply("问"):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), WAIT_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    standin.wait_idle()  # the gate is still shut: only the stop can have ended the run
    assert stopped_by_us(standin)
    assert loaded.history.exchanges == [("问", "你")]
    standin.gate(False)
    assert await collect(loaded.reply("再问")) == PIECES  # the next reply is whole
    assert standin.count("kv_clears") == 1


async def test_leaving_the_stream_early_aborts(loaded: RkllmLlm, standin: StandIn) -> None:
    standin.gate(True)
    standin.allow(1 + 1)
    stream = loaded.reply("问")
    assert await anext(stream) == "你"
    await stream.aclose()  # what `break` out of `async for` does

    standin.wait_idle()  # the gate is still shut: only the stop can have ended the run
    loaded.close()  # waits for the worker, which clears the KV cache after the run
    assert stopped_by_us(standin)
    assert (standin.count("tokens"), standin.count("kv_clears")) == (1, 1)


async def test_stop_before_the_run_starts_runs_nothing(loaded: RkllmLlm, standin: StandIn) -> None:
    stream = loaded.reply("问")
    loaded.stop()
    assert await collect(stream) == []
    assert standin.count("runs") == 0


async def test_stop_after_the_reply_is_a_no_op(loaded: RkllmLlm, standin: StandIn) -> None:
    await collect(loaded.reply("问"))
    loaded.stop()
    loaded.close()
    assert (standin.count("aborts"), standin.count("kv_clears")) == (0, 0)
    assert loaded.last_abort_s is None


# ---- errors ----


async def test_error_state_becomes_model_error(loaded: RkllmLlm, standin: StandIn) -> None:
    with pytest.raises(ModelError) as exc:
        await collect(loaded.reply("[[callback-error]]"))
    assert "reported an error" in one_line(exc)
    assert await collect(loaded.reply("再问")) == PIECES  # the model still works


async def test_failed_run_becomes_model_error(loaded: RkllmLlm) -> None:
    with pytest.raises(ModelError) as exc:
        await collect(loaded.reply("[[run-fail]]"))
    assert "code -1" in one_line(exc)


async def test_reply_before_load_is_model_error(make_llm: Callable[..., RkllmLlm]) -> None:
    with pytest.raises(ModelError, match="before load"):
        await collect(make_llm().reply("问"))


def test_missing_library_is_one_line(model: Path, tmp_path: Path) -> None:
    llm = RkllmLlm(tmp_path / "librkllmrt.so", model)
    with pytest.raises(ModelError) as exc:
        llm.load()
    llm.close()
    assert "does not exist (step: find library)" in one_line(exc)


def test_relative_library_path_is_refused(model: Path) -> None:
    llm = RkllmLlm(Path("librkllmrt.so"), model)
    with pytest.raises(ModelError, match="must be absolute"):
        llm.load()
    llm.close()


def test_other_runtime_version_is_refused_without_loading_it(build_dir: Path, model: Path) -> None:
    other = build(build_dir / "librkllmrt-1.2.3.so", '-DSTANDIN_VERSION="1.2.3"')
    llm = RkllmLlm(other, model)
    with pytest.raises(ModelError) as exc:
        llm.load()
    llm.close()
    assert one_line(exc) == f"llm: {other} is RKLLM runtime 1.2.3; only 1.3.0 is supported (step: check version)"
    assert str(other) not in Path("/proc/self/maps").read_text()


def test_a_file_that_is_no_runtime_is_refused(tmp_path: Path, model: Path) -> None:
    plain = tmp_path / "libother.so"
    plain.write_bytes(b"\x7fELF nothing of interest\x001.3.0\x00")
    with pytest.raises(ModelError, match=r"is not an RKLLM runtime .*\(step: check version\)"):
        abi.open_runtime(plain)

    fake = tmp_path / "librkllmrt.so"
    fake.write_bytes(b"not a library\x00rkllm-runtime version: %s\x001.3.0\x00")
    llm = RkllmLlm(fake, model)
    with pytest.raises(ModelError) as exc:
        llm.load()
    llm.close()
    assert "(step: load library)" in one_line(exc)


def test_a_runtime_without_abort_is_refused(build_dir: Path, model: Path) -> None:
    lacking = build(build_dir / "librkllmrt-noabort.so", "-DSTANDIN_HIDE_ABORT")
    with pytest.raises(ModelError) as exc:
        abi.open_runtime(lacking)
    assert "has no rkllm_abort (step: bind functions)" in one_line(exc)


def test_missing_model_file_is_one_line(library: Path, tmp_path: Path) -> None:
    llm = RkllmLlm(library, tmp_path / "missing.rkllm")
    with pytest.raises(ModelError) as exc:
        llm.load()
    llm.close()
    assert "does not exist (step: load model)" in one_line(exc)


def test_model_the_runtime_rejects_is_one_line(library: Path, tmp_path: Path, standin: StandIn) -> None:
    corrupt = tmp_path / "corrupt.rkllm"
    corrupt.write_bytes(b"GGUF but not an rkllm model")
    llm = RkllmLlm(library, corrupt)
    with pytest.raises(ModelError) as exc:
        llm.load()
    llm.close()
    assert "(code -1) (step: rkllm_init)" in one_line(exc)
    assert standin.count("live") == 0


# ---- threads and the NPU ----


async def test_no_threads_are_left_after_close(library: Path, model: Path, standin: StandIn) -> None:
    before = set(threading.enumerate())
    llm = RkllmLlm(library, model)
    llm.load()
    assert await collect(llm.reply("问")) == PIECES
    standin.gate(True)
    standin.allow(1 + 1)
    stream = llm.reply("再问")
    await anext(stream)
    standin.wait_blocked(2)
    llm.stop()  # an abort thread
    await collect(stream)
    llm.close()

    assert set(threading.enumerate()) <= before
    assert standin.count("live") == 0


async def test_serialised_npu_lets_a_waiting_job_in_between_tokens(make_llm: Callable[..., RkllmLlm],
                                                                   standin: StandIn) -> None:
    npu = NpuScheduler("serialised")
    llm = make_llm(npu=npu)
    llm.load()
    standin.gate(True)
    standin.allow(1 + 1)
    stream = llm.reply("问")
    said = [await anext(stream)]
    standin.wait_blocked(2)  # the LLM holds the NPU, waiting to compute token 2
    seen: dict[str, int] = {}

    def tts_job() -> None:
        with npu.turn("tts"):
            seen.update(running=standin.count("running"), tokens=standin.count("tokens"))

    tts = threading.Thread(target=tts_job)
    tts.start()
    eventually(lambda: npu.waiting() == 1)
    standin.allow(1)  # token 2: its callback hands the NPU over
    tts.join(WAIT_S)

    assert seen == {"running": 1, "tokens": 2}  # inside the reply, right after token 2
    standin.gate(False)
    said += await collect(stream)
    assert "".join(said) == REPLY


# ---- the prompt cache ----


def test_prompt_cache_is_saved_once_then_loaded(make_llm: Callable[..., RkllmLlm], standin: StandIn,
                                                tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "system.bin"
    make_llm(prompt_cache=cache).load()
    assert (standin.count("cache_saves"), standin.count("cache_loads"), standin.count("runs")) == (1, 0, 1)
    assert standin.count("kv_clears") == 1  # the priming turn is forgotten
    assert cache.is_file() and cache.with_name("system.bin.key").is_file()

    standin.reset()
    make_llm(prompt_cache=cache).load()
    assert (standin.count("cache_saves"), standin.count("cache_loads"), standin.count("runs")) == (0, 1, 0)


async def test_priming_output_is_not_a_reply(make_llm: Callable[..., RkllmLlm], tmp_path: Path) -> None:
    llm = make_llm(prompt_cache=tmp_path / "system.bin")
    llm.load()
    assert await collect(llm.reply("问")) == PIECES


def test_corrupt_prompt_cache_is_rebuilt(make_llm: Callable[..., RkllmLlm], standin: StandIn, tmp_path: Path,
                                         logs: list[dict[str, Any]]) -> None:
    cache = tmp_path / "system.bin"
    make_llm(prompt_cache=cache).load()
    cache.write_bytes(b"\x00garbage")
    standin.reset()

    make_llm(prompt_cache=cache).load()

    assert (standin.count("cache_saves"), standin.count("cache_loads")) == (1, 0)
    assert any(e["event"] == "llm prompt cache unreadable, rebuilding it" for e in logs)


def test_prompt_cache_of_another_system_prompt_is_rebuilt(make_llm: Callable[..., RkllmLlm], standin: StandIn,
                                                          tmp_path: Path) -> None:
    cache = tmp_path / "system.bin"
    make_llm(prompt_cache=cache).load()
    standin.reset()

    make_llm(prompt_cache=cache, system_prompt="换一个提示。").load()

    assert (standin.count("cache_saves"), standin.count("cache_loads")) == (1, 0)


# ---- selected in config.toml ----


def test_config_selects_rkllm_for_ask(standin: StandIn, library: Path, model: Path, tmp_path: Path,
                                      cli_main: Callable[..., tuple[int, str, list[str]]]) -> None:
    """`assistant ask` with models.llm = "rkllm": the reply streamed from the (stand-in) runtime is printed."""
    argv = ["ask", "--text", "讲个故事", "-o", str(tmp_path / "reply.wav"), "--set", "models.llm=rkllm",
            "--set", f'rkllm.library="{library}"', "--set", f'rkllm.model="{model}"',
            "--set", f'rkllm.prompt_cache="{tmp_path / "cache.bin"}"', "--set", "npu.mode=concurrent"]
    code, out, _ = cli_main(*argv)
    assert code == 0 and out.strip() == f"听说: {REPLY}"
    assert standin.text("prompt").endswith(f"{PREFIX}讲个故事{POSTFIX}")
    assert (tmp_path / "reply.wav").stat().st_size > 1000  # spoken too (Kokoro on the CPU)
    code, _, err = cli_main(*argv[:5], "--set", "models.llm=rkllm", "--set", f'rkllm.library="{tmp_path}/none.so"')
    assert code == 2 and len(err) == 1 and "none.so" in err[0]
