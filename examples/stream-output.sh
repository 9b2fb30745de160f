#!/bin/bash
# stream-output.sh: follow a command's output while it runs, with nothing but cat.
#
# Reading a session's stdout blocks at the end while the command runs and ends at EOF when the
# command ends, so a plain `cat stdout` streams it (no tail -f, no polling). Each line is
# stamped here with the second it arrived, to show it comes in live. Then `cat exit` gives the
# status. Uses a fresh session from sessions/clone and removes it at the end. Exits with the
# command's status (nonzero on any failure).
#
# usage: examples/stream-output.sh [MOUNTPOINT]     (default /mnt/sbx; sbxfs must be mounted)
set -euo pipefail

mnt=${1:-/mnt/sbx}
[ -d "$mnt/sessions" ] || { echo "no sbxfs mount at $mnt" >&2; exit 1; }

id=$(cat "$mnt/sessions/clone")
s=$mnt/sessions/$id
trap 'rmdir "$s"' EXIT
echo "session $id"

echo 'for i in 1 2 3 4 5; do echo "tick $i"; sleep 1; done; echo "all done"' > "$s/cmd"

start=$SECONDS
cat "$s/stdout" | while IFS= read -r line; do
	printf '[+%ss] %s\n' "$((SECONDS - start))" "$line"
done

status=$(cat "$s/exit")
echo "cat exit: $status"
exit "$status"
