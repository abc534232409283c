#!/usr/bin/env bash
# Installs the Debian 12 packages gdp builds, tests and benchmarks with, then the project's
# Python virtual environment .venv (Debian's python3 with its site packages, so that it sees
# python3-torch and python3-numpy) with what Debian does not package: Gymnasium, for
# gdp.env and its tests (docs/python.md). Idempotent: skips apt-get when every package is
# installed and pip when .venv already has the pinned versions. Run as root (or with sudo).
# clang, libclang-rt-dev (libFuzzer's runtime, only recommended by clang) and libomp-dev
# (clang's OpenMP) build the fuzz targets (scripts/run_fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(build-essential cmake libeigen3-dev nlohmann-json3-dev catch2 libbenchmark-dev
      libmetis-dev libglpk-dev openmpi-bin libopenmpi-dev python3 python3-matplotlib python3-torch python3-numpy
      python3-dev pybind11-dev python3-torchvision python3-venv libopenblas0-pthread clang-format
      clang libclang-rt-dev libomp-dev)
# PyPI packages of .venv, pinned (a new release cannot change what the tests check).
venv_pkgs=(gymnasium==1.0.0)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all packages present"
else
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "install_deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# .venv: /usr/bin/python3 (the interpreter the bindings are built for) with the system's
# site packages; recreated when its interpreter no longer runs (a Python upgrade).
venv=.venv
check=""
for spec in "${venv_pkgs[@]}"; do
  check+="assert importlib.metadata.version('${spec%%==*}') == '${spec##*==}';"
done
if "$venv/bin/python" -c "import importlib.metadata; $check" >/dev/null 2>&1; then
  echo "install_deps: $venv has ${venv_pkgs[*]}"
  exit 0
fi
if ! "$venv/bin/python" -c "" >/dev/null 2>&1; then
  echo "install_deps: creating $venv (python3 -m venv --system-site-packages)"
  /usr/bin/python3 -m venv --clear --system-site-packages "$venv"
fi
echo "install_deps: installing ${venv_pkgs[*]} into $venv"
"$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check "${venv_pkgs[@]}"
