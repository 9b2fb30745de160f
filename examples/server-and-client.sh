#!/bin/bash
# server-and-client.sh: a web server as a background process, and a client in another session.
#
# Session `srv` starts `python3 -m http.server 0` (any free port) as the background process
# `web`. `cat ready` blocks until the server's process tree listens on a TCP port and prints
# that port (or ends empty if the server died first). A foreground command in session `cli`
# then fetches a page from it: all sessions share the sandbox's localhost. At the end the
# server is stopped with `echo kill > ctl`, its exit and status are shown, and both sessions
# are removed (which would also have killed the server). Exits nonzero if anything fails.
#
# usage: examples/server-and-client.sh [MOUNTPOINT]   (default /mnt/sbx; sbxfs must be mounted)
set -euo pipefail

mnt=${1:-/mnt/sbx}
[ -d "$mnt/sessions" ] || { echo "no sbxfs mount at $mnt" >&2; exit 1; }

srv=$mnt/sessions/srv
cli=$mnt/sessions/cli
web=$srv/procs/web

mkdir "$srv"
mkdir "$cli" || { rmdir "$srv"; exit 1; }
cleanup() {
	rmdir "$cli" "$srv" 2>/dev/null || true
}
trap cleanup EXIT

# A page to serve, written by a command (the server serves its session's cwd, the workspace).
echo 'echo "hello from the sandbox" > index.html' > "$srv/cmd"
[ "$(cat "$srv/exit")" = 0 ] || { echo "could not write index.html" >&2; exit 1; }

# Port 0: the server takes any free port, and `ready` says which.
mkdir "$web"
echo 'python3 -m http.server 0 --bind 127.0.0.1' > "$web/cmd"
port=$(timeout 30 cat "$web/ready") || true
if [ -z "$port" ]; then
	echo "the server did not start listening; its status and stderr:" >&2
	cat "$web/status" "$web/stderr" >&2 || true
	exit 1
fi
echo "server listening on port $port (ports: $(paste -sd, "$web/ports"))"

# The client: curl is not in the sandbox, python3 is.
cat > "$cli/cmd" <<EOF
python3 - <<'PY'
import urllib.request
r = urllib.request.urlopen("http://127.0.0.1:$port/index.html", timeout=10)
print("HTTP", r.status)
print(r.read().decode(), end="")
PY
EOF
echo "--- client output:"
cat "$cli/stdout"
status=$(cat "$cli/exit")
echo "--- client exit: $status"
[ "$status" = 0 ] || { cat "$cli/stderr" >&2; exit 1; }

echo kill > "$web/ctl"                 # TERM to its tree, KILL after [session] kill_grace_ms
echo "--- server exit: $(cat "$web/exit")"   # 143: 128 + SIGTERM
echo "--- server log (its stderr):"
cat "$web/stderr"
echo "--- server status:"
cat "$web/status"
grep -qx 'state killed' "$web/status"
