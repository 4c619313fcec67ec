# What machine this is, for setup.sh and llama-build.sh (sourced, never run). Bash functions only.
#
# Every file read can be pointed elsewhere, so tests can feed a board's files to an x86 machine (and
# the emulated board, whose qemu shows the host's /proc/cpuinfo, can name its CPU):
#   TINGSHUO_CPUINFO       instead of /proc/cpuinfo
#   TINGSHUO_COMPATIBLE    instead of /proc/device-tree/compatible (NUL-separated strings)
#   TINGSHUO_MEMINFO       instead of /proc/meminfo
#   TINGSHUO_MACHINE       instead of `uname -m`
#   TINGSHUO_CORES         instead of `nproc`

machine() { echo "${TINGSHUO_MACHINE:-$(uname -m)}"; }

# The CPU's feature words, space-separated with a space at each end: x86 calls the line `flags`,
# ARM `Features`. Empty (not a failure) when neither is there.
cpu_features() {
    local line
    line=$(grep -m1 -E '^(flags|Features)[[:space:]]*:' "${TINGSHUO_CPUINFO:-/proc/cpuinfo}" 2>/dev/null || true)
    echo " ${line#*:} " | tr -s '[:space:]' ' '
}

# An RK3576: its device tree says rockchip,rk3576 (or a vendor cpuinfo names it). Needs aarch64.
is_rk3576() {
    [ "$(machine)" = aarch64 ] || return 1
    grep -qi 'rk3576' "${TINGSHUO_CPUINFO:-/proc/cpuinfo}" 2>/dev/null && return 0
    tr '\0' '\n' <"${TINGSHUO_COMPATIBLE:-/proc/device-tree/compatible}" 2>/dev/null | grep -qi 'rk3576'
}

# MemAvailable in MB (MemTotal on kernels that lack it; 0 when unreadable).
mem_available_mb() {
    local file=${TINGSHUO_MEMINFO:-/proc/meminfo} kb
    kb=$(awk '/^MemAvailable:/ {print $2; exit}' "$file" 2>/dev/null || true)
    [ -n "$kb" ] || kb=$(awk '/^MemTotal:/ {print $2; exit}' "$file" 2>/dev/null || true)
    echo $(( ${kb:-0} / 1024 ))
}

# Parallel compile jobs: one per ~1.5 GB available (a llama.cpp C++ unit takes up to ~1 GB in cc1plus,
# and a 3.8 GB board has no swap), at least 1, at most the cores.
build_jobs() {
    local cores=${TINGSHUO_CORES:-$(nproc)} jobs
    jobs=$(( $(mem_available_mb) / 1536 ))
    (( jobs < 1 )) && jobs=1
    (( jobs > cores )) && jobs=$cores
    echo "$jobs"
}

# The Debian mirror this system's apt reads (deb822 .sources or a one-line sources.list), empty if none.
debian_mirror() {
    local line
    line=$(grep -hs -m1 -E '^URIs: .*/debian/?$' /etc/apt/sources.list.d/*.sources ||
           grep -hs -m1 -E '^deb .*/debian/? ' /etc/apt/sources.list || true)
    line=${line#URIs: }
    line=${line#deb }
    line=${line#\[*\] }
    echo "${line%% *}"
}
