#!/usr/bin/env bash
# Builds Dataflux and runs every test:
#   1. the full build (torch layer included) and all its tests, Google's gcloud CLI against
#      our emulator included (skipped, visibly, where gcloud is absent);
#   2. every test again under AddressSanitizer + UndefinedBehaviorSanitizer, the torch layer
#      (datasets, checkpoints, the chaos test) included;
#   3. the pools, the transport, the concurrent engine and read-path tests and the `dataflux`
#      command (core_tests, http_tests, engine_tests, store_tests, cli_tests: the program it
#      runs is instrumented too) under ThreadSanitizer, only those binaries built;
#   4. `cmake --install`, then the demo built as a separate project against the install tree.
# Ends with one line "tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh || exit 1
BUILD_DIR=${BUILD_DIR:-build}
ASAN_DIR=${ASAN_DIR:-build-asan}
TSAN_DIR=${TSAN_DIR:-build-tsan}
passed=0
failed=0

# run_ctest DIR: runs the tests of DIR and adds them to the totals.
run_ctest() {
  local log
  log=$(mktemp)
  (cd "$1" && ctest -j2 --output-on-failure --timeout 600) 2>&1 | tee "$log"
  local line total bad
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    echo "test.sh: no ctest summary from $1"
  else
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    bad=$(sed -E 's/.* ([0-9]+) tests failed.*/\1/' <<<"$line")
    passed=$((passed + total - bad))
    failed=$((failed + bad))
  fi
  rm -f "$log"
}

# run_gtest BINARY: runs one gtest binary and adds its test counts to the totals.
run_gtest() {
  local log ok bad
  log=$(mktemp)
  local rc
  "$1" --gtest_brief=1 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  ok=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\.$/\1/p' "$log" | tail -1)
  # --gtest_brief prints each failure as "[  FAILED  ] Suite.Name (N ms)" and no "listed below"
  # summary, so failures are counted from those lines (and a failing exit counts at least one).
  bad=$(grep -cE '^\[  FAILED  \] [^ ]+.* \([0-9]+ ms\)$' "$log" || true)
  if [ "$rc" -ne 0 ] && [ "${bad:-0}" -eq 0 ]; then bad=1; fi
  [ "${bad:-0}" -eq 0 ] && bad=""
  if [ -z "$ok" ] && [ -z "$bad" ]; then
    failed=$((failed + 1))
    echo "test.sh: no gtest summary from $1"
  else
    passed=$((passed + ${ok:-0}))
    failed=$((failed + ${bad:-0}))
  fi
  if grep -q "WARNING: ThreadSanitizer" "$log"; then
    failed=$((failed + 1))
    echo "test.sh: ThreadSanitizer reported a race in $1"
  fi
  rm -f "$log"
}

step() { echo; echo "=== $* ==="; }

step "build (Release, with libtorch)"
if cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
   cmake --build "$BUILD_DIR" -j2; then
  step "tests"
  run_ctest "$BUILD_DIR"
else
  echo "test.sh: the build failed"; failed=$((failed + 1))
fi

step "all tests under ASan + UBSan, the torch layer included"
if cmake -S . -B "$ASAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDATAFLUX_WITH_TORCH=ON \
         -DDATAFLUX_BUILD_BENCH=OFF -DDATAFLUX_SANITIZE=ON >/dev/null &&
   cmake --build "$ASAN_DIR" -j2; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 run_ctest "$ASAN_DIR"
else
  echo "test.sh: the sanitizer build failed"; failed=$((failed + 1))
fi

step "pools, transport, engine, read-path, command and shard tests under ThreadSanitizer"
if cmake -S . -B "$TSAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDATAFLUX_WITH_TORCH=OFF \
         -DDATAFLUX_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
         -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null &&
   cmake --build "$TSAN_DIR" -j2 --target core_tests http_tests engine_tests store_tests cli_tests shards_tests; then
  for t in core_tests http_tests engine_tests store_tests cli_tests shards_tests; do
    TSAN_OPTIONS="halt_on_error=0 suppressions=$PWD/tools/tsan.supp" run_gtest "$TSAN_DIR/tests/$t"
  done
else
  echo "test.sh: the ThreadSanitizer build failed"; failed=$((failed + 1))
fi

step "install, and build the demo against the install tree"
prefix=$(mktemp -d)
if cmake --install "$BUILD_DIR" --prefix "$prefix" >/dev/null &&
   cmake -S examples -B "$prefix/examples-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null &&
   cmake --build "$prefix/examples-build" -j2 >/dev/null &&
   "$prefix/examples-build/dataflux_train_demo" >/dev/null; then
  echo "installed package: find_package(Dataflux) + Dataflux::dataflux build and run OK"
  passed=$((passed + 1))
else
  echo "test.sh: building or running the demo against the installed package failed"
  failed=$((failed + 1))
fi
rm -rf "$prefix"

echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
