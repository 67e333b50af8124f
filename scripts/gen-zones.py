#!/usr/bin/env python3
"""Writes COUNT small zone files into DIR, as a hosting provider's server holds them.

    scripts/gen-zones.py DIR COUNT [--knot FILE] [--nsd FILE] [--port P] [--state DIR]
                         [--workers N]

Each zone `zN.example.` (N from 0) has seven records: SOA, two NS (the
provider's name servers, outside the zone), an A and an AAAA at the apex,
`www` as a CNAME to the apex and an MX: what a small hosted domain holds. The
file is `DIR/zN.example.zone`, so `tern serve --zones DIR` serves them all.
With --knot/--nsd, also writes a configuration that lists every zone for that
server (Knot and NSD need each zone named; tern reads the directory), for
Debian's knot 3.2 and nsd 4.6: listening on 127.0.0.1@PORT, N workers (Knot's
udp-, tcp- and background-workers, NSD's server-count), their state (pid
file, control socket `knot.sock` / `nsd.ctl`, Knot's databases, NSD's xfrd
files) in --state, logging notices only (Knot's info level writes two lines per
zone loaded), NSD without response rate limiting and running as the user that
starts it. Used by scripts/bench-zones.sh.
"""
import argparse
import os

ZONE = """$TTL 3600
@ IN SOA ns1.example.net. hostmaster.{origin} {serial} 3600 900 604800 300
@ IN NS ns1.example.net.
@ IN NS ns2.example.net.
@ IN A 192.0.2.{a}
@ IN AAAA 2001:db8::{a:x}
www IN CNAME @
@ IN MX 10 mail.example.net.
"""


def origin(index):
    return f"z{index}.example."


def write_zone(directory, index, serial=1):
    name = origin(index)
    path = os.path.join(directory, f"{name[:-1]}.zone")
    with open(path, "w") as out:
        out.write(ZONE.format(origin=name, serial=serial, a=index % 250 + 1))
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("count", type=int)
    parser.add_argument("--knot", help="write a knot.conf listing the zones")
    parser.add_argument("--nsd", help="write an nsd.conf listing the zones")
    parser.add_argument("--port", type=int, default=5300)
    parser.add_argument("--state", default="/tmp", help="Knot's and NSD's storage directory")
    parser.add_argument("--workers", type=int, default=1, help="Knot's and NSD's worker threads or processes")
    args = parser.parse_args()
    os.makedirs(args.directory, exist_ok=True)
    directory = os.path.abspath(args.directory)
    for index in range(args.count):
        write_zone(directory, index)
    if args.knot:
        with open(args.knot, "w") as out:
            out.write(f"""server:
    listen: 127.0.0.1@{args.port}
    rundir: {args.state}
    background-workers: {args.workers}
    udp-workers: {args.workers}
    tcp-workers: {args.workers}
control:
    listen: {args.state}/knot.sock
log:
  - target: stderr
    any: notice
database:
    storage: {args.state}
template:
  - id: default
    storage: {directory}
    file: "%s.zone"
    journal-content: none
    zonefile-load: whole
    zonefile-sync: -1
    semantic-checks: off
zone:
""")
            for index in range(args.count):
                out.write(f"  - domain: {origin(index)}\n")
    if args.nsd:
        with open(args.nsd, "w") as out:
            out.write(f"""server:
    ip-address: 127.0.0.1@{args.port}
    do-ip6: no
    server-count: {args.workers}
    username: ""
    chroot: ""
    zonesdir: "{directory}"
    database: ""
    zonelistfile: "{args.state}/zone.list"
    pidfile: "{args.state}/nsd.pid"
    xfrdfile: "{args.state}/xfrd.state"
    xfrdir: "{args.state}"
    rrl-ratelimit: 0
    verbosity: 0
remote-control:
    control-enable: yes
    control-interface: {args.state}/nsd.ctl
""")
            for index in range(args.count):
                name = origin(index)
                out.write(f"zone:\n    name: {name}\n    zonefile: {name[:-1]}.zone\n")


if __name__ == "__main__":
    main()
