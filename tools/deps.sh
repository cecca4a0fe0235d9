#!/usr/bin/env bash
# Installs what Dataflux needs to build and test, from Debian 12's packages (run as root, or
# with sudo available). Fast when everything is already there.
set -euo pipefail
packages=(cmake ninja-build g++ libtorch-dev libcurl4-openssl-dev libssl-dev libabsl-dev
          rapidjson-dev libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev
          python3-crc32c clang-format)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
