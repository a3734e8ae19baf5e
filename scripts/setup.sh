#!/usr/bin/env bash
# Installs the Debian packages OptPipe builds with, if any are missing. Safe to run again: it
# does nothing when everything is there. Needs root or sudo only when something is missing.
# Arguments name more packages that a mode needs beyond these (scripts/fuzz.sh: clang and its
# libFuzzer and sanitizer runtimes).
set -euo pipefail

packages=(
  cmake make g++ pkg-config
  libtbb-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  coinor-cbc
  openmpi-bin libopenmpi-dev
  python3-dev python3-venv ninja-build
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup: error: missing packages (${missing[*]}) and neither root nor sudo to install them" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
