#!/usr/bin/env python3
"""Run a command and time how long until a zone's SOA answers with a new serial.

  wait-serial.py --port 5353 --name z5.example. --serial 2 [--timeout 600] [--log FILE] -- CMD...

First asks the zone's SOA until it answers (the serial served before), and
refuses to go on if that is already --serial. Then starts CMD (a reload:
`kill -HUP PID`, `knotc reload`, `tern reload ZONE`...) and, while it runs,
asks the SOA every --interval seconds over UDP on 127.0.0.1 until an answer
that is NOERROR, authoritative and carries an SOA of serial --serial. Prints
one line: the seconds from just before CMD started to that answer, CMD's exit
code and the seconds from its start to its exit (once the serial is seen, CMD
is waited for until --timeout, then terminated: its code is then `running`).
Exits 1, printing `dnf` and the serial seen last, if --timeout passes
before (CMD is then terminated) or CMD fails first. CMD's output goes to --log (default: dropped).
Used by scripts/bench-zones.sh.
"""

from __future__ import annotations

import argparse
import socket
import struct
import subprocess
import sys
import time

SOA = 6
# A name has at most 127 labels; a compressed name at most that many pointers.
MAX_LABELS = 128


def encode_name(name: str) -> bytes:
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode("ascii")
    return out + b"\x00"


def skip_name(data: bytes, offset: int) -> int:
    """The offset after the name at `offset` (a pointer ends it); raises IndexError."""
    for _ in range(MAX_LABELS):
        length = data[offset]
        if length >= 0xC0:
            data[offset + 1]  # the pointer's second byte must be there
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length
    raise IndexError("name too long")


def soa_serial(data: bytes, query_id: int) -> int | None:
    """The serial of the first SOA in the answer section, if the reply is one we take."""
    try:
        reply_id, flags, qdcount, ancount = struct.unpack("!HHHH", data[:8])
        if reply_id != query_id or flags & 0x000F != 0 or not flags & 0x0400:
            return None
        offset = 12
        for _ in range(qdcount):
            offset = skip_name(data, offset) + 4
        for _ in range(ancount):
            offset = skip_name(data, offset)
            rtype, _, _, rdlength = struct.unpack("!HHIH", data[offset : offset + 10])
            offset += 10
            if rtype == SOA:
                at = skip_name(data, skip_name(data, offset))
                return struct.unpack("!I", data[at : at + 4])[0]
            offset += rdlength
    except (IndexError, struct.error):
        return None
    return None


class Asker:
    def __init__(self, port: int, name: str, interval: float):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(interval)
        self.address = ("127.0.0.1", port)
        self.question = encode_name(name) + struct.pack("!HH", SOA, 1)
        self.interval = interval
        self.query_id = 0

    def ask(self) -> int | None:
        """One query; the serial answered within one interval, if any."""
        self.query_id = (self.query_id + 1) & 0xFFFF
        header = struct.pack("!HHHHHH", self.query_id, 0, 1, 0, 0, 0)
        self.sock.sendto(header + self.question, self.address)
        until = time.monotonic() + self.interval
        while time.monotonic() < until:
            try:
                data = self.sock.recv(65535)
            except (socket.timeout, ConnectionRefusedError):
                break
            serial = soa_serial(data, self.query_id)
            if serial is not None:
                return serial
        # a refused query returns at once: do not spin faster than the interval
        time.sleep(max(0.0, until - time.monotonic()))
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--serial", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--interval", type=float, default=0.005)
    parser.add_argument("--log", help="CMD's standard output and error")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()

    asker = Asker(args.port, args.name, args.interval)
    deadline = time.monotonic() + args.timeout
    before = None
    while before is None and time.monotonic() < deadline:
        before = asker.ask()
    if before is None:
        print(f"dnf: {args.name} answered no SOA before the command", file=sys.stderr)
        print("dnf none")
        return 1
    if before == args.serial:
        print(f"{args.name} already serves serial {before}", file=sys.stderr)
        return 2

    log = open(args.log, "ab") if args.log else subprocess.DEVNULL
    start = time.monotonic()
    command = subprocess.Popen(args.command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    seen = before
    while time.monotonic() < deadline:
        serial = asker.ask()
        status = command.poll()
        if status is not None and status != 0 and serial != args.serial:
            print(f"dnf: the command exited {status}", file=sys.stderr)
            print(f"dnf {seen} exit {status}")
            return 1
        if serial is None:
            continue
        seen = serial
        if serial == args.serial:
            elapsed = time.monotonic() - start
            status = command.poll()
            if status is None:
                try:
                    status = command.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    command.terminate()
                    status = "running"
            print(f"{elapsed:.3f} {status} {time.monotonic() - start:.3f}")
            return 0
    command.terminate()
    command.wait()
    print(f"dnf {seen}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
