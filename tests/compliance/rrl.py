#!/usr/bin/env python3
"""Response rate limiting in tern, compared with BIND 9's `rate-limit`.

Both servers serve the same zone with the same limits and nothing exempt (loopback
included: BIND has no `exempt-clients`, tern no `rate-limit.exempt`):

    BIND: rate-limit { responses-per-second R; nxdomains-per-second R;
                       errors-per-second R; window W; slip S; };
    tern: rate-limit: {responses-per-second: R, nxdomains-per-second: R,
                       errors-per-second: R, window: Ws, slip: S}, run with `--cores 0`
          (one core: tern enforces ceil(rate / cores) per core, docs/decisions/0007)

Each burst is `BURST` UDP queries from one socket on 127.0.0.1, paced evenly over
`BURST_SECONDS` (under a second), answers collected until `DRAIN_SECONDS` pass without
one. Every answer is classed as full (the real answer, TC=0), a TC=1 slip, a BADCOOKIE
slip (extended rcode 23), or silence (no answer). Bursts, each on accounts of its own:

    responses   `BURST` × www.example A                 NOERROR, keyed by qname and type
    recovery    then www.example A once a second until fully answered again (at most
                `RECOVERY_PROBES`): the debt is floored at -W×R, so about W seconds
    nxdomain    `BURST` random names under example      NXDOMAIN, one account per zone
    errors      `BURST` × www.invalid A (not ours)      REFUSED, one account per prefix
    client      `BURST` × ns1.example A, each with a client cookie only
    verified    `BURST` × big.example TXT, each with the valid server cookie the
                server gave this client a moment before
    tcp         `TCP_QUERIES` × www.example A on one TCP connection

Bounds (BIND's accounting, which tern follows: an account holds at most R, is credited R
each second and debited per answer; a burst within one second that crosses at most one
second boundary gets R to 2R answers; debt is floored at -W×R so the burst stays limited):

    - full answers: R <= full <= 2R, for each server and each limited category, and
      |full(tern) - full(bind)| <= R;
    - slips: every S-th limited answer slips; with L = BURST - full limited answers,
      |slips - L/S| <= SLIP_SLACK (the slip counter restarts when an account refills);
      the slip kind: TC=1 without a cookie, BADCOOKIE with a client cookie (both servers);
    - silence = the rest, and nothing else (no other answers);
    - a valid server cookie takes the client out of rate limiting: all `BURST` answered
      (BIND: `!HAVECOOKIE` in query.c; tern: `CookieCheck::is_verified`);
    - TCP is never limited: all `TCP_QUERIES` answered;
    - recovery: the first full answer comes W ± 2 s after the burst, for tern within 1 s of
      BIND (without the floor a 200-query debt would last 19 s).

One documented difference (docs/decisions/0007-response-rate-limiting.md, "Slip"): BIND
drops every limited error answer (ns_client_error never slips), tern slips them like the
others. For `errors` each server is checked against its own rule: BIND 0 slips, tern
L/S ± SLIP_SLACK; the full answers are compared as for the other categories.

Usage (from the repository root; starts and stops tern and named, loopback only):

    TERN_BIN=target/release/tern python3 tests/compliance/rrl.py

Bounded: 5 bursts of `BURST` queries, at most `RECOVERY_PROBES` recovery probes and
`TCP_QUERIES` per server, each exchange with a 1 s timeout; about 30 s in all. Exits 1 if
a bound fails.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import sys
import time

import harness
from harness import encode_name, header, opt

RATE = 10  # R: responses, NXDOMAINs and errors per second
WINDOW = 5  # W, seconds
SLIP = 2  # S
BURST = 200  # queries per burst
BURST_SECONDS = 0.8  # the burst is paced over this long
DRAIN_SECONDS = 1.0  # after the last query, stop once no answer came for this long
SLIP_SLACK = 2
# After the `responses` burst the account is at its floor, -WINDOW × RATE; credited RATE a
# second it answers again after about WINDOW seconds. Probed once a second.
RECOVERY_PROBES = WINDOW + 5
RECOVERY_TIMEOUT = 0.8
TCP_QUERIES = 50

A, SOA, TXT, IN = 1, 6, 16, 1
TC = 0x0200
NOERROR, NXDOMAIN, REFUSED, BADCOOKIE = 0, 3, 5, 23
OPTION_COOKIE = 10
CLIENT = bytes.fromhex("0badc0de0badf00d")

TERN_CONFIG = f"""rate-limit:
  responses-per-second: {RATE}
  nxdomains-per-second: {RATE}
  errors-per-second: {RATE}
  window: {WINDOW}s
  slip: {SLIP}
"""
BIND_OPTIONS = f"""    rate-limit {{ responses-per-second {RATE}; nxdomains-per-second {RATE};
                  errors-per-second {RATE}; window {WINDOW}; slip {SLIP}; }};"""


def cookie_option(value: bytes) -> bytes:
    return struct.pack("!HH", OPTION_COOKIE, len(value)) + value


def query(ident: int, qname: str, qtype: int = A, options: bytes | None = None) -> bytes:
    """A query; with an OPT (carrying `options`) unless `options` is None."""
    edns = options is not None
    message = header(ident, 0, 1, ar=1 if edns else 0) + encode_name(qname) + \
        struct.pack("!HH", qtype, IN)
    return message + (opt(1232, 0, 0, options) if edns else b"")


def classify(answer: bytes, expected_rcode: int) -> str:
    try:
        s = harness.summarize(answer)
    except harness.Unparsable:
        return "other"
    if s["rcode"] == BADCOOKIE:
        return "badcookie"
    if s["flags"] & TC:
        return "tc" if s["counts"][1] == 0 else "other"
    if s["rcode"] != expected_rcode:
        return "other"
    if expected_rcode == NOERROR and not s["counts"][1]:
        return "other"
    return "full"


def burst(addr, messages: list[bytes], expected_rcode: int) -> dict[str, int]:
    """Sends `messages` (IDs 0..n-1) paced over BURST_SECONDS; counts the answer classes."""
    kinds: dict[int, str] = {}
    interval = BURST_SECONDS / len(messages)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        s.setblocking(False)
        start = time.monotonic()

        def drain(until: float) -> None:
            # Bounded: returns at `until` at the latest.
            while True:
                left = until - time.monotonic()
                if left <= 0 or not select.select([s], [], [], left)[0]:
                    return
                for _ in range(len(messages)):
                    try:
                        answer = s.recv(65535)
                    except BlockingIOError:
                        break
                    if len(answer) >= 2:
                        ident = struct.unpack("!H", answer[:2])[0]
                        if ident < len(messages) and ident not in kinds:
                            kinds[ident] = classify(answer, expected_rcode)

        for index, message in enumerate(messages):
            s.sendto(message, addr)
            drain(start + (index + 1) * interval)
        deadline = time.monotonic() + 2 * DRAIN_SECONDS + BURST_SECONDS
        while time.monotonic() < deadline:
            before = len(kinds)
            drain(time.monotonic() + DRAIN_SECONDS)
            if len(kinds) == before:
                break
    counts = {"full": 0, "tc": 0, "badcookie": 0, "other": 0}
    for kind in kinds.values():
        counts[kind] += 1
    counts["silence"] = len(messages) - len(kinds)
    return counts


def server_cookie(addr) -> bytes:
    """The server cookie for CLIENT at 127.0.0.1, from a query (the apex SOA) whose
    account no burst touches."""
    answer = harness.udp_exchange(addr, query(0x4242, harness.ZONE, SOA, cookie_option(CLIENT)))
    if answer is None:
        raise RuntimeError("no answer to the cookie query")
    for code, value in (harness.summarize(answer)["opt"] or {"options": []})["options"]:
        if code == OPTION_COOKIE and len(value) > 8:
            return value[8:]
    raise RuntimeError("no server cookie in the answer")


def recovery(addr) -> list[str]:
    """Right after the `responses` burst: one query for its name each second, at most
    RECOVERY_PROBES, until one is fully answered; the classes seen ("drop" for none)."""
    seen = []
    start = time.monotonic()
    for second in range(RECOVERY_PROBES):
        time.sleep(max(0.0, start + second - time.monotonic()))
        answer = harness.udp_exchange(addr, query(second, f"www.{harness.ZONE}", A, b""),
                                      timeout=RECOVERY_TIMEOUT)
        seen.append("drop" if answer is None else classify(answer, NOERROR))
        if seen[-1] == "full":
            break
    return seen


def tcp_all(addr) -> int:
    answered = 0
    with harness.tcp_connect(addr) as s:
        for ident in range(TCP_QUERIES):
            harness.tcp_send(s, query(ident, f"www.{harness.ZONE}", A, b""))
            answer = harness.tcp_receive(s)
            if answer is not None and classify(answer, NOERROR) == "full":
                answered += 1
    return answered


def run(addr) -> dict[str, dict[str, int]]:
    zone = harness.ZONE
    results = {
        "responses": burst(addr, [query(i, f"www.{zone}", A, b"") for i in range(BURST)],
                           NOERROR),
    }
    results["recovery"] = {"probes": recovery(addr)}
    results |= {
        "nxdomain": burst(addr, [query(i, f"nx{os.urandom(4).hex()}.{zone}", A, b"")
                                 for i in range(BURST)], NXDOMAIN),
        "errors": burst(addr, [query(i, "www.invalid", A, b"") for i in range(BURST)],
                        REFUSED),
        "client": burst(addr, [query(i, f"ns1.{zone}", A, cookie_option(CLIENT))
                               for i in range(BURST)], NOERROR),
    }
    try:
        cookie = server_cookie(addr)
        results["verified"] = burst(
            addr, [query(i, f"big.{zone}", TXT, cookie_option(CLIENT + cookie))
                   for i in range(BURST)], NOERROR)
    except (RuntimeError, harness.Unparsable) as e:
        print(f"no server cookie: {e}", file=sys.stderr)
        results["verified"] = {"full": 0, "tc": 0, "badcookie": 0, "silence": BURST, "other": 0}
    results["tcp"] = {"full": tcp_all(addr)}
    return results


def check(results: dict[str, dict[str, dict[str, int]]]) -> list[str]:
    failures = []

    def expect(ok: bool, what: str) -> None:
        if not ok:
            failures.append(what)

    for server, r in results.items():
        for category, slip_kind in (("responses", "tc"), ("nxdomain", "tc"), ("errors", "tc"),
                                    ("client", "badcookie")):
            c = r[category]
            limited = BURST - c["full"]
            expect(RATE <= c["full"] <= 2 * RATE,
                   f"{server} {category}: {c['full']} full answers, not in [{RATE}, {2 * RATE}]")
            expected_slips = 0 if (server == "bind" and category == "errors") else limited / SLIP
            expect(abs(c[slip_kind] - expected_slips) <= SLIP_SLACK,
                   f"{server} {category}: {c[slip_kind]} {slip_kind} slips, expected "
                   f"{expected_slips:.0f} ± {SLIP_SLACK}")
            other_kind = "badcookie" if slip_kind == "tc" else "tc"
            expect(c[other_kind] == 0 and c["other"] == 0,
                   f"{server} {category}: unexpected answers {c}")
        expect(r["verified"]["full"] == BURST,
               f"{server} verified: {r['verified']} (a valid server cookie must be exempt)")
        expect(r["tcp"]["full"] == TCP_QUERIES,
               f"{server} tcp: {r['tcp']['full']} of {TCP_QUERIES} answered")
    def recovered(server: str) -> int | None:
        probes = results[server]["recovery"]["probes"]
        return len(probes) - 1 if probes and probes[-1] == "full" else None

    for server in results:
        second = recovered(server)
        expect(second is not None and WINDOW - 2 <= second <= WINDOW + 2,
               f"{server} recovery: {results[server]['recovery']['probes']}: the first full "
               f"answer must come {WINDOW} ± 2 s after the burst (debt floored at "
               f"-window × rate)")
    if None not in (recovered("tern"), recovered("bind")):
        expect(abs(recovered("tern") - recovered("bind")) <= 1,
               f"recovery: tern after {recovered('tern')} s, BIND after {recovered('bind')} s")
    for category in ("responses", "nxdomain", "errors", "client"):
        tern, bind = results["tern"][category]["full"], results["bind"][category]["full"]
        expect(abs(tern - bind) <= RATE,
               f"{category}: tern {tern} and BIND {bind} full answers differ by more than {RATE}")
    return failures


def main() -> int:
    socket.setdefaulttimeout(harness.EXCHANGE_TIMEOUT)
    started = time.monotonic()
    with harness.configured(harness.ZONE_TEXT, TERN_CONFIG, ("--cores", "0"),
                            BIND_OPTIONS) as servers:
        results = {name: run(server.addr) for name, server in servers.items()}
    columns = ("full", "tc", "badcookie", "silence", "other")
    print(f"rate {RATE}/s, window {WINDOW} s, slip {SLIP}; bursts of {BURST} over "
          f"{BURST_SECONDS} s\n")
    print("| category | server | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for category in results["tern"]:
        if category == "recovery":
            continue
        for name, r in results.items():
            cells = [str(r[category].get(column, "")) for column in columns]
            print(f"| {category} | {name} | " + " | ".join(cells) + " |")
    for name, r in results.items():
        print(f"recovery after the responses burst, {name}: " + ",".join(r["recovery"]["probes"]))
    failures = check(results)
    print(f"\n{time.monotonic() - started:.1f} s")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if not failures:
        print("tern within bounds of BIND and of the configured rate in every category")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
