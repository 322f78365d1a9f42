#!/usr/bin/env python3
"""A CPU profile of the hot onsale: where a `serve` node's time goes under wrk's reserves.

Starts the release `frontrow serve` (embedded defaults, loopback only, the defaults' logging and
metrics) exactly as bench/wrk/observability.py does, creates its 200,000-seat event and 2,000
customers, then runs wrk's 2-seat explicit reserves (bench/wrk/reserve.lua, 2 threads, 64
connections) while `perf record` samples the server (199 Hz, DWARF call graphs). Writes, under
--out (default docs/flamegraphs):

  <name>.svg   the flamegraph (inferno-collapse-perf | inferno-flamegraph, frames under 0.5%
               of the samples left out)
  <name>.txt   the command, wrk's figures, the share of the samples under a few frames that
               tell the request path from the projections (perf report --children), and the flat
               profile: the symbols with the most samples of their own (--no-children)

Needs perf (Debian's linux-perf; kernel.perf_event_paranoid <= 1 or root), wrk and inferno
(`cargo install inferno`). Sampling costs the server CPU, so the rates it prints are lower than
observability.py's: read them as the load the profile was taken under, not as a benchmark.
Usage: bench/wrk/flamegraph.py --name before [--bin target/release/frontrow] [--secs 15]
"""
import argparse, os, re, shlex, subprocess, sys, tempfile

from observability import VARIANTS, onsale, stop, wrk


def profile(binary, secs, work):
    """Runs the reserves against a fresh server under perf; returns wrk's figures and perf's data file."""
    data_dir = os.path.join(work, "data")
    os.mkdir(data_dir)
    server, _, reserve_args, reserve_env = onsale(binary, data_dir, VARIANTS["full"])
    try:
        perf_data = os.path.join(work, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "199", "--call-graph", "dwarf,16384",
                                 "-p", str(server.pid), "-o", perf_data, "--", "sleep", str(secs)],
                                stderr=subprocess.DEVNULL)
        reserve = wrk([f"-d{secs}s", *reserve_args], reserve_env)
        perf.wait(timeout=secs + 120)
        return reserve, perf_data
    finally:
        stop(server)


def render(perf_data, svg, title):
    """perf script | inferno-collapse-perf | inferno-flamegraph > svg."""
    script = subprocess.Popen(["perf", "script", "-i", perf_data], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    collapse = subprocess.Popen(["inferno-collapse-perf"], stdin=script.stdout, stdout=subprocess.PIPE)
    with open(svg, "wb") as out:
        subprocess.run(["inferno-flamegraph", "--minwidth", "0.5", "--title", title],
                       stdin=collapse.stdout, stdout=out, check=True)
    collapse.wait()
    script.wait()


# Frames whose samples (with everything they call) say where a serve node's time goes.
FRAMES = {
    "HTTP connections (hyper, axum, the handlers)": "axum::serve::handle_connection::{{closure}}::{{closure}}",
    "SQLite execution (the ledger's and the journal's statements)": "sqlite3_step",
}


def shares(perf_data):
    """The share of all samples under each frame of FRAMES, and of each thread group by name."""
    out = subprocess.run(["perf", "report", "-i", perf_data, "--children", "--sort", "symbol", "--stdio",
                          "-g", "none"], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0].endswith("%"):
            # The symbol, without the columns perf pads after it.
            found.setdefault(re.split(r"\s{2,}", parts[3].strip())[0], parts[0])
    lines = [f"  {name}: {found.get(frame, '0%')}" for name, frame in FRAMES.items()]
    comms = subprocess.run(["perf", "report", "-i", perf_data, "--no-children", "--sort", "comm", "--stdio",
                            "-g", "none"], capture_output=True, text=True, check=True).stdout
    lines.append("  by thread name (perf report --sort comm):")
    lines += [f"    {line.strip()}" for line in comms.splitlines() if line.strip() and not line.startswith("#")][:12]
    return lines


def flat(perf_data, top):
    """The `top` symbols with the most samples of their own, as perf report prints them."""
    out = subprocess.run(["perf", "report", "-i", perf_data, "--no-children", "--sort", "symbol", "--stdio",
                          "-g", "none", "--percent-limit", "0.5"],
                         capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.splitlines() if line.strip() and not line.startswith("#")]
    return lines[:top]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True, help="the files' name, e.g. before or after")
    parser.add_argument("--bin", default="target/release/frontrow")
    parser.add_argument("--secs", type=int, default=15)
    parser.add_argument("--out", default="docs/flamegraphs")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        reserve, perf_data = profile(args.bin, args.secs, work)
        svg = os.path.join(args.out, f"{args.name}.svg")
        render(perf_data, svg, f"frontrow serve: 2-seat reserves under wrk ({args.name})")
        report = [
            f"command: bench/wrk/flamegraph.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}",
            f"wrk under perf: {reserve['rate']:,.0f} req/s, {reserve['ok_share']:.2f} answered 201, "
            f"p99 {reserve['p99_ms']:.1f} ms",
            "",
            "samples under (with what they call):",
            *shares(perf_data),
            "",
            "self time by symbol (perf report --no-children --sort symbol):",
            *flat(perf_data, args.top),
        ]
    with open(os.path.join(args.out, f"{args.name}.txt"), "w") as f:
        f.write("\n".join(report) + "\n")
    print("\n".join(report[:2]))
    print(f"wrote {svg}")


if __name__ == "__main__":
    main()
