#!/usr/bin/env bash
# Installs what Dataflux needs to build and test, from Debian 12's packages (run as root, or
# with sudo available). Fast when everything is already there.
set -euo pipefail
# Checked on a minimal Debian 12 (debootstrap --variant=minbase, ../shared/tools/fresh-debian):
# everything the build, the tests, the interop tests, the benchmarks' Python baseline and the
# install check use is named here, even what a developer's machine happens to have already.
packages=(cmake ninja-build g++ pkg-config libtorch-dev libcurl4-openssl-dev libssl-dev
          libabsl-dev rapidjson-dev libgtest-dev libgmock-dev libbenchmark-dev
          libcpp-httplib-dev libexpat1-dev libcli11-dev libarchive-dev
          libturbojpeg0-dev libpng-dev tar gzip zstd python3 python3-crc32c python3-boto3 python3-torch
          zlib1g-dev clang-format ca-certificates)
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

# s3rver (npm), the third-party S3 server tests/s3/s3rver_test.sh runs our S3 tests against.
# Best effort: without npm or the registry that test is skipped, visibly.
s3rver_prefix="$(dirname "$0")/../build-deps/node"
if [ ! -x "$s3rver_prefix/node_modules/.bin/s3rver" ]; then
  if ! command -v npm >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm ||
      echo "deps: npm unavailable; the s3rver interop test will be skipped"
  fi
  if command -v npm >/dev/null; then
    npm install --prefix "$s3rver_prefix" --no-audit --no-fund s3rver@3 >/dev/null ||
      echo "deps: npm install s3rver failed; the s3rver interop test will be skipped"
  fi
fi
