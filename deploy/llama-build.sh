#!/usr/bin/env bash
# Build llama-cpp-python for this CPU, without AMX, and install it into the given Python's venv.
#
#   deploy/llama-build.sh .venv/bin/python
#   deploy/llama-build.sh --print          the CMake flags and job count it would use, nothing built
#
# llama-cpp-python compiles llama.cpp from source. A plain `pip install` builds with -march=native,
# and on Xeons with AMX (Sapphire Rapids and later) ggml's AMX matrix kernels crash the process
# (SIGSEGV in ggml_backend_amx_mul_mat) as soon as a prompt is evaluated in a batch. So the build
# names this CPU's instruction sets one by one (read from /proc/cpuinfo) and leaves AMX out; AMX
# only speeds up large batches, which a voice assistant never runs. On ARM (an aarch64 board without
# an NPU; an RK3576 runs its LLM on RKLLM and setup.sh skips this) the flags come from the
# `Features` line instead: the ARM architecture level and its dot-product, fp16, i8mm and SVE
# extensions.
#
# Parallel compile jobs are capped by memory (deploy/detect.sh: one per ~1.5 GB available, at most
# the cores): ninja's default of cores + 2 runs a 3.8 GB board without swap out of memory.
#
# The wheel is kept in ~/.cache/tingshuo/wheels (or $TINGSHUO_WHEELS) under a key of the version and
# the flags, so the next venv on this machine installs it in seconds; pip's own wheel cache is not
# used, since it would hand back a build made with other flags.
set -euo pipefail
source "$(dirname "$0")/detect.sh"
version=0.3.36

x86_args() {  # this CPU's instruction sets, named one by one, AMX off
    local flags pair
    flags=$(cpu_features)
    args=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
    for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx512f:AVX512 avx512vbmi:AVX512_VBMI \
                avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
        if [[ $flags == *" ${pair%%:*} "* ]]; then args+=("-DGGML_${pair#*:}=ON"); else args+=("-DGGML_${pair#*:}=OFF"); fi
    done
}

arm_args() {  # the first core's Features (on big.LITTLE boards cpu0 is a little core: the common set)
    local features arch ext=""
    features=$(cpu_features)
    [[ $features == *" asimd "* ]] || { echo "llama-build: no 'Features' with asimd in ${TINGSHUO_CPUINFO:-/proc/cpuinfo}; cannot choose ARM flags" >&2; exit 1; }
    arch=armv8-a
    [[ $features == *" asimddp "* ]] && ext+="+dotprod"
    [[ $features == *" asimdhp "* ]] && ext+="+fp16"
    [[ $features == *" i8mm "* ]] && ext+="+i8mm"
    [[ $features == *" sve "* ]] && ext+="+sve"
    [ -n "$ext" ] && arch=armv8.2-a
    args=(-DGGML_NATIVE=OFF "-DGGML_CPU_ARM_ARCH=$arch$ext")
}

case $(machine) in
    x86_64) x86_args ;;
    aarch64) arm_args ;;
    *) echo "llama-build: no build flags for $(machine) (x86_64 and aarch64 are known)" >&2; exit 1 ;;
esac
jobs=$(build_jobs)
if [ "${1:-}" = --print ]; then
    echo "args: ${args[*]}"
    echo "jobs: $jobs"
    exit 0
fi
python=${1:?usage: llama-build.sh PYTHON | --print}

info=$("$python" -c 'import llama_cpp; print(llama_cpp.__version__, llama_cpp.llama_print_system_info().decode())' \
       2>/dev/null || true)
if [[ $info == "$version "* && $info != *"AMX_INT8 = 1"* ]]; then
    exit 0  # already this version, built without AMX
fi

key=$(printf '%s ' "$version" "${args[@]}" | sha256sum | cut -c1-12)
dir=${TINGSHUO_WHEELS:-$HOME/.cache/tingshuo/wheels}/llama-cpp-python-$version-$key
if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "setup: compiling llama-cpp-python $version for this CPU without AMX, $jobs jobs (about 7-12 minutes on 2 cores)"
    started=$SECONDS
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    CMAKE_ARGS="${args[*]}" CMAKE_BUILD_PARALLEL_LEVEL=$jobs "$python" -m pip wheel --quiet --no-cache-dir --no-deps \
        -w "$dir.tmp" "llama-cpp-python==$version" || { echo "llama-build: compiling llama-cpp-python failed" >&2; exit 1; }
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "setup: llama-cpp-python compiled in $((SECONDS - started)) s; wheel kept in $dir"
fi
"$python" -m pip install --quiet --force-reinstall --no-deps "$dir"/llama_cpp_python-*.whl
"$python" -m pip install --quiet "$dir"/llama_cpp_python-*.whl  # its dependencies, if missing
