#!/usr/bin/python3
"""bench_clients.py: what the clients add to one exec.

Mounts a fresh sbxfs (binary: $SBXFS_BIN, else build/sbxfs of this checkout) and times
`exec('true')` with its whole result, three ways, in alternating rounds on one session:

  raw     the files by hand: open cmd O_RDWR, write `true`, read N, read runs/N/result to EOF,
          json.loads (plain os calls from Python);
  python  session.exec('true') of clients/python (sbxfs);
  node    session.exec('true') of clients/node, from one node process that runs its rounds
          when told and reports each exec's time.

Prints median and p90 of each and the ratios to raw. Unmounts at the end.

usage: tests/bench/bench_clients.py [--runs N] [--rounds N]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "clients" / "python"))
from benchutil import Mount, med_p90, sbxfs_binary, start_watchdog  # noqa: E402

import sbxfs  # noqa: E402

WATCHDOG_SECONDS = 300

NODE_DRIVER = """
import { getSandbox } from %s;
import { createInterface } from 'node:readline';
const s = await getSandbox(process.argv[2]).getSession('bench');
for await (const line of createInterface({ input: process.stdin })) {
	const times = [];
	for (let i = 0; i < Number(line); i++) {
		const t0 = process.hrtime.bigint();
		await s.exec('true');
		times.push(Number(process.hrtime.bigint() - t0) / 1e6);
	}
	process.stdout.write(JSON.stringify(times) + '\\n');
}
"""


def raw_exec(sdir):
    fd = os.open(f"{sdir}/cmd", os.O_RDWR)
    try:
        os.write(fd, b"true")
        n = int(os.read(fd, 64))
    finally:
        os.close(fd)
    fd = os.open(f"{sdir}/runs/{n}/result", os.O_RDONLY)
    try:
        data = b""
        while chunk := os.read(fd, 65536):
            data += chunk
    finally:
        os.close(fd)
    return json.loads(data)


def timed(fn, runs):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100, help="execs per way and round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    m = Mount(sbxfs_binary())
    timer = start_watchdog(WATCHDOG_SECONDS, m.proc)
    node = None
    try:
        sandbox = sbxfs.get_sandbox(m.mnt)
        session = sandbox.create_session(id="bench")
        sdir = m.mnt / "sessions" / "bench"
        index = json.dumps((REPO / "clients" / "node" / "index.js").as_uri())
        node = subprocess.Popen(["node", "--input-type=module", "-e", NODE_DRIVER % index,
                                 "-", str(m.mnt)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)

        def node_round(runs):
            node.stdin.write(f"{runs}\n")
            node.stdin.flush()
            return json.loads(node.stdout.readline())

        times = {"raw": [], "python": [], "node": []}
        for fn in (lambda r: timed(lambda: raw_exec(sdir), r),
                   lambda r: timed(lambda: session.exec("true"), r), node_round):
            fn(20)  # warm-up
        for _ in range(args.rounds):
            times["raw"] += timed(lambda: raw_exec(sdir), args.runs)
            times["python"] += timed(lambda: session.exec("true"), args.runs)
            times["node"] += node_round(args.runs)
        raw_med, _ = med_p90(times["raw"])
        print(f"exec('true') with its result, {args.rounds} x {args.runs} runs each "
              f"(median / p90 ms, ratio of medians to raw):")
        for way, values in times.items():
            med, p90 = med_p90(values)
            print(f"  {way:7s} {med:7.3f} / {p90:7.3f}   {med / raw_med:5.2f}x")
    finally:
        if node is not None:
            node.stdin.close()
            node.wait(10)
        timer.cancel()
        m.close()


if __name__ == "__main__":
    main()
