#!/usr/bin/env python3
"""Malformed queries against tern, Knot, NSD and BIND: the evidence behind the table of
docs/decisions/0005-malformed-and-edns.md.

Each case below is one hand-built message (a query for `www.example. A` unless the case
says otherwise) sent over UDP, and over a fresh TCP connection followed by a normal query on
the same connection. The outcome is written as

    drop                      no answer
    FORMERR q opt             the rcode, then `q` if the question was echoed (QDCOUNT 1)
                              and `opt` if the answer has an OPT record
    ... / tcp: open|closed    over TCP, whether the connection still answered a normal
                              query afterwards

The script prints a Markdown table (case, then each server's outcome) and exits 1 if tern's
outcome differs from `EXPECTED`, the documented decision. Usage:

    TERN_BIN=target/release/tern python3 tests/compliance/malformed.py [--servers tern,bind]

Bounded: one UDP and one TCP exchange per case and server, each with a 1 s timeout; the
servers listen on 127.0.0.1 only and are stopped at the end.
"""

from __future__ import annotations

import argparse
import struct
import sys

import harness
from harness import encode_name, header, opt

QNAME = encode_name("www.example")
QUESTION = QNAME + struct.pack("!HH", 1, 1)  # A IN
A_RECORD_TAIL = struct.pack("!HHIH", 1, 1, 300, 4) + bytes([192, 0, 2, 1])
HEADER_LEN = 12
# Offset of the first octet after the question.
AFTER_QUESTION = HEADER_LEN + len(QUESTION)


def query(flags: int = 0, an: int = 0, ns: int = 0, ar: int = 0, body: bytes = b"", qd: int = 1,
          question: bytes = QUESTION) -> bytes:
    return header(0x5151, flags, qd, an, ns, ar) + question + body


def pointer(offset: int) -> bytes:
    return struct.pack("!H", 0xC000 | offset)


LONG_NAME = b"".join(bytes([63]) + b"a" * 63 for _ in range(4)) + b"\0"  # 257 octets

CASES: list[tuple[str, bytes]] = [
    ("under 12 octets", query()[:11]),
    ("QR=1", query(flags=0x8000)),
    ("QDCOUNT 0", header(0x5151, 0, 0)),
    ("QDCOUNT 2", query(qd=2, body=QUESTION)),
    ("question: compression pointer to itself", query(question=pointer(12) + b"\0\1\0\1")),
    ("question: label over 63", query(question=b"\x40" + b"a" * 64 + b"\0\0\1\0\1")),
    ("question: name over 255", query(question=LONG_NAME + b"\0\1\0\1")),
    ("record: compression loop", query(ar=1, body=pointer(AFTER_QUESTION) + A_RECORD_TAIL)),
    ("record: forward pointer",
     query(ar=2, body=pointer(AFTER_QUESTION + 16) + A_RECORD_TAIL + QNAME + A_RECORD_TAIL)),
    ("record: pointer past the end", query(ar=1, body=pointer(0x3FFF) + A_RECORD_TAIL)),
    ("record: label over 63", query(ar=1, body=b"\x40" + b"a" * 64 + b"\0" + A_RECORD_TAIL)),
    ("record: name over 255", query(ar=1, body=LONG_NAME + A_RECORD_TAIL)),
    ("ANCOUNT 65535, no records", query(an=65535)),
    ("ARCOUNT past the end", query(ar=2, body=opt())),
    ("RDLENGTH past the end", query(ar=1, body=b"\0" + struct.pack("!HHIH", 1, 1, 0, 100) + b"\1\2\3\4")),
    ("trailing garbage", query(ar=1, body=opt() + b"\1\2\3")),
    ("two OPT records", query(ar=2, body=opt() + opt())),
    ("OPT in the answer section", query(an=1, body=opt())),
    ("OPT in the authority section", query(ns=1, body=opt())),
    ("OPT with a non-root owner", query(ar=1, body=QNAME + opt()[1:])),
    ("opcode 15, bare header, all flags", header(0x5151, (15 << 11) | 0x07B0, 0)),
    ("opcode STATUS, question, RD CD", query(flags=(2 << 11) | 0x0110)),
]

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}

# tern's decided outcome per case over UDP. Over TCP the outcome is the same and the
# connection stays open, except where `EXPECTED_TCP` says otherwise (a length prefix below
# a header's size closes the connection, as in Knot, NSD and BIND).
EXPECTED_TCP = {"under 12 octets": "drop; closed"}
EXPECTED = {
    "under 12 octets": "drop",
    "QR=1": "drop",
    "QDCOUNT 0": "FORMERR",
    "QDCOUNT 2": "FORMERR",
    "question: compression pointer to itself": "drop",
    "question: label over 63": "drop",
    "question: name over 255": "drop",
    "record: compression loop": "FORMERR q",
    "record: forward pointer": "FORMERR q",
    "record: pointer past the end": "FORMERR q",
    "record: label over 63": "FORMERR q",
    "record: name over 255": "FORMERR q",
    "ANCOUNT 65535, no records": "FORMERR q",
    "ARCOUNT past the end": "FORMERR q",
    "RDLENGTH past the end": "FORMERR q",
    "trailing garbage": "FORMERR q",
    "two OPT records": "FORMERR q",
    "OPT in the answer section": "FORMERR q",
    "OPT in the authority section": "FORMERR q",
    "OPT with a non-root owner": "FORMERR q",
    "opcode 15, bare header, all flags": "NOTIMP flags=qr",
    "opcode STATUS, question, RD CD": "NOTIMP q flags=qr",
}


def describe(answer: bytes | None) -> str:
    if answer is None:
        return "drop"
    if len(answer) < HEADER_LEN:
        return "runt"
    flags, qd, an, ns, ar = struct.unpack("!5H", answer[2:12])
    text = RCODES.get(flags & 0xF, f"rcode{flags & 0xF}")
    if qd == 1:
        text += " q"
    if an or ns:
        text += " records"
    if ar and b"\0\0\x29" in answer[HEADER_LEN:]:
        text += " opt"
    if (flags >> 11) & 0xF:
        # Non-QUERY opcodes: list the header flags set, to show what was copied.
        names = [("qr", 0x8000), ("aa", 0x400), ("tc", 0x200), ("rd", 0x100), ("ra", 0x80),
                 ("z", 0x40), ("ad", 0x20), ("cd", 0x10)]
        text += " flags=" + "+".join(n for n, bit in names if flags & bit)
    return text


def normal_query() -> bytes:
    return query(ar=1, body=opt())


def probe(addr, message: bytes) -> tuple[str, str]:
    udp = describe(harness.udp_exchange(addr, message))
    with harness.tcp_connect(addr) as s:
        harness.tcp_send(s, message)
        tcp = describe(harness.tcp_receive(s))
        try:
            harness.tcp_send(s, normal_query())
            after = harness.tcp_receive(s)
        except OSError:
            after = None
    state = "open" if after is not None else "closed"
    return udp, f"{tcp}; {state}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="tern,knot,nsd,bind")
    args = parser.parse_args()
    names = args.servers.split(",")
    failures = []
    with harness.running(names) as servers:
        print("| case | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for case, message in CASES:
            cells = []
            for name in names:
                udp, tcp = probe(servers[name].addr, message)
                cells.append(udp if tcp == f"{udp}; open" else f"{udp} (tcp: {tcp})")
                tcp_expected = EXPECTED_TCP.get(case, f"{EXPECTED[case]}; open")
                if name == "tern" and (udp != EXPECTED[case] or tcp != tcp_expected):
                    failures.append(f"{case}: udp {udp!r}, tcp {tcp!r}, expected {EXPECTED[case]!r}")
            print(f"| {case} | " + " | ".join(cells) + " |")
    for failure in failures:
        print(f"FAIL tern: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
