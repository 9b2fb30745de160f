#!/bin/bash
# contexts-plot.sh: a Python cell that plots, its figure read back as a PNG file.
#
# Makes a context with contexts/clone, defines data in a first cell and plots it in a second
# (a matplotlib figure left open by a cell is a PNG result, no plt.show() needed). The second
# cell's result is read (it blocks until the cell ends), then results/0.png, the figure
# decoded, is copied out. Removes the context at the end. Exits nonzero on any failure.
#
# usage: examples/contexts-plot.sh [MOUNTPOINT] [OUT.png]
#        (default /mnt/sbx and ./plot.png; sbxfs must be mounted)
set -euo pipefail

mnt=${1:-/mnt/sbx}
out=${2:-plot.png}
[ -d "$mnt/contexts" ] || { echo "no sbxfs mount at $mnt" >&2; exit 1; }

name=$(cat "$mnt/contexts/clone")
c=$mnt/contexts/$name
trap 'rmdir "$c"' EXIT
echo "context $name"

echo 'xs = list(range(20)); ys = [x * x for x in xs]' > "$c/code"
cat > "$c/code" <<'PY'
import matplotlib.pyplot as plt
plt.plot(xs, ys)
plt.title("x squared")
print("plotted", len(xs), "points")
PY

cat "$c/result" >/dev/null # waits for the cell's end
if [ -s "$c/error" ]; then
	cat "$c/error" >&2
	exit 1
fi
cat "$c/stdout"
ls "$c/results/"
cp "$c/results/0.png" "$out"
file "$out" 2>/dev/null || head -c 8 "$out" | od -c | head -1
echo "wrote $out"
