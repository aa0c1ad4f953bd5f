#!/usr/bin/env bash
# scripts/setup.sh — installs every Debian package the attn-opt build and its tests need.
# A no-op (no apt call at all) when everything is already installed. Safe to run as root on a fresh
# Debian 12 machine; uses sudo when not root and sudo exists.
set -euo pipefail

PKGS=(
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 libclang-rt-22-dev
  ninja-build cmake g++ python3 python3-venv python3-pip
  libgtest-dev libcli11-dev nlohmann-json3-dev
  qemu-user g++-aarch64-linux-gnu libopenblas-dev
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO=sudo || { echo "setup: need root to install: ${missing[*]}" >&2; exit 1; }
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
