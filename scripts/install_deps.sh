#!/usr/bin/env bash
# Installs the Debian 12 packages gdp builds, tests and benchmarks with. Idempotent: skips
# apt-get when everything is already installed. Run as root (or with sudo available).
set -euo pipefail
pkgs=(build-essential cmake libeigen3-dev nlohmann-json3-dev catch2 libbenchmark-dev
      libmetis-dev libglpk-dev openmpi-bin libopenmpi-dev python3 python3-matplotlib python3-torch python3-numpy
      python3-dev pybind11-dev python3-torchvision libopenblas0-pthread clang-format)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
