#!/bin/bash
# handles.sh: run commands through run handles and get each one's own output, however many are
# submitted at once.
#
# Opening cmd read-write (`exec 3<>cmd`), writing a command and reading from the same descriptor
# submits it and reads back its run number: runs/N/ is then that command's, whatever else the
# session runs. Here three commands go into one session from three background jobs at once;
# each prints its own runs/N/output (stdout and stderr as they came) and the exit code from
# runs/N/result. Uses a fresh session from sessions/clone and removes it at the end.
#
# usage: examples/handles.sh [MOUNTPOINT]     (default /mnt/sbx; sbxfs must be mounted)
set -euo pipefail

mnt=${1:-/mnt/sbx}
[ -d "$mnt/sessions" ] || { echo "no sbxfs mount at $mnt" >&2; exit 1; }

id=$(cat "$mnt/sessions/clone")
s=$mnt/sessions/$id
trap 'rmdir "$s"' EXIT
echo "session $id"

# run CMD: submits CMD through a handle and prints its run number
run() {
	local n
	exec 3<>"$s/cmd"
	printf '%s' "$1" >&3
	read -r n <&3
	exec 3>&-
	echo "$n"
}

for word in alpha beta gamma; do
	(
		n=$(run "echo $word; echo $word-warning >&2; exit ${#word}")
		out=$(cat "$s/runs/$n/output")
		code=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["exitCode"])' \
			<"$s/runs/$n/result")
		printf 'run %s: %s (exit %s)\n' "$n" "$(echo $out)" "$code"
	) &
done
wait
