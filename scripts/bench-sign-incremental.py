#!/usr/bin/env python3
"""One record changed in a large signed zone: how soon is the new version served?

Issue 24's goal: in a signed zone of 1,000,000 A records (NSEC, one ECDSA P-256 CSK,
tern's default policy) one record changes; the new signed version is served within
100 ms of the reload. This script measures it on this machine:

1. writes the zone `big.` with scripts/gen-bench-zone.py (RECORDS A records h0 .. hN-1,
   plus SOA and NS; not a committed file), starts tern with it under a `dnssec-policy`
   and times the start (the zone signed whole) with its peak memory;
2. ROUNDS times: changes the file (by default h7's address; `--changes` cycles through
   kinds of change, one a round: `address`, `add` a name `new{round}` A record after
   h7, `remove` the names added before, `last` the last name's address), runs
   `tern reload big.` and polls
   the SOA over UDP (every 2 ms) until the next serial is served: the time from the
   command to that answer is the figure, with the CPU time tern used meanwhile (from
   /proc: comparable on a busy machine); tern's log gives the signatures made and kept
   and the signing's own time.

Usage (from the repository root; loopback only; starts and stops its tern; about 3 GiB
of memory and a few minutes at 1,000,000 records):

    cargo build --release --bin tern
    TERN_BIN=target/release/tern scripts/bench-sign-incremental.py [--records N] [--rounds N] \
        [--changes address,add,remove]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import dns.message
import dns.query
import dns.rdatatype

HERE = pathlib.Path(__file__).resolve().parent
START_TIMEOUT = 1800.0
RELOAD_TIMEOUT = 600.0
POLL = 0.002


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serial(port: int) -> int | None:
    query = dns.message.make_query("big.", "SOA")
    try:
        reply = dns.query.udp(query, "127.0.0.1", port=port, timeout=0.5)
    except Exception:  # noqa: BLE001 (not serving yet, or busy)
        return None
    return next((rdata.serial for rrset in reply.answer for rdata in rrset
                 if rrset.rdtype == dns.rdatatype.SOA), None)


def memory(pid: int) -> tuple[int, int]:
    """VmRSS and VmHWM of `pid`, in MiB."""
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    value = lambda key: int(re.search(rf"^{key}:\s+(\d+) kB", status, re.M).group(1)) // 1024
    return value("VmRSS"), value("VmHWM")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time `pid` has used, in seconds: what a round costs, whatever
    else the machine runs meanwhile."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--log-level", default="info",
                        help="tern's log level (debug says why a reload is not an edit of a few owners)")
    parser.add_argument("--changes", default="address",
                        help="comma-separated kinds of change, one a round, in turn: "
                             "address (h7's), add (a name), remove (the names added), "
                             "last (the last name's address)")
    args = parser.parse_args()
    kinds = args.changes.split(",")
    if not set(kinds) <= {"address", "add", "remove", "last"}:
        sys.exit(f"unknown kind of change in {args.changes!r}")
    binary = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
    with tempfile.TemporaryDirectory(prefix="tern-bench-sign-") as tmp:
        tmp = pathlib.Path(tmp)
        zone = tmp / "big.zone"
        subprocess.run([sys.executable, str(HERE / "gen-bench-zone.py"), "big", "--records",
                        str(args.records), "--zone", str(zone)], check=True,
                       stdout=subprocess.DEVNULL)
        text = zone.read_text()
        line = re.search(r"^h7 IN A (\S+)$", text, re.M)
        last_line = re.search(rf"^h{args.records - 1} IN A (\S+)$", text, re.M)
        port = free_port()
        sock = tmp / "tern.sock"
        config = tmp / "tern.yaml"
        config.write_text(f"""control-socket: {sock}
log-level: {args.log_level}
state-directory: {tmp}/state
dnssec:
  policies:
    - name: default
zones:
  list:
    - {{origin: big., file: {zone}, dnssec-policy: default}}
""")
        log = open(tmp / "tern.log", "w")
        started = time.monotonic()
        tern = subprocess.Popen([str(binary), "serve", "--listen", f"127.0.0.1:{port}",
                                 "--cores", "1", "--config", str(config)],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            while (current := serial(port)) is None:
                if tern.poll() is not None or time.monotonic() - started > START_TIMEOUT:
                    sys.exit(f"tern did not serve big.: {(tmp / 'tern.log').read_text()[-2000:]}")
                time.sleep(0.2)
            rss, peak = memory(tern.pid)
            print(f"start: {args.records} records signed whole and served in "
                  f"{time.monotonic() - started:.1f} s ({cpu_seconds(tern.pid):.1f} s of CPU); "
                  f"RSS {rss} MiB, peak {peak} MiB")
            times = []
            cpus = []
            address = line.group(1)
            last_address = last_line.group(1)
            added: list[str] = []
            for round_ in range(args.rounds):
                kind = kinds[round_ % len(kinds)]
                if kind == "address":
                    address = f"192.0.2.{100 + round_}"
                elif kind == "add":
                    added.append(f"new{round_} IN A 192.0.2.200")
                elif kind == "last":
                    last_address = f"192.0.2.{100 + round_}"
                else:
                    added = []
                zone.write_text(text.replace(
                    line.group(0), "\n".join([f"h7 IN A {address}", *added]), 1).replace(
                    last_line.group(0), f"h{args.records - 1} IN A {last_address}", 1))
                begun = time.monotonic()
                cpu = cpu_seconds(tern.pid)
                done = subprocess.run([str(binary), "reload", "--socket", str(sock), "big."],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"tern reload big.: {done.stdout} {done.stderr}")
                while serial(port) != current + 1:
                    if time.monotonic() - begun > RELOAD_TIMEOUT:
                        sys.exit("the new serial was not served")
                    time.sleep(POLL)
                took = time.monotonic() - begun
                cpu = cpu_seconds(tern.pid) - cpu
                current += 1
                times.append(took)
                cpus.append(cpu)
                signed = [l for l in (tmp / "tern.log").read_text().splitlines()
                          if "zone big.: signed," in l]
                loaded = [l for l in (tmp / "tern.log").read_text().splitlines()
                          if "zone big.: loaded:" in l]
                print(f"round {round_ + 1} ({kind}): serial {current} served {took * 1000:.0f} ms after "
                      f"tern reload, {cpu:.2f} s of tern's CPU ({signed[-1].split('signed, ')[-1] if signed else ''})")
                for phase in loaded[-1:]:
                    print(f"    {phase.split(': ', 1)[-1]}")
            rss, peak = memory(tern.pid)
            print(f"median {statistics.median(times) * 1000:.0f} ms, min "
                  f"{min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms over "
                  f"{len(times)} rounds (tern's CPU: median {statistics.median(cpus):.2f} s); "
                  f"RSS {rss} MiB, peak {peak} MiB; load average now "
                  f"{os.getloadavg()[0]:.1f}")
        finally:
            tern.send_signal(signal.SIGTERM)
            tern.wait(timeout=120)
            log.close()


if __name__ == "__main__":
    main()
