#!/bin/bash
# prod-and-test.sh: two sbxfs sessions side by side, driven only through their control files.
#
# Creates the sessions "prod" and "test". Each gets its own environment (NODE_ENV, set by
# writing the env file) and its own working directory (workspace/app-prod and
# workspace/app-test, entered by writing the cwd file). Then it runs the same small "build" in
# both at once, waits for both exit files, prints both outputs and statuses, and removes the
# sessions. Exits nonzero if anything fails.
#
# usage: examples/prod-and-test.sh [MOUNTPOINT]     (default /mnt/sbx; sbxfs must be mounted)
set -euo pipefail

mnt=${1:-/mnt/sbx}
sessions=$mnt/sessions
[ -d "$sessions" ] || { echo "no sbxfs mount at $mnt" >&2; exit 1; }

cleanup() {
	for s in prod test; do
		[ -d "$sessions/$s" ] && rmdir "$sessions/$s"
	done
	return 0
}
trap cleanup EXIT

# The "build": prints progress, writes an artifact into the session's cwd.
build='echo "building for NODE_ENV=$NODE_ENV in $PWD"
for step in 1 2 3 4 5; do
	echo "  step $step/5"
	sleep 0.3
done
printf "env=%s\n" "$NODE_ENV" > build.txt &&
echo "wrote build.txt"'

mkdir -p "$mnt/workspace/app-prod" "$mnt/workspace/app-test"
for s in prod test; do
	mkdir "$sessions/$s"
done
echo NODE_ENV=production > "$sessions/prod/env"
echo NODE_ENV=test > "$sessions/test/env"
# A new session starts in the workspace, so these relative paths are workspace/app-*.
echo app-prod > "$sessions/prod/cwd"
echo app-test > "$sessions/test/cwd"

# Writing cmd only queues the command: both builds run at the same time.
start=$(date +%s%N)
for s in prod test; do
	printf '%s\n' "$build" > "$sessions/$s/cmd"
done
prod_exit=$(cat "$sessions/prod/exit")
test_exit=$(cat "$sessions/test/exit")
ms=$((($(date +%s%N) - start) / 1000000))
echo "both builds done in ${ms} ms (each takes about 1500 ms: they ran in parallel)"

rc=0
for s in prod test; do
	echo "== $s (cwd $(cat "$sessions/$s/cwd"))"
	cat "$sessions/$s/stdout"
	cat "$sessions/$s/stderr" >&2
	status=$(cat "$sessions/$s/exit")
	echo "exit status: $status"
	[ "$status" = 0 ] || rc=1
done

# Check the artifacts through the mount's workspace view.
grep -qx 'env=production' "$mnt/workspace/app-prod/build.txt" || { echo "bad prod artifact" >&2; rc=1; }
grep -qx 'env=test' "$mnt/workspace/app-test/build.txt" || { echo "bad test artifact" >&2; rc=1; }
[ "$prod_exit" = 0 ] && [ "$test_exit" = 0 ] || rc=1

cleanup
trap - EXIT
[ "$rc" = 0 ] && echo OK || echo FAILED >&2
exit "$rc"
