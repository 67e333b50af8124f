#!/usr/bin/env python3
"""Poll a DNS server over UDP until a name answers; print the seconds it took.

  wait-answer.py --port 5353 --name h999999.big. [--type A] [--since EPOCH] [--timeout 120]

Sends one query (RD clear, no EDNS) every --interval seconds to --host (default
127.0.0.1; IPv6 addresses too) and stops at the first answer that is NOERROR,
authoritative and has at least one answer record. Prints the time from --since
(a `date +%s.%N` taken just before the server was started; default: when this
script started) to that answer, in seconds. Exits 1 if --timeout passes first.
Used by scripts/bench-peers.sh to time zone loads and to wait for servers to be
ready, and by scripts/bench-xdp.sh across its veth pair.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time

TYPES = {"A": 1, "NS": 2, "SOA": 6, "AAAA": 28}


def encode_name(name: str) -> bytes:
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode("ascii")
    return out + b"\x00"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--type", default="A", choices=sorted(TYPES))
    parser.add_argument("--since", type=float, help="epoch seconds the clock starts at")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--interval", type=float, default=0.005)
    args = parser.parse_args()

    start = args.since if args.since is not None else time.time()
    deadline = time.monotonic() + args.timeout
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.settimeout(args.interval)
    question = encode_name(args.name) + struct.pack("!HH", TYPES[args.type], 1)
    query_id = 0
    while time.monotonic() < deadline:
        query_id = (query_id + 1) & 0xFFFF
        sock.sendto(struct.pack("!HHHHHH", query_id, 0, 1, 0, 0, 0) + question, (args.host, args.port))
        receive_until = time.monotonic() + args.interval
        while time.monotonic() < receive_until:
            try:
                data = sock.recv(65535)
            except (socket.timeout, ConnectionRefusedError):
                break
            if len(data) < 12:
                continue
            reply_id, flags, _, ancount = struct.unpack("!HHHH", data[:8])
            authoritative = bool(flags & 0x0400)
            if reply_id == query_id and flags & 0x000F == 0 and authoritative and ancount > 0:
                print(f"{time.time() - start:.3f}")
                return 0
        # a refused connection returns at once: do not spin faster than --interval
        time.sleep(max(0.0, receive_until - time.monotonic()))
    print(f"no answer for {args.name} within {args.timeout:.0f} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
