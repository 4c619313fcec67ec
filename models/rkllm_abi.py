"""The C interface of Rockchip's RKLLM runtime 1.3.0 (librkllmrt.so), mirrored with ctypes.

Layout source: ``rkllm-runtime/Linux/librkllm_api/include/rkllm.h`` of airockchip/rknn-llm at the
``release v1.3.0`` commit (878f9361). Version 1.3.0 changed the ABI against 1.2.x: ``rkllm_init``
takes a pointer to an ``RKLLMCallback`` struct instead of a bare function pointer, ``RKLLMParam``
lost its three ``img_*`` pointers and gained ``ignore_eos_token``, ``RKLLMInferParam`` gained
``sampling_params`` and ``max_new_tokens``. A 1.2.x library driven through this layout would read
garbage or jump into data, so the version is checked before the library is even opened.

Version check: the header has no version function. The runtime prints ``rkllm-runtime version: %s``
at init, with the version as a separate string constant in the library's read-only data (its
banner is a format string). ``runtime_versions`` reads the file, requires that banner (else it is no
RKLLM runtime) and collects the strings that are, or begin with, a version ``N.N.N`` (``1.3.0``,
``v1.3.0``, ``1.3.0 (hash@date)``), or a version written into the banner itself in case a build
has it as a literal; 1.3.0 must be among them. The check
reads the file and does not load it, so a refused library's constructors never run.

The struct sizes of the 64-bit header (``SIZES``) are checked against ctypes at load: a field out of
place here would corrupt every call, silently.
"""

from __future__ import annotations

import ctypes
import mmap
import re
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    Union,
    c_bool,
    c_char_p,
    c_float,
    c_int,
    c_int8,
    c_int32,
    c_size_t,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

from models.protocols import ModelError

VERSION = "1.3.0"

# LLMCallState
RKLLM_RUN_NORMAL = 0
RKLLM_RUN_WAITING = 1  # waiting for the rest of a UTF-8 character
RKLLM_RUN_FINISH = 2
RKLLM_RUN_ERROR = 3
# RKLLMInputType
RKLLM_INPUT_PROMPT = 0
RKLLM_INPUT_TOKEN = 1
RKLLM_INPUT_EMBED = 2
RKLLM_INPUT_MULTIMODAL = 3
# RKLLMInferMode
RKLLM_INFER_GENERATE = 0
RKLLM_INFER_GET_LAST_HIDDEN_LAYER = 1
RKLLM_INFER_GET_LOGITS = 2
# What the result callback returns
CALLBACK_CONTINUE = 0
CALLBACK_PAUSE = 1


class RKLLMExtendParam(Structure):
    _fields_ = [
        ("base_domain_id", c_int32),
        ("embed_flash", c_int8),
        ("enabled_cpus_num", c_int8),
        ("enabled_cpus_mask", c_uint32),
        ("n_batch", c_uint8),
        ("use_cross_attn", c_int8),
        ("reserved", c_uint8 * 104),
    ]


class RKLLMParam(Structure):
    _fields_ = [
        ("model_path", c_char_p),
        ("max_context_len", c_int32),
        ("max_new_tokens", c_int32),
        ("top_k", c_int32),
        ("n_keep", c_int32),
        ("top_p", c_float),
        ("temperature", c_float),
        ("repeat_penalty", c_float),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("mirostat", c_int32),
        ("mirostat_tau", c_float),
        ("mirostat_eta", c_float),
        ("skip_special_token", c_bool),
        ("ignore_eos_token", c_bool),
        ("is_async", c_bool),
        ("extend_param", RKLLMExtendParam),
    ]


class RKLLMEmbedInput(Structure):
    _fields_ = [("embed", POINTER(c_float)), ("n_tokens", c_size_t)]


class RKLLMTokenInput(Structure):
    _fields_ = [("input_ids", POINTER(c_int32)), ("n_tokens", c_size_t)]


class RKLLMImageInput(Structure):
    _fields_ = [
        ("image_embed", POINTER(c_float)),
        ("n_image_tokens", c_size_t),
        ("n_image", c_size_t),
        ("image_start", c_char_p),
        ("image_end", c_char_p),
        ("image_content", c_char_p),
        ("image_width", c_size_t),
        ("image_height", c_size_t),
    ]


class RKLLMVideoInput(Structure):
    _fields_ = [
        ("video_embed", POINTER(c_float)),
        ("n_frame_tokens", c_size_t),
        ("n_frame_per_video", c_size_t),
        ("n_video", c_size_t),
        ("video_start", c_char_p),
        ("video_end", c_char_p),
        ("video_content", c_char_p),
        ("frame_width", c_size_t),
        ("frame_height", c_size_t),
    ]


class RKLLMMultiModalInput(Structure):
    _fields_ = [("prompt", c_char_p), ("image", RKLLMImageInput), ("video", RKLLMVideoInput)]


class RKLLMInputUnion(Union):
    _fields_ = [
        ("prompt_input", c_char_p),
        ("embed_input", RKLLMEmbedInput),
        ("token_input", RKLLMTokenInput),
        ("multimodal_input", RKLLMMultiModalInput),
    ]


class RKLLMInput(Structure):
    _anonymous_ = ("input",)
    _fields_ = [
        ("role", c_char_p),
        ("enable_thinking", c_bool),
        ("input_type", c_int),
        ("input", RKLLMInputUnion),
    ]


class RKLLMLoraParam(Structure):
    _fields_ = [("lora_adapter_name", c_char_p)]


class RKLLMPromptCacheParam(Structure):
    _fields_ = [("save_prompt_cache", c_int), ("prompt_cache_path", c_char_p)]


class RKLLMSamplingParam(Structure):
    _fields_ = [
        ("top_k", c_int32),
        ("top_p", c_float),
        ("temperature", c_float),
        ("repeat_penalty", c_float),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("mirostat", c_int32),
        ("mirostat_tau", c_float),
        ("mirostat_eta", c_float),
    ]


class RKLLMInferParam(Structure):
    _fields_ = [
        ("mode", c_int),
        ("lora_params", POINTER(RKLLMLoraParam)),
        ("prompt_cache_params", POINTER(RKLLMPromptCacheParam)),
        ("sampling_params", POINTER(RKLLMSamplingParam)),
        ("keep_history", c_int),
        ("max_new_tokens", c_int32),
    ]


class RKLLMResultLastHiddenLayer(Structure):
    _fields_ = [("hidden_states", POINTER(c_float)), ("embd_size", c_int), ("num_tokens", c_int)]


class RKLLMResultLogits(Structure):
    _fields_ = [("logits", POINTER(c_float)), ("vocab_size", c_int), ("num_tokens", c_int)]


class RKLLMPerfStat(Structure):
    _fields_ = [
        ("prefill_time_ms", c_float),
        ("prefill_tokens", c_int),
        ("generate_time_ms", c_float),
        ("generate_tokens", c_int),
        ("memory_usage_mb", c_float),
    ]


class RKLLMResult(Structure):
    _fields_ = [
        ("text", c_char_p),
        ("token_id", c_int32),
        ("last_hidden_layer", RKLLMResultLastHiddenLayer),
        ("logits", RKLLMResultLogits),
        ("perf", RKLLMPerfStat),
    ]


# int (*)(RKLLMResult* result, void* userdata, LLMCallState state)
LLMResultCallback = CFUNCTYPE(c_int, POINTER(RKLLMResult), c_void_p, c_int)
LLMTokenizerCallback = CFUNCTYPE(c_int, c_void_p, c_char_p, c_int32, POINTER(c_int32), c_int32)
LLMGetEmbedCallback = CFUNCTYPE(c_int, c_void_p, POINTER(c_int32), c_uint64, c_void_p, c_uint64)


class RKLLMCallback(Structure):
    _fields_ = [
        ("result_callback", LLMResultCallback),
        ("result_userdata", c_void_p),
        ("tokenizer_callback", LLMTokenizerCallback),
        ("tokenizer_userdata", c_void_p),
        ("embed_callback", LLMGetEmbedCallback),
        ("embed_userdata", c_void_p),
    ]


SIZES: dict[type[Structure], int] = {
    RKLLMExtendParam: 120,
    RKLLMParam: 184,
    RKLLMInput: 160,
    RKLLMInferParam: 40,
    RKLLMResult: 72,
    RKLLMCallback: 48,
}
"""Struct sizes of rkllm.h 1.3.0 on a 64-bit target."""

_PROTOTYPES: dict[str, tuple[type | None, list[type]]] = {
    "rkllm_createDefaultParam": (RKLLMParam, []),
    "rkllm_init": (c_int, [POINTER(c_void_p), POINTER(RKLLMParam), POINTER(RKLLMCallback)]),
    "rkllm_set_chat_template": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p]),
    "rkllm_load_prompt_cache": (c_int, [c_void_p, c_char_p]),
    "rkllm_release_prompt_cache": (c_int, [c_void_p]),
    "rkllm_run": (c_int, [c_void_p, POINTER(RKLLMInput), POINTER(RKLLMInferParam), c_void_p]),
    "rkllm_abort": (c_int, [c_void_p]),
    "rkllm_is_running": (c_int, [c_void_p]),
    "rkllm_clear_kv_cache": (c_int, [c_void_p, c_int, POINTER(c_int), POINTER(c_int)]),
    "rkllm_destroy": (c_int, [c_void_p]),
}

_BANNER = b"rkllm-runtime version: "
_VERSION_STRING = re.compile(rb"\x00v?(\d{1,3}\.\d{1,3}\.\d{1,3})(?=[\x00 (+])"  # a whole string, or its start
                             rb"|rkllm-runtime version: v?(\d{1,3}\.\d{1,3}\.\d{1,3})(?![\d.])")  # or in the banner


def check_layout() -> None:
    """Refuse to go on if a struct here is not the size it has in the 64-bit header."""
    if ctypes.sizeof(c_void_p) != 8:
        raise ModelError("llm: the RKLLM binding supports 64-bit processes only (step: check struct layout)")
    wrong = [f"{cls.__name__} {ctypes.sizeof(cls)} != {size}" for cls, size in SIZES.items()
             if ctypes.sizeof(cls) != size]
    if wrong:
        raise ModelError(f"llm: the RKLLM struct layout is wrong: {', '.join(wrong)} (step: check struct layout)")


def runtime_versions(library: Path) -> set[str] | None:
    """The version strings in an RKLLM runtime library, or None if it has no RKLLM banner."""
    with library.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data.find(_BANNER) < 0:
            return None
        return {(m.group(1) or m.group(2)).decode() for m in _VERSION_STRING.finditer(data)}


class RkllmRuntime:
    """The opened library, with typed calls; built by ``open_runtime``."""

    def __init__(self, lib: ctypes.CDLL, path: Path) -> None:
        self._lib = lib
        self.path = path

    def create_default_param(self) -> RKLLMParam:
        param: RKLLMParam = self._lib.rkllm_createDefaultParam()
        return param

    def init(self, handle: c_void_p, param: RKLLMParam, callback: RKLLMCallback) -> int:
        return int(self._lib.rkllm_init(ctypes.byref(handle), ctypes.byref(param), ctypes.byref(callback)))

    def set_chat_template(self, handle: c_void_p, system: str, prefix: str, postfix: str) -> int:
        return int(self._lib.rkllm_set_chat_template(handle, system.encode(), prefix.encode(), postfix.encode()))

    def load_prompt_cache(self, handle: c_void_p, path: Path) -> int:
        return int(self._lib.rkllm_load_prompt_cache(handle, str(path).encode()))

    def release_prompt_cache(self, handle: c_void_p) -> int:
        return int(self._lib.rkllm_release_prompt_cache(handle))

    def run(self, handle: c_void_p, rk_input: RKLLMInput, infer: RKLLMInferParam) -> int:
        """Blocking: the result callback is called before this returns (``is_async`` is false)."""
        return int(self._lib.rkllm_run(handle, ctypes.byref(rk_input), ctypes.byref(infer), None))

    def abort(self, handle: c_void_p) -> int:
        return int(self._lib.rkllm_abort(handle))

    def is_running(self, handle: c_void_p) -> bool:
        return int(self._lib.rkllm_is_running(handle)) == 1

    def clear_kv_cache(self, handle: c_void_p, *, keep_system_prompt: bool) -> int:
        return int(self._lib.rkllm_clear_kv_cache(handle, int(keep_system_prompt), None, None))

    def destroy(self, handle: c_void_p) -> int:
        return int(self._lib.rkllm_destroy(handle))


def open_runtime(library: Path) -> RkllmRuntime:
    """Check and open the RKLLM runtime at the absolute path ``library``.

    Every refusal is a one-line ModelError naming the file and the step: not absolute, missing,
    not an RKLLM runtime, another version, not loadable (e.g. another CPU architecture), a missing
    function, or a struct layout that does not match the header.
    """
    check_layout()
    if not library.is_absolute():
        raise ModelError(f"llm: the RKLLM runtime path must be absolute, not {library} (step: find library)")
    if not library.is_file():
        raise ModelError(f"llm: the RKLLM runtime {library} does not exist (step: find library)")
    try:
        versions = runtime_versions(library)
    except (OSError, ValueError) as exc:
        raise ModelError(f"llm: cannot read the RKLLM runtime {library}: {exc} (step: check version)") from None
    if versions is None:
        raise ModelError(f"llm: {library} is not an RKLLM runtime (no version banner) (step: check version)")
    if VERSION not in versions:
        found = ", ".join(sorted(v for v in versions if not v.startswith("0."))) or "unknown"
        raise ModelError(f"llm: {library} is RKLLM runtime {found}; only {VERSION} is supported "
                         "(step: check version)")
    try:
        lib = ctypes.CDLL(str(library))
    except OSError as exc:
        reason = " ".join(str(exc).split())
        raise ModelError(f"llm: cannot load the RKLLM runtime {library}: {reason} (step: load library)") from None
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ModelError(f"llm: the RKLLM runtime {library} has no {name} (step: bind functions)") from None
        fn.restype = restype
        fn.argtypes = argtypes
    return RkllmRuntime(lib, library)
