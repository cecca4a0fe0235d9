#!/usr/bin/env bash
# Builds Dataflux and runs the main demo: train a small CNN from objects on the embedded
# default (a local directory), checkpoint it to the store and restore it.
# Usage: tools/demo.sh [DATA_URL]    (default: a fresh temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j2 --target dataflux_train_demo
"$BUILD_DIR/examples/dataflux_train_demo" "$@"
