#!/usr/bin/env bash
# Google's own CLI (`gcloud storage`) against dataflux-emulator: bucket create, cp up and
# down (small and 40 MiB, resumable), ls, du, objects compose, rm; cp -r of a tree (spaces
# and non-ASCII names) up and down, rsync both ways (changes and deletions), du and rm -r of
# a prefix; bytes checked with cmp and diff -r.
# Usage: gcloud_cli_test.sh PATH/TO/dataflux-emulator. Exits 77 (skipped) without gcloud.
set -euo pipefail

emulator="${1:?usage: $0 PATH/TO/dataflux-emulator}"
if ! command -v gcloud >/dev/null 2>&1; then
  echo "SKIPPED: gcloud not found"
  exit 77
fi

work="$(mktemp -d)"
emulator_pid=""
cleanup() {
  if [[ -n "$emulator_pid" ]]; then kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- emulator stderr ---" >&2
  cat "$work/emulator.err" >&2 || true
  exit 1
}

"$emulator" --port 0 >"$work/emulator.out" 2>"$work/emulator.err" &
emulator_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(head -n 1 "$work/emulator.out" 2>/dev/null || true)"
  [[ -n "$url" ]] && break
  kill -0 "$emulator_pid" 2>/dev/null || fail "emulator exited early"
  sleep 0.1
done
[[ "$url" == http://127.0.0.1:* ]] || fail "no URL from the emulator (got '$url')"
echo "emulator at $url"

# A throwaway gcloud configuration that never reaches the network.
export CLOUDSDK_CONFIG="$work/gcloud-config"
mkdir -p "$CLOUDSDK_CONFIG"
export CLOUDSDK_CORE_DISABLE_PROMPTS=1
gc() { timeout 120 gcloud --quiet "$@"; }
gc config set core/project test-project >/dev/null 2>&1
gc config set core/disable_usage_reporting true >/dev/null 2>&1
gc config set component_manager/disable_update_check true >/dev/null 2>&1
gc config set survey/disable_prompts true >/dev/null 2>&1
gc config set auth/disable_credentials true >/dev/null 2>&1
gc config set api_endpoint_overrides/storage "$url/" >/dev/null 2>&1
gc config set storage/parallel_composite_upload_enabled false >/dev/null 2>&1

bucket="gs://gcloud-interop"
gc storage buckets create "$bucket" || fail "buckets create"

# Small and large (above the resumable threshold) files, random bytes.
head -c 1234 /dev/urandom >"$work/small.bin"
head -c $((40 * 1024 * 1024)) /dev/urandom >"$work/large.bin"
gc storage cp "$work/small.bin" "$bucket/dir/small.bin" || fail "cp small up"
gc storage cp "$work/large.bin" "$bucket/dir/large.bin" || fail "cp large up"
gc storage cp "$bucket/dir/small.bin" "$work/small.down" || fail "cp small down"
gc storage cp "$bucket/dir/large.bin" "$work/large.down" || fail "cp large down"
cmp "$work/small.bin" "$work/small.down" || fail "small bytes differ"
cmp "$work/large.bin" "$work/large.down" || fail "large bytes differ"

listing="$(gc storage ls "$bucket/dir/")" || fail "ls"
echo "$listing"
grep -q "dir/small.bin" <<<"$listing" || fail "ls misses small.bin"
grep -q "dir/large.bin" <<<"$listing" || fail "ls misses large.bin"

usage="$(gc storage du -s "$bucket")" || fail "du"
echo "$usage"
expected=$((1234 + 40 * 1024 * 1024))
[[ "$(awk '{print $1}' <<<"$usage")" == "$expected" ]] || fail "du says '$usage', want $expected"

gc storage objects compose "$bucket/dir/small.bin" "$bucket/dir/small.bin" "$bucket/twice.bin" \
  || fail "objects compose"
gc storage cp "$bucket/twice.bin" "$work/twice.down" || fail "cp composed down"
cat "$work/small.bin" "$work/small.bin" >"$work/twice.expected"
cmp "$work/twice.expected" "$work/twice.down" || fail "composed bytes differ"

# A tree: nested directories, a name with a space, a non-ASCII name.
mkdir -p "$work/tree/sub/deeper" "$work/tree/with space"
printf 'one' >"$work/tree/a.txt"
printf 'two two' >"$work/tree/sub/b.txt"
head -c 3000 /dev/urandom >"$work/tree/sub/deeper/c.bin"
printf 'ü' >"$work/tree/with space/ünïcode.txt"
gc storage cp -r "$work/tree" "$bucket/up/" || fail "cp -r up"
mkdir "$work/down"
gc storage cp -r "$bucket/up/tree" "$work/down/" || fail "cp -r down"
diff -r "$work/tree" "$work/down/tree" || fail "cp -r round trip differs"
tree_bytes=$((3 + 7 + 3000 + 2))
usage="$(gc storage du -s "$bucket/up/")" || fail "du -s of a prefix"
[[ "$(awk '{print $1}' <<<"$usage")" == "$tree_bytes" ]] || fail "du -s says '$usage', want $tree_bytes"

# rsync up, change and delete locally, rsync again with deletions, then rsync down.
gc storage rsync -r "$work/tree" "$bucket/sync" || fail "rsync up"
printf 'changed' >"$work/tree/a.txt"
rm "$work/tree/sub/b.txt"
gc storage rsync -r --delete-unmatched-destination-objects "$work/tree" "$bucket/sync" \
  || fail "rsync up with deletions"
gc storage rsync -r "$bucket/sync" "$work/synced" || fail "rsync down"
diff -r "$work/tree" "$work/synced" || fail "rsync round trip differs"

gc storage rm -r "$bucket/up" "$bucket/sync" || fail "rm -r"
left="$(gc storage ls -r "$bucket/up/**" "$bucket/sync/**" 2>&1 || true)"
grep -q "^gs://" <<<"$left" && fail "rm -r left objects: $left"

gc storage rm "$bucket/dir/small.bin" "$bucket/dir/large.bin" "$bucket/twice.bin" || fail "rm"
remaining="$(gc storage ls "$bucket" 2>&1 || true)"
[[ -z "$(grep -E 'small|large|twice' <<<"$remaining" || true)" ]] || fail "objects left: $remaining"
gc storage buckets delete "$bucket" || fail "buckets delete"

if grep -q "no route" "$work/emulator.err"; then
  fail "gcloud used routes the emulator does not serve"
fi
echo "PASS: gcloud storage works against dataflux-emulator"
