#!/usr/bin/env bash
# Prove the board install on an emulated RK3576 board: Debian 13 arm64 under qemu-user, on any x86 host.
#
#   sudo deploy/emulated-board.sh [root|install|run|all|clean]     (default: all)
#
# root     debootstrap Debian 13 "trixie" arm64 into $TINGSHUO_BOARD_ROOT (~/.cache/tingshuo/board-root),
#          from the Debian mirror this host's apt uses (or $TINGSHUO_DEBIAN_MIRROR); reused when present
# install  copy the project (its tracked files) to /opt/tingshuo and ../shared to /opt/shared inside,
#          then run the README's board command there: ./setup.sh ../shared/models (the board is
#          detected from an RK3576's cpuinfo and device tree, laid in the root)
# run      inside the board: `assistant doctor`, then the CPU path: transcribe a real recording and
#          say a sentence to a file
# clean    remove the root, unmounting first whatever an interrupted run left mounted in it
#
# Each phase prints its time. What this covers: Debian 13's packages and Python, the aarch64 wheels,
# the board's branch of setup.sh and the CPU models on an aarch64 Python. What it cannot: the NPU,
# the real librknnrt.so / librkllmrt.so and the RKNPU driver, ALSA devices, and speed (qemu-user
# runs aarch64 code 5-20x slower than a real A72). The host needs qemu-user-static, binfmt-support
# and debootstrap (apt-get install qemu-user-static binfmt-support debootstrap), and root.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/deploy/detect.sh"
phase=${1:-all}
root=${TINGSHUO_BOARD_ROOT:-$HOME/.cache/tingshuo/board-root}
suite=trixie

die() { echo "emulated-board: $*" >&2; exit 1; }
timed() {  # timed NAME COMMAND...: run it and remember how long it took
    local name=$1 started=$SECONDS
    shift
    "$@" || die "$name failed (exit $?)"
    times+=("$name $((SECONDS - started)) s")
    echo "emulated-board: $name took $((SECONDS - started)) s"
}
times=()

check_host() {
    [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts)"
    command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
    [ -x /usr/bin/qemu-aarch64-static ] || die "qemu-aarch64-static is missing: apt-get install qemu-user-static binfmt-support"
    [ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
        die "cannot mount binfmt_misc (is this a privileged container?)"
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 ||
        die "cannot register qemu-aarch64 with binfmt_misc: update-binfmts --enable qemu-aarch64"
    grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || update-binfmts --enable qemu-aarch64 ||
        die "qemu-aarch64 is registered but disabled: update-binfmts --enable qemu-aarch64"
}

interpreter() {  # the path binfmt_misc runs aarch64 programs with, which must also exist inside the root
    sed -n 's/^interpreter //p' /proc/sys/fs/binfmt_misc/qemu-aarch64
}

# An interrupted run can leave mounts in a root: the second stage's proc and sys, or this script's
# bind of the host's /dev. They are unmounted (deepest first) before the root is removed, and the
# removal never crosses into another file system, so it cannot reach the host's /dev or /proc.
release() {  # release DIR: unmount everything mounted at or under DIR
    local dir m
    dir=$(realpath -m "$1")
    for m in $(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m" || die "cannot unmount $m, left by an interrupted run"
    done
}
remove_root() {  # remove_root DIR
    [ -e "$1" ] || return 0
    release "$1"
    rm -rf --one-file-system "$1"
}

make_root() {
    [ -e "$root/.tingshuo-root-ok" ] && { echo "emulated-board: reusing $root"; return 0; }
    local mirror=${TINGSHUO_DEBIAN_MIRROR:-$(debian_mirror)}
    [ -n "$mirror" ] || die "no Debian mirror in this host's apt sources: set TINGSHUO_DEBIAN_MIRROR"
    remove_root "$root.tmp" && mkdir -p "$root.tmp"
    echo "emulated-board: debootstrap $suite arm64 into $root (first stage)"
    debootstrap --foreign --arch=arm64 --variant=minbase --include=ca-certificates,python3 \
        "$suite" "$root.tmp" "$mirror" >"$root.tmp.log" 2>&1 || die "debootstrap failed; see $root.tmp.log"
    local qemu
    qemu=$(interpreter)
    mkdir -p "$root.tmp$(dirname "$qemu")"
    cp /usr/bin/qemu-aarch64-static "$root.tmp$qemu"
    echo "emulated-board: second stage, under qemu"
    chroot "$root.tmp" /debootstrap/debootstrap --second-stage >>"$root.tmp.log" 2>&1 ||
        die "debootstrap's second stage failed; see $root.tmp/debootstrap/debootstrap.log"
    touch "$root.tmp/.tingshuo-root-ok"
    release "$root.tmp"
    remove_root "$root" && mv "$root.tmp" "$root"
}

mounts=()
mount_board() {
    local m
    # Not /sys: an x86 host's CPU topology there crashes onnxruntime's cpuinfo at import under qemu.
    for m in proc dev dev/pts; do
        mountpoint -q "$root/$m" && continue
        mkdir -p "$root/$m"
        case $m in
            proc) mount -t proc proc "$root/proc" ;;
            *) mount --bind "/$m" "$root/$m" ;;
        esac
        mounts=("$root/$m" "${mounts[@]}")
    done
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
}
unmount_board() {
    local m
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
}
trap unmount_board EXIT

# qemu-user shows the host's /proc/cpuinfo and no device tree, so the board's are laid in the root
# and detection is pointed at them (deploy/detect.sh): an RK3576's first core and its compatible string.
fake_proc() {
    mkdir -p "$root/opt/emulated"
    printf 'processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n%s\n' \
        'CPU implementer	: 0x41' >"$root/opt/emulated/cpuinfo"
    printf 'rockchip,rk3576-evb1-v10\0rockchip,rk3576\0' >"$root/opt/emulated/compatible"
    # The host's trust store, so that pip inside trusts what the host trusts (a TLS-inspecting proxy).
    cp -L "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$root/opt/emulated/host-ca.crt"
}

# inside COMMAND: a clean shell in the board's /opt/tingshuo. QEMU_CPU=cortex-a72 gives every process
# the RK3576's big core's instruction set (no SVE, dot product or fp16 that qemu's default CPU has).
inside() {
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 TERM=dumb QEMU_CPU=cortex-a72 TINGSHUO_CPUINFO=/opt/emulated/cpuinfo TINGSHUO_COMPATIBLE=/opt/emulated/compatible \
        PIP_CERT=/opt/emulated/host-ca.crt SSL_CERT_FILE=/opt/emulated/host-ca.crt \
        bash -c "cd /opt/tingshuo && $1"
}

copy_project() {
    mkdir -p "$root/opt/tingshuo" "$root/opt/shared"
    (cd "$here" && git ls-files -z | tar --null -T - -cf -) | tar -x -C "$root/opt/tingshuo"
    cp -a "$here/../shared/." "$root/opt/shared/"
}

install() {
    timed "copy project" copy_project
    fake_proc
    timed "setup.sh (the README's board command)" inside "./setup.sh ../shared/models"
    du -sh "$root/opt/tingshuo/.venv" "$root/root/.cache/tingshuo/models" 2>/dev/null | sed 's/^/emulated-board: size /'
}

# onnxruntime finds no CPU lists in /sys (none is bound) and says so on every start: left out.
quiet="2> >(grep -v '^Error in cpuinfo' >&2)"

run_jobs() {
    timed "copy project" copy_project  # the venv is editable: today's code runs
    timed "assistant doctor" inside ".venv/bin/assistant --config deploy/config.rk3576.toml doctor"
    timed "transcribe (Whisper base)" inside \
        ".venv/bin/assistant transcribe ../shared/audio/real/ask_who_are_you.wav $quiet"
    timed "say to a file (Kokoro)" inside \
        ".venv/bin/assistant say '你好，我是听说。' -o /tmp/said.wav $quiet && ls -l /tmp/said.wav"
}

if [ "$phase" = clean ]; then
    [ "$(id -u)" -eq 0 ] || die "needs root (the root's files and mounts are root's)"
    remove_root "$root.tmp" && remove_root "$root"
    echo "emulated-board: removed $root"
    exit 0
fi
check_host
case $phase in
    root) timed "debootstrap" make_root ;;
    install) mount_board; install ;;
    run) mount_board; run_jobs ;;
    all) timed "debootstrap" make_root; mount_board; install; run_jobs ;;
    *) die "unknown phase $phase (root, install, run, all or clean)" ;;
esac
echo "emulated-board: times"
printf '  %s\n' "${times[@]}"
