#!/usr/bin/env bash
# Our S3 integration tests against s3rver (npm), a third-party S3 server. tools/deps.sh
# installs it under build-deps/node; exit 77 (skipped) where it or node is missing.
#   usage: s3rver_test.sh SOURCE_DIR PATH/TO/s3_tests
set -euo pipefail
source_dir=$1
s3_tests=$2
s3rver="$source_dir/build-deps/node/node_modules/.bin/s3rver"
if ! command -v node >/dev/null || [ ! -x "$s3rver" ]; then
  echo "SKIPPED: s3rver is not installed (tools/deps.sh installs it with npm into build-deps/node)"
  exit 77
fi
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# s3rver's continuation tokens use DES, which Node's OpenSSL 3 keeps in its legacy provider.
NODE_OPTIONS=--openssl-legacy-provider "$s3rver" -d "$work/data" -a 127.0.0.1 -p "$port" --no-vhost-buckets --silent > "$work/log" 2>&1 &
pid=$!
for _ in $(seq 200); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.05
done
# s3rver verifies SigV4 signatures made with its fixed S3RVER/S3RVER key pair.
DATAFLUX_S3_TEST_ENDPOINT="http://127.0.0.1:$port" DATAFLUX_S3_TEST_ACCESS_KEY_ID=S3RVER \
DATAFLUX_S3_TEST_SECRET_ACCESS_KEY=S3RVER "$s3_tests" --gtest_filter='S3StoreTest.*' --gtest_brief=1
