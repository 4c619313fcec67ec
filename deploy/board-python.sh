#!/usr/bin/env bash
# Python 3.11 from Debian 12 ("bookworm") beside Debian 13's own 3.13, for rknn-toolkit-lite2, whose
# aarch64 wheels stop at cp312. One apt source and one pin, then apt-get: every package Debian 13 has
# still comes from Debian 13 (the pin gives bookworm priority 100, below trixie's 500), and only what
# it lacks — python3.11 and its few own libraries — comes from Debian 12. Not python3.11-venv: it
# needs bookworm's python3-distutils, which conflicts with Debian 13's python3; setup.sh makes the
# venv without ensurepip and bootstraps pip from Debian 13's python3-pip-whl instead.
#
#   sudo deploy/board-python.sh          (setup.sh --board runs it when the system Python is 3.13+)
#
# Instead of this, a Python 3.11/3.12 you bring (e.g. a standalone build unpacked to /opt) works too:
#   PYTHON=/opt/python3.12/bin/python3.12 ./setup.sh --board ...
set -euo pipefail
source "$(dirname "$0")/detect.sh"
die() { echo "board-python: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (it adds an apt source): sudo $0"
mirror=${TINGSHUO_DEBIAN_MIRROR:-$(debian_mirror)}
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*: set TINGSHUO_DEBIAN_MIRROR"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "$keyring is missing: apt-get install debian-archive-keyring"
cat >/etc/apt/sources.list.d/tingshuo-bookworm.sources <<SOURCES
# Added by Tingshuo's deploy/board-python.sh: Python 3.11 for rknn-toolkit-lite2 (pinned low in
# /etc/apt/preferences.d/tingshuo-bookworm). Remove both files to undo.
Types: deb
URIs: $mirror
Suites: bookworm
Components: main
Signed-By: $keyring
SOURCES
cat >/etc/apt/preferences.d/tingshuo-bookworm <<PIN
# Added by Tingshuo's deploy/board-python.sh: only what Debian 13 lacks comes from Debian 12.
Package: *
Pin: release n=bookworm
Pin-Priority: 100
PIN
echo "board-python: installing python3.11 from Debian 12 beside the system Python"
apt-get update -qq || die "apt-get update failed"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 python3.11-dev python3-pip-whl >/dev/null ||
    die "apt-get install python3.11 python3.11-dev (from bookworm) python3-pip-whl failed"
python3.11 -c 'import ssl, sqlite3, ctypes, venv' || die "python3.11 is installed but broken (ssl, sqlite3, ctypes or venv)"
echo "board-python: $(python3.11 --version) at $(command -v python3.11)"
