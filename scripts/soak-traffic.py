#!/usr/bin/env python3
"""Hostile DNS traffic for scripts/soak.sh: malformed, truncated and garbage
messages over UDP and TCP, slow TCP clients and clients that never read.

  soak-traffic.py --port 15353 --seconds 120 [--udp-rate 3000] [--slow-clients 64]

Loopback only (127.0.0.1), bounded: it stops after --seconds, keeps at most
--slow-clients slow connections and MAX_OPEN sockets at once, and closes
everything before exiting. Prints one JSON line of counts at the end. The
valid load comes from dnsperf, started by soak.sh; this script also sends a
few valid queries over TCP and counts their answers, so an exit status of 0
means valid TCP queries were still answered while the abuse went on.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import time

SERVER = "127.0.0.1"
# Sockets open at once (slow and never-reading clients included).
MAX_OPEN = 200
# How long a never-reading client keeps its connection.
NO_READ_HOLD = 5.0
# How long a slow client dribbles before giving up.
SLOW_HOLD = 10.0
# Seconds between two octets of a slow client.
SLOW_INTERVAL = 0.5
# Timeout of one valid TCP probe.
PROBE_TIMEOUT = 3.0

NAMES = [b"www", b"ns1", b"mail", b"web", b"x.users", b"nope", b"host.lab", b"_sip._udp", b""]


def encode_name(text: bytes) -> bytes:
    out = b""
    for label in (text + b".example.com").strip(b".").split(b"."):
        out += bytes([len(label)]) + label
    return out + b"\x00"


def valid_query(rng: random.Random, edns: bool | None = None) -> bytes:
    qid = rng.randrange(65536)
    edns = rng.random() < 0.5 if edns is None else edns
    header = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1 if edns else 0)
    question = encode_name(rng.choice(NAMES)) + struct.pack("!HH", rng.choice([1, 28, 15, 16, 6, 2, 255]), 1)
    opt = b"\x00\x00\x29\x04\xd0\x00\x00\x80\x00\x00\x00" if edns else b""
    return header + question + opt


def malformed(rng: random.Random) -> bytes:
    """One hostile message; each kind is a case of issue 6."""
    q = valid_query(rng, edns=False)
    kind = rng.randrange(15)
    if kind == 0:  # truncated anywhere
        return q[: rng.randrange(len(q))]
    if kind == 1:  # random garbage
        return rng.randbytes(rng.randrange(1, 600))
    if kind == 2:  # bit flips
        data = bytearray(q)
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    if kind == 3:  # compression loop in the answer section
        return q[:6] + b"\x00\x01" + q[8:] + b"\xc0" + bytes([len(q)]) + b"\x00\x01\x00\x01" + b"\x00" * 6
    if kind == 4:  # counts far past the end
        return q[:4] + b"\x00\x01\xff\xff\xff\xff\xff\xff" + q[12:]
    if kind == 5:  # QR set: must be dropped
        return q[:2] + bytes([q[2] | 0x80]) + q[3:]
    if kind == 6:  # QDCOUNT 0 or 2
        return q[:4] + rng.choice([b"\x00\x00", b"\x00\x02"]) + q[6:]
    if kind == 7:  # other opcodes, odd flags
        return q[:2] + bytes([rng.randrange(256) & 0x7f, rng.randrange(256)]) + q[4:]
    if kind == 8:  # EDNS version 1, or two OPTs
        two = rng.random() < 0.5
        opt = b"\x00\x00\x29\x04\xd0\x00" + (b"\x00" if two else b"\x01") + b"\x00\x00\x00"
        return q[:10] + (b"\x00\x02" if two else b"\x00\x01") + q[12:] + opt * (2 if two else 1)
    if kind == 9:  # trailing garbage
        return q + rng.randbytes(rng.randrange(1, 40))
    if kind == 10:  # label over 63, name over 255
        return q[:12] + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01"
    if kind == 11:  # shorter than a header
        return q[: rng.randrange(12)]
    if kind == 12:  # RDLENGTH past the end
        return q[:6] + b"\x00\x01" + q[8:] + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\xff\xff"
    if kind == 13:  # COOKIE options: bad lengths (FORMERR), several, forged server cookies
        options = b"".join(
            struct.pack("!HH", 10, n) + rng.randbytes(n)
            for n in [rng.choice([0, 7, 8, 9, 15, 16, 24, 40, 41]) for _ in range(rng.randrange(1, 4))])
        opt = b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00" + struct.pack("!H", len(options)) + options
        return q[:10] + b"\x00\x01" + q[12:] + opt
    return q[:12] + rng.randbytes(rng.randrange(1, 300))  # a garbage question


class Counts(dict):
    def add(self, key: str, n: int = 1) -> None:
        self[key] = self.get(key, 0) + n


def tcp_probe(port: int, rng: random.Random, counts: Counts) -> None:
    """One valid query over TCP; counts whether it was answered."""
    query = valid_query(rng)
    try:
        with socket.create_connection((SERVER, port), timeout=PROBE_TIMEOUT) as s:
            s.sendall(struct.pack("!H", len(query)) + query)
            head = recv_exact(s, 2)
            answer = recv_exact(s, struct.unpack("!H", head)[0])
            if answer[:2] == query[:2] and answer[2] & 0x80:
                counts.add("tcp_valid_answered")
            else:
                counts.add("tcp_valid_bad_answer")
    except OSError:
        counts.add("tcp_valid_failed")


def recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def tcp_abuse(port: int, rng: random.Random, counts: Counts) -> None:
    """One short-lived abusive TCP connection."""
    kind = rng.randrange(4)
    try:
        with socket.create_connection((SERVER, port), timeout=1.0) as s:
            if kind == 0:  # malformed message, correct prefix
                m = malformed(rng)
                s.sendall(struct.pack("!H", len(m)) + m)
                counts.add("tcp_malformed")
            elif kind == 1:  # prefix promises more than is sent, then close
                m = valid_query(rng)
                s.sendall(struct.pack("!H", len(m) + 50) + m)
                counts.add("tcp_truncated")
            elif kind == 2:  # length 0 or under 12
                s.sendall(struct.pack("!H", rng.randrange(12)) + b"\x00" * 11)
                counts.add("tcp_short_prefix")
            else:  # half a length prefix
                s.sendall(b"\x00")
                counts.add("tcp_half_prefix")
    except OSError:
        counts.add("tcp_abuse_refused")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--udp-rate", type=int, default=3000, help="malformed UDP messages per second")
    ap.add_argument("--slow-clients", type=int, default=64)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    counts = Counts()
    end = time.monotonic() + args.seconds
    udp = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(8)]
    for s in udp:
        s.setblocking(False)
    # socket -> (kind, deadline, next action time)
    held: dict[socket.socket, list] = {}
    next_tcp = time.monotonic()
    tick = 0.01
    while time.monotonic() < end:
        now = time.monotonic()
        # Malformed UDP, from 8 sockets (so several cores see it); answers
        # are read and discarded.
        for _ in range(max(1, int(args.udp_rate * tick))):
            try:
                rng.choice(udp).sendto(malformed(rng), (SERVER, args.port))
                counts.add("udp_malformed")
            except OSError:
                counts.add("udp_send_error")
        for s in udp:
            try:
                while True:
                    s.recv(65535)
                    counts.add("udp_answers")
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                pass
        # Open slow and never-reading clients up to the caps.
        slow = sum(1 for v in held.values() if v[0] == "slow")
        if slow < args.slow_clients and len(held) < MAX_OPEN:
            try:
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex((SERVER, args.port))
                held[s] = ["slow", now + SLOW_HOLD, now + SLOW_INTERVAL, valid_query(rng)]
                counts.add("tcp_slow_opened")
            except OSError:
                counts.add("tcp_slow_refused")
        if rng.random() < 0.05 and len(held) < MAX_OPEN:
            try:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(1.0)
                s.connect((SERVER, args.port))
                s.setblocking(False)
                # Many queries for a large answer, never read.
                q = valid_query(rng, edns=True)
                try:
                    s.send((struct.pack("!H", len(q)) + q) * 200)
                except (BlockingIOError, OSError):
                    pass
                held[s] = ["noread", now + NO_READ_HOLD, now + NO_READ_HOLD, b""]
                counts.add("tcp_noread_opened")
            except OSError:
                counts.add("tcp_noread_refused")
        # Dribble one octet per interval into each slow client.
        for s, state in list(held.items()):
            if now >= state[1]:
                s.close()
                del held[s]
                continue
            if state[0] == "slow" and now >= state[2]:
                state[2] = now + SLOW_INTERVAL
                try:
                    if state[3]:
                        s.send(state[3][:1])
                        state[3] = state[3][1:]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    counts.add("tcp_slow_closed_by_server")
                    s.close()
                    del held[s]
        # Short abusive TCP connections and a valid TCP probe, 10 a second.
        if now >= next_tcp:
            next_tcp = now + 0.1
            tcp_abuse(args.port, rng, counts)
            tcp_probe(args.port, rng, counts)
        time.sleep(tick)
    for s in list(held) + udp:
        s.close()
    print(json.dumps(counts, sort_keys=True))
    answered = counts.get("tcp_valid_answered", 0)
    probes = answered + counts.get("tcp_valid_failed", 0) + counts.get("tcp_valid_bad_answer", 0)
    if probes == 0 or answered < 0.9 * probes:
        print(f"soak-traffic: only {answered} of {probes} valid TCP queries answered", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
