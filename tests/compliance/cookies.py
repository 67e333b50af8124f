#!/usr/bin/env python3
"""DNS cookies (RFC 7873, RFC 9018 server cookies) in tern, compared with BIND 9.

Both servers serve the same zone with the same server secret: tern's `cookies.secret` and
BIND's `cookie-secret` (with `cookie-algorithm siphash24`) are `SECRET`, so a server
cookie either of them makes is valid at the other, and so is one this script mints with
its own SipHash-2-4 (RFC 9018 section 4): a strong oracle for the validity rules.

Outcomes are compared as classes, not bytes (each server stamps its own time):

    NOERROR q ans opt cookie   rcode, `q` if the question is echoed, `ans` if the answer
                               section has records, `opt` if there is an OPT, `tc` if TC=1,
                               and the COOKIE in the answer: `cookie` when it is 24 octets,
                               echoes the client cookie and its server part is RFC 9018
                               shaped (version 1, reserved 0, timestamp within
                               `CLOCK_TOLERANCE` of now); `cookie?WHAT` when not; nothing
                               when there is no COOKIE
    drop                       no answer within 1 s

Part 1, answer shapes (UDP, and TCP with the same expected outcome): no OPT; an OPT
without COOKIE; a client cookie only; a 16- and a 40-octet COOKIE with a server cookie
that is not ours; bad lengths 0..7, 9..15 and 41 (FORMERR); two COOKIE options (the first
counts), or a good and a bad one (FORMERR); a COOKIE with opcode STATUS or 15 (NOTIMP),
with EDNS version 1 (BADVERS, no COOKIE), and a bad one with either (FORMERR); the
cookie-only query (QDCOUNT 0, OPT with a client cookie: NOERROR with a COOKIE, RFC 7873
section 5.4).

Part 2, whether a server cookie is accepted. A server answers an invalid server cookie
normally with a fresh one, as it does a valid one (BIND even always renews), so validity is
not visible in one answer. It is visible through rate limiting: a valid server cookie
exempts the query from RRL in both servers. Both run with `responses-per-second 1`,
errors and NXDOMAIN unlimited, `slip 1`; each probe sends `PROBE_QUERIES` queries for
a name of its own with the cookie under test:

    verified              every query fully answered (exempt from RRL)
    limited               after the first answer the rest slip as BADCOOKIE (the query
                          has a client cookie), each with a fresh COOKIE

Probes: the server cookie just received (from 127.0.0.1 to another name), with a hash
octet flipped, with a timestamp octet flipped, sent from 127.0.0.2; cookies minted here
for the time now, now-3599 (valid), now-3601 (expired), now+299 (valid), now+301 (too far
ahead) (RFC 9018 section 4.3), for 127.0.0.2 (sent from there), with version 2, with
another secret, for another client cookie, with a non-zero reserved field; no COOKIE, a
client cookie only and an unknown 16-octet server cookie (all limited: the control cases).
Timestamp probes start in the first half of a second so both clocks read the same second.

Every other case uses a name of its own too, so that RRL never touches part 1.

Usage (from the repository root; starts and stops tern and named, loopback only):

    TERN_BIN=target/release/tern python3 tests/compliance/cookies.py

Prints a table; exits 1 if tern's outcome differs from BIND's on any case, except the
cases of `DOCUMENTED` (differences decided elsewhere), where each server must give exactly
the outcome listed there.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time

import harness
from harness import encode_name, header, opt

# The RFC 9018 Appendix A secret: 32 hex digits, given to both servers.
SECRET_HEX = "e5e973e5a6b2a43f48e7dc849e37bfcf"
SECRET = bytes.fromhex(SECRET_HEX)
OTHER_SECRET = bytes(16)

OPTION_COOKIE = 10
A, IN = 1, 1
QR, AA, TC = 0x8000, 0x0400, 0x0200
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP",
          5: "REFUSED", 16: "BADVERS", 23: "BADCOOKIE"}

# How far a server cookie's timestamp may be from this script's clock.
CLOCK_TOLERANCE = 5
# RFC 9018 section 4.3: at most an hour old, at most five minutes ahead.
LIFETIME, MAX_SKEW = 3600, 300
# Queries per validity probe; with responses-per-second 1 an unverified client gets at
# most 2 of 3 answered even if the probe straddles a second (one refill).
PROBE_QUERIES = 3
# Names c0..c(NAMES-1) in the zone: one per case and probe, so RRL accounts never mix.
NAMES = 96
OTHER_SOURCE = "127.0.0.2"
SOURCE = "127.0.0.1"

ZONE_TEXT = harness.ZONE_TEXT + "".join(f"c{i} A 192.0.2.{i + 1}\n" for i in range(NAMES))

TERN_CONFIG = f"""cookies:
  enabled: true
  secret: {SECRET_HEX}
rate-limit:
  responses-per-second: 1
  nxdomains-per-second: 0
  errors-per-second: 0
  window: 1s
  slip: 1
"""
BIND_OPTIONS = f"""    cookie-algorithm siphash24;
    cookie-secret "{SECRET_HEX}";
    rate-limit {{ responses-per-second 1; nxdomains-per-second 0; errors-per-second 0;
                  window 1; slip 1; }};"""

CLIENT = bytes.fromhex("2464c4abcf10c957")
CLIENT_2 = bytes.fromhex("a1b2c3d4e5f60718")


# --- SipHash-2-4 and RFC 9018 server cookies

MASK64 = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & MASK64


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4 (Aumasson and Bernstein); the wire form is the little-endian bytes."""
    k0, k1 = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:], "little")
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def sip_round() -> None:
        v[0] = (v[0] + v[1]) & MASK64
        v[1] = _rotl(v[1], 13) ^ v[0]
        v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & MASK64
        v[3] = _rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & MASK64
        v[3] = _rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & MASK64
        v[1] = _rotl(v[1], 17) ^ v[2]
        v[2] = _rotl(v[2], 32)

    full = len(data) - len(data) % 8
    tail = data[full:] + bytes(7 - len(data) % 8) + bytes([len(data) & 0xFF])
    for block in [data[i:i + 8] for i in range(0, full, 8)] + [tail]:
        m = int.from_bytes(block, "little")
        v[3] ^= m
        sip_round()
        sip_round()
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        sip_round()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def mint(client: bytes, source: str, timestamp: int, secret: bytes = SECRET,
         version: int = 1, reserved: bytes = b"\0\0\0") -> bytes:
    """An RFC 9018 server cookie: version | reserved | timestamp | SipHash-2-4(client cookie
    | version | reserved | timestamp | client IPv4 address) under `secret`."""
    head = bytes([version]) + reserved + struct.pack("!I", timestamp & 0xFFFFFFFF)
    digest = siphash24(secret, client + head + socket.inet_aton(source))
    return head + digest.to_bytes(8, "little")


def self_test() -> None:
    """RFC 9018 Appendix A.1 and the SipHash paper's first vectors."""
    a1 = mint(CLIENT, "198.51.100.100", 1559731985)
    assert a1.hex() == "010000005cf79f111f8130c3eee29480", a1.hex()
    key = bytes(range(16))
    assert siphash24(key, b"").to_bytes(8, "little").hex() == "310e0edd47db6f72"
    assert siphash24(key, bytes(range(15))).to_bytes(8, "little").hex() == "e545be4961ca29a1"


# --- queries


def cookie_option(value: bytes) -> bytes:
    return struct.pack("!HH", OPTION_COOKIE, len(value)) + value


def name(index: int) -> str:
    assert 0 <= index < NAMES
    return f"c{index}.{harness.ZONE}"


def query(qname: str | None, options: bytes = b"", edns: bool = True, version: int = 0,
          opcode: int = 0) -> bytes:
    ident = int.from_bytes(os.urandom(2), "big")
    question = encode_name(qname) + struct.pack("!HH", A, IN) if qname else b""
    return (header(ident, opcode << 11, 1 if qname else 0, ar=1 if edns else 0) + question
            + (opt(1232, version, 0, options) if edns else b""))


# --- outcome classes


def cookie_class(options: list[tuple[int, bytes]], client: bytes | None) -> str:
    cookies = [value for code, value in options if code == OPTION_COOKIE]
    if not cookies:
        return ""
    if len(cookies) > 1:
        return f"cookie?x{len(cookies)}"
    value = cookies[0]
    if len(value) != 24:
        return f"cookie?len={len(value)}"
    if client is not None and value[:8] != client:
        return "cookie?client"
    if value[8] != 1:
        return f"cookie?version={value[8]}"
    if value[9:12] != b"\0\0\0":
        return "cookie?reserved"
    stamp = struct.unpack("!I", value[12:16])[0]
    if abs(stamp - int(time.time())) > CLOCK_TOLERANCE:
        return f"cookie?time{stamp - int(time.time()):+d}"
    return "cookie"


def describe(answer: bytes | None, client: bytes | None) -> str:
    if answer is None:
        return "drop"
    try:
        s = harness.summarize(answer)
    except harness.Unparsable as e:
        return f"unparsable ({e})"
    qd, an, _, _ = s["counts"]
    words = [RCODES.get(s["rcode"], f"rcode{s['rcode']}")]
    opcode = (s["flags"] >> 11) & 0xF
    if opcode:
        words.append(f"op{opcode}")
    if qd:
        words.append("q")
    if an:
        words.append("ans")
    if s["flags"] & TC:
        words.append("tc")
    if s["opt"] is not None:
        words.append("opt")
        other = sorted({code for code, _ in s["opt"]["options"] if code != OPTION_COOKIE})
        if other:
            words.append("options=" + ",".join(map(str, other)))
        cookie = cookie_class(s["opt"]["options"], client)
        if cookie:
            words.append(cookie)
    return " ".join(words)


def server_cookie_of(answer: bytes | None) -> bytes | None:
    if answer is None:
        return None
    try:
        s = harness.summarize(answer)
    except harness.Unparsable:
        return None
    for code, value in (s["opt"] or {"options": []})["options"]:
        if code == OPTION_COOKIE and len(value) > 8:
            return value[8:]
    return None


# --- part 1: answer shapes over UDP and TCP

# (case, build(qname) -> message, the client cookie the answer must echo)
SHAPES: list[tuple[str, object, bytes | None]] = [
    ("no OPT", lambda q: query(q, edns=False), None),
    ("OPT, no COOKIE", lambda q: query(q), None),
    ("client cookie only", lambda q: query(q, cookie_option(CLIENT)), CLIENT),
    ("COOKIE 16 octets (unknown server cookie)",
     lambda q: query(q, cookie_option(CLIENT + bytes(range(8)))), CLIENT),
    ("COOKIE 40 octets (unknown server cookie)",
     lambda q: query(q, cookie_option(CLIENT + bytes(range(32)))), CLIENT),
]
SHAPES += [(f"COOKIE {n} octets", (lambda n: lambda q: query(q, cookie_option(bytes(range(n)))))(n),
            None) for n in [*range(0, 8), *range(9, 16), 41]]
SHAPES += [
    ("two COOKIEs (8, 8)",
     lambda q: query(q, cookie_option(CLIENT) + cookie_option(CLIENT_2)), CLIENT),
    ("two COOKIEs (8, 7)",
     lambda q: query(q, cookie_option(CLIENT) + cookie_option(CLIENT_2[:7])), None),
    ("two COOKIEs (7, 8)",
     lambda q: query(q, cookie_option(CLIENT_2[:7]) + cookie_option(CLIENT)), None),
    ("opcode STATUS, question, client cookie",
     lambda q: query(q, cookie_option(CLIENT), opcode=2), CLIENT),
    ("opcode 15, no question, client cookie",
     lambda q: query(None, cookie_option(CLIENT), opcode=15), CLIENT),
    ("opcode STATUS, COOKIE 7 octets",
     lambda q: query(q, cookie_option(CLIENT[:7]), opcode=2), None),
    ("EDNS version 1, client cookie",
     lambda q: query(q, cookie_option(CLIENT), version=1), CLIENT),
    ("EDNS version 1, COOKIE 7 octets",
     lambda q: query(q, cookie_option(CLIENT[:7]), version=1), None),
    ("no question, client cookie (cookie-only query)",
     lambda q: query(None, cookie_option(CLIENT)), CLIENT),
    ("no question, OPT without COOKIE", lambda q: query(None), None),
]


def tcp_exchange(addr, message: bytes) -> bytes | None:
    try:
        return harness.tcp_exchange(addr, message)
    except OSError:
        return None


def run_shapes(servers) -> list[tuple[str, dict[str, str]]]:
    rows = []
    for index, (case, build, client) in enumerate(SHAPES):
        cells = {}
        for server_name, server in servers.items():
            message = build(name(index))
            udp = describe(harness.udp_exchange(server.addr, message), client)
            tcp = describe(tcp_exchange(server.addr, message), client)
            cells[server_name] = udp if tcp == udp else f"{udp} (tcp: {tcp})"
        rows.append((case, cells))
    return rows


# Differences decided elsewhere, not about cookies: case -> (tern, bind, where). Both
# servers must give exactly these outcomes. For other opcodes tern echoes a readable
# question and BIND does not (docs/decisions/0005-malformed-and-edns.md, "opcode STATUS");
# the COOKIE handling in these answers is the same.
DOCUMENTED = {
    "opcode STATUS, question, client cookie":
        ("NOTIMP op2 q opt cookie", "NOTIMP op2 opt cookie", "0005: question echoed"),
    "opcode STATUS, COOKIE 7 octets":
        ("FORMERR op2 q opt", "FORMERR op2 opt", "0005: question echoed"),
    # RFC 9018 section 4.2 and its Appendix A.3 example hash the reserved
    # octets as received; BIND 9.18 hashes zeros and compares all 16
    # octets, so it rejects such a cookie (0006).
    "minted, reserved 00 00 01 (hashed as sent)":
        ("verified; cookie?reserved", "limited: BADCOOKIE q; cookie", "0006: RFC 9018 A.3"),
}


# --- part 2: validity probes through RRL


def probe(addr, qname: str, client: bytes, server_cookie: bytes | None,
          source: str = SOURCE) -> str:
    """PROBE_QUERIES queries for `qname` with the COOKIE (client, server_cookie), or with
    no COOKIE when `client` is empty; `verified` or `limited` plus the answers' cookies."""
    options = cookie_option(client + (server_cookie or b"")) if client else b""
    kinds, cookies = [], set()
    for _ in range(PROBE_QUERIES):
        answer = harness.udp_exchange_from(addr, query(qname, options), source)
        if answer is None:
            kinds.append("drop")
            continue
        try:
            s = harness.summarize(answer)
        except harness.Unparsable:
            kinds.append("unparsable")
            continue
        full = s["rcode"] == 0 and s["flags"] & AA and s["types"] == [A] \
            and not s["flags"] & TC
        kinds.append("ok" if full else describe(answer, client or None).split(" opt")[0])
        cookies.add(cookie_class(s["opt"]["options"] if s["opt"] else [], client or None)
                    or "no-cookie")
    if kinds == ["ok"] * PROBE_QUERIES:
        verdict = "verified"
    elif kinds[0] == "ok":
        verdict = "limited: " + "/".join(sorted(set(kinds[1:]) - {"ok"}))
    else:
        verdict = "odd: " + ",".join(kinds)
    return f"{verdict}; {'+'.join(sorted(cookies))}"


def start_of_second() -> int:
    """Waits until the clock is early in a second (bounded: at most one second), so that a
    probe finishes within the second its cookies were minted in; returns that second."""
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        fraction = time.time() % 1
        if 0.05 <= fraction < 0.4:
            break
        time.sleep(0.02)
    return int(time.time())


def flip(cookie: bytes, at: int) -> bytes:
    return cookie[:at] + bytes([cookie[at] ^ 0x55]) + cookie[at + 1:]


def received(addr, qname: str, source: str = SOURCE) -> bytes:
    """The server cookie the server gives `CLIENT` at `source` (first contact)."""
    answer = harness.udp_exchange_from(addr, query(qname, cookie_option(CLIENT)), source)
    cookie = server_cookie_of(answer)
    if cookie is None:
        raise RuntimeError(f"no server cookie in the answer to {qname}")
    return cookie


# (case, expected class for both, function(addr, qname, spare_qname) -> outcome)
def probes():
    def minted(offset: int, send_client: bytes = CLIENT, for_source: str = SOURCE,
               source: str = SOURCE, **mint_args):
        def run(addr, qname, _spare):
            now = start_of_second()
            cookie = mint(CLIENT, for_source, now + offset, **mint_args)
            return probe(addr, qname, send_client, cookie, source)
        return run

    return [
        ("no COOKIE (control)", lambda a, q, s: probe(a, q, b"", None)),
        ("client cookie only", lambda a, q, s: probe(a, q, CLIENT, None)),
        ("unknown 16-octet server cookie", lambda a, q, s: probe(a, q, CLIENT, bytes(range(16)))),
        ("the server cookie just received", lambda a, q, s: probe(a, q, CLIENT, received(a, s))),
        ("received, hash octet flipped",
         lambda a, q, s: probe(a, q, CLIENT, flip(received(a, s), 12 + 3))),
        ("received, timestamp octet flipped",
         lambda a, q, s: probe(a, q, CLIENT, flip(received(a, s), 7))),
        ("received at 127.0.0.1, sent from 127.0.0.2",
         lambda a, q, s: probe(a, q, CLIENT, received(a, s), OTHER_SOURCE)),
        ("received at 127.0.0.2, sent from 127.0.0.2",
         lambda a, q, s: probe(a, q, CLIENT, received(a, s, OTHER_SOURCE), OTHER_SOURCE)),
        ("minted, now", minted(0)),
        ("minted, now-3599", minted(-(LIFETIME - 1))),
        ("minted, now-3601", minted(-(LIFETIME + 1))),
        ("minted, now+299", minted(MAX_SKEW - 1)),
        ("minted, now+301", minted(MAX_SKEW + 1)),
        ("minted for 127.0.0.2, sent from 127.0.0.1", minted(0, for_source=OTHER_SOURCE)),
        ("minted for 127.0.0.2, sent from 127.0.0.2",
         minted(0, for_source=OTHER_SOURCE, source=OTHER_SOURCE)),
        ("minted with another secret", minted(0, secret=OTHER_SECRET)),
        ("minted for another client cookie", minted(0, send_client=CLIENT_2)),
        ("minted, version 2", minted(0, version=2)),
        ("minted, reserved 00 00 01 (hashed as sent)", minted(0, reserved=b"\0\0\1")),
    ]


def run_probes(servers, first_name: int) -> list[tuple[str, dict[str, str]]]:
    rows = []
    for index, (case, run) in enumerate(probes()):
        qname, spare = name(first_name + 2 * index), name(first_name + 2 * index + 1)
        cells = {}
        for server_name, server in servers.items():
            try:
                cells[server_name] = run(server.addr, qname, spare)
            except (RuntimeError, OSError) as e:
                cells[server_name] = f"error: {e}"
        rows.append((case, cells))
    return rows


def main() -> int:
    self_test()
    socket.setdefaulttimeout(harness.EXCHANGE_TIMEOUT)
    started = time.monotonic()
    with harness.configured(ZONE_TEXT, TERN_CONFIG, ("--cores", "0"), BIND_OPTIONS) as servers:
        shapes = run_shapes(servers)
        checks = run_probes(servers, len(SHAPES))
    failures = []
    for title, rows in (("answer shapes (UDP; TCP where it differs)", shapes),
                        ("server cookie validity (UDP, through RRL)", checks)):
        print(f"\n{title}\n")
        print("| case | tern | bind |")
        print("|---|---|---|")
        for case, cells in rows:
            outcome = (cells["tern"], cells["bind"])
            if case in DOCUMENTED:
                good = outcome == DOCUMENTED[case][:2]
                mark = f" (documented, {DOCUMENTED[case][2]})" if good else " **UNEXPECTED**"
            else:
                good = cells["tern"] == cells["bind"]
                mark = "" if good else " **DIFFERS**"
            print(f"| {case}{mark} | {cells['tern']} | {cells['bind']} |")
            if not good:
                failures.append(case)
    print(f"\n{len(shapes) + len(checks)} cases in {time.monotonic() - started:.1f} s")
    if failures:
        print("FAIL: tern differs from BIND on: " + "; ".join(failures), file=sys.stderr)
        return 1
    print("tern equals BIND on every case")
    return 0


if __name__ == "__main__":
    sys.exit(main())
