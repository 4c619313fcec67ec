#!/usr/bin/env bash
# Build llama-cpp-python for this CPU, without AMX, and install it into the given Python's venv.
#
#   deploy/llama-build.sh .venv/bin/python
#
# llama-cpp-python compiles llama.cpp from source. A plain `pip install` builds with -march=native,
# and on Xeons with AMX (Sapphire Rapids and later) ggml's AMX matrix kernels crash the process
# (SIGSEGV in ggml_backend_amx_mul_mat) as soon as a prompt is evaluated in a batch. So the build
# names this CPU's instruction sets one by one (read from /proc/cpuinfo) and leaves AMX out; AMX
# only speeds up large batches, which a voice assistant never runs.
#
# The wheel is kept in ~/.cache/tingshuo/wheels (or $TINGSHUO_WHEELS) under a key of the version and
# the flags, so the next venv on this machine installs it in seconds; pip's own wheel cache is not
# used, since it would hand back a build made with other flags.
set -euo pipefail
python=${1:?usage: llama-build.sh PYTHON}
version=0.3.36

info=$("$python" -c 'import llama_cpp; print(llama_cpp.__version__, llama_cpp.llama_print_system_info().decode())' \
       2>/dev/null || true)
if [[ $info == "$version "* && $info != *"AMX_INT8 = 1"* ]]; then
    exit 0  # already this version, built without AMX
fi

flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
args=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx512f:AVX512 avx512vbmi:AVX512_VBMI \
            avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
    if [[ $flags == *" ${pair%%:*} "* ]]; then args+=("-DGGML_${pair#*:}=ON"); else args+=("-DGGML_${pair#*:}=OFF"); fi
done
key=$(printf '%s ' "$version" "${args[@]}" | sha256sum | cut -c1-12)
dir=${TINGSHUO_WHEELS:-$HOME/.cache/tingshuo/wheels}/llama-cpp-python-$version-$key
if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "setup: compiling llama-cpp-python $version for this CPU without AMX (about 7-12 minutes on 2 cores)"
    started=$SECONDS
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    CMAKE_ARGS="${args[*]}" "$python" -m pip wheel --quiet --no-cache-dir --no-deps -w "$dir.tmp" \
        "llama-cpp-python==$version"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "setup: llama-cpp-python compiled in $((SECONDS - started)) s; wheel kept in $dir"
fi
"$python" -m pip install --quiet --force-reinstall --no-deps "$dir"/llama_cpp_python-*.whl
"$python" -m pip install --quiet "$dir"/llama_cpp_python-*.whl  # its dependencies, if missing
