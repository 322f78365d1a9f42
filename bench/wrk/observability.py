#!/usr/bin/env python3
"""What metrics and per-request logging cost on the hot path, measured with wrk.

Runs the release `frontrow serve` (embedded defaults, loopback only) once per variant and round,
each on a fresh data directory, and measures with wrk (2 threads, 64 connections, the same
2-core machine as the server): GET /health, then 2-seat explicit reserves on a 200,000-seat
event from 2,000 customers (bench/wrk/reserve.lua). Variants:

  off      FRONTROW_LOG=warn, FRONTROW_METRICS=false  (no request log line, no recorder)
  metrics  FRONTROW_LOG=warn, metrics on
  full     FRONTROW_LOG=info, metrics on               (the defaults: a log line per request)
  same-priority  the defaults, but the projections at the request path's priority
                 (FRONTROW_PROJECTIONS_NICE=0; the defaults run them 10 nice steps lower)

Rounds interleave the variants (and the binaries) so drift on a shared machine hits each alike.
Each reserve phase also reports the CPU the node's SQLite ledger threads (`ledger-sqlite-*`) and
request runtime (`tokio-rt-worker`) spent in it, from /proc (Linux), per hold and per request.
Usage: bench/wrk/observability.py [--bin target/release/frontrow ...] [--variants off,metrics,full]
                                  [--rounds 2] [--secs 10] [--conns 64]
Name --bin more than once to compare builds, e.g. the release and dist profiles:
  bench/wrk/observability.py --bin target/release/frontrow --bin target/dist/frontrow --variants full
"""
import argparse, json, os, re, subprocess, tempfile, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = {
    "off": {"FRONTROW_LOG": "warn", "FRONTROW_METRICS": "false"},
    "metrics": {"FRONTROW_LOG": "warn", "FRONTROW_METRICS": "true"},
    "full": {"FRONTROW_LOG": "info", "FRONTROW_METRICS": "true"},
    "same-priority": {"FRONTROW_LOG": "info", "FRONTROW_METRICS": "true", "FRONTROW_PROJECTIONS_NICE": "0"},
}
ROWS, SEATS, CUSTOMERS = 400, 500, 2000


def post(url, body, headers):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.load(res)


def start(binary, data_dir, env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTROW_")}
    full_env.update({
        "FRONTROW_SAMPLE_EVENT": "false",
        "FRONTROW_LIMITS__CUSTOMER_PER_SECOND": "0",
        "FRONTROW_LIMITS__ADDRESS_PER_SECOND": "0",
        **env,
    })
    server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir],
                              env=full_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    base = key = None
    for line in server.stdout:
        if m := re.match(r"FrontRow listening on (\S+)", line):
            base = m.group(1)
        if m := re.search(r"\(X-Api-Key\): (\S+)", line):
            key = m.group(1)
        if "API description" in line:
            break
    return server, base, key


def event(base, key):
    body = {
        "title": "wrk", "artist": "wrk", "venue": "Hall", "city": "Here",
        "starts_at": "2099-01-01T20:00:00Z", "onsale_at": "2020-01-01T00:00:00Z",
        "hold_minutes": 15, "max_seats_per_order": 2, "max_seats_per_customer": 1000, "currency": "EUR",
        "seat_map": {"tiers": [{"code": "STD", "name": "Standard", "price": 5000}],
                     "sections": [{"code": "S", "name": "Stalls",
                                   "rows": [{"name": str(r), "seats": SEATS, "tier": "STD"} for r in range(1, ROWS + 1)]}]},
    }
    return post(f"{base}/events", body, {"x-api-key": key})["event_id"]


def wrk(args, env=None, conns=64):
    out = subprocess.run(["wrk", "-t2", f"-c{conns}", "--latency", *args], capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", out)) else 0
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    return {"rate": rate, "ok_share": (total - non2xx) / total, "p99_ms": float(p99.group(1)) * scale}


def onsale(binary, data_dir, env):
    """A fresh server on `data_dir` with the event and CUSTOMERS tokens in a file: the server,
    its address, and the arguments and environment of wrk's reserves against it."""
    server, base, key = start(binary, data_dir, env)
    try:
        event_id = event(base, key)
        tokens = os.path.join(data_dir, "tokens.txt")
        with open(tokens, "w") as f:
            for i in range(CUSTOMERS):
                f.write(post(f"{base}/demo/tokens", {"customer": f"fan{i}"}, {})["token"] + "\n")
    except BaseException:
        stop(server)
        raise
    reserve_env = {"FRONTROW_WRK_EVENT": event_id, "FRONTROW_WRK_TOKENS": tokens,
                   "FRONTROW_WRK_ROWS": str(ROWS), "FRONTROW_WRK_SEATS": str(SEATS)}
    return server, base, ["-s", os.path.join(HERE, "reserve.lua"), base], reserve_env


def thread_cpu(pid):
    """CPU seconds by thread name (digits and dashes at the end dropped) of process `pid`."""
    seconds = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")].rstrip("0123456789-")
        fields = stat[stat.rindex(")") + 2:].split()
        seconds[name] = seconds.get(name, 0) + (int(fields[11]) + int(fields[12])) / tick
    return seconds


def stop(server):
    server.terminate()
    server.wait(timeout=60)


def run(binary, variant, secs, conns):
    with tempfile.TemporaryDirectory() as data_dir:
        server, base, reserve_args, reserve_env = onsale(binary, data_dir, VARIANTS[variant])
        try:
            health = wrk([f"-d{secs}s", f"{base}/health"], conns=conns)
            before = thread_cpu(server.pid)
            reserve = wrk([f"-d{secs}s", *reserve_args], reserve_env, conns)
            after = thread_cpu(server.pid)
            spent = {k: v - before.get(k, 0) for k, v in after.items()}
            requests = reserve["rate"] * secs
            reserve["ledger_us_per_hold"] = spent.get("ledger-sqlite", 0) / max(requests * reserve["ok_share"], 1) * 1e6
            reserve["workers_us_per_request"] = spent.get("tokio-rt-worker", 0) / max(requests, 1) * 1e6
            return health, reserve
        finally:
            stop(server)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", action="append", help="a frontrow binary; repeat to compare builds")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of " + ", ".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--secs", type=int, default=10)
    parser.add_argument("--conns", type=int, default=64, help="wrk's connections")
    args = parser.parse_args()
    binaries = args.bin or ["target/release/frontrow"]
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}")
    for binary in binaries:
        print(f"{binary}: {os.path.getsize(binary):,} bytes")
    print("| round | binary | variant | /health req/s | reserve req/s | reserve 201 share | reserve p99 ms | "
          "reserve / health | ledger µs CPU / hold | request runtime µs CPU / request |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for round_ in range(1, args.rounds + 1):
        for binary in binaries:
            for variant in variants:
                health, reserve = run(binary, variant, args.secs, args.conns)
                print(f"| {round_} | {binary} | {variant} | {health['rate']:,.0f} | {reserve['rate']:,.0f} | "
                      f"{reserve['ok_share']:.2f} | {reserve['p99_ms']:.1f} | "
                      f"{reserve['rate'] / health['rate']:.3f} | {reserve['ledger_us_per_hold']:.0f} | "
                      f"{reserve['workers_us_per_request']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
