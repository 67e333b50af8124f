"""Shared by the transfer scripts: the zone's name, the TSIG key, reading a zone by
AXFR with dnspython (which checks the TSIG of every message), asking a server for the
zone's serial, and failing with the servers' logs. Every exchange has a timeout."""

from __future__ import annotations

import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.query  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.tsig  # noqa: E402
import dns.zone  # noqa: E402

import servers as smod  # noqa: E402  (tests/differential/servers.py)
import wire  # noqa: E402  (tests/differential/wire.py)

ZONE = "example"
KEY_NAME = "transfer-key"


def fail(script: str, message: str, *servers: smod.Server) -> None:
    """Prints the failure and the tail of each server's log; exits 1."""
    print(f"transfer/{script}: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(60)}")
    sys.exit(1)


def keyring(secret: str) -> dict:
    return {dns.name.from_text(KEY_NAME): dns.tsig.Key(KEY_NAME, secret, "hmac-sha256")}


def axfr_records(addr, secret: str | None) -> set:
    """The zone by AXFR from `addr` (with the key, if a secret is given), as
    (owner, TTL, type, RDATA text), lowercased."""
    ring = keyring(secret) if secret else None
    messages = dns.query.xfr(addr[0], ZONE + ".", port=addr[1], keyring=ring,
                             keyname=KEY_NAME if ring else None, relativize=False,
                             timeout=10, lifetime=60)
    return zone_records(dns.zone.from_xfr(messages, relativize=False))


def zone_records(zone: dns.zone.Zone) -> set:
    """Every record of a dnspython zone as (owner, TTL, type, RDATA text), lowercased."""
    return {(name.to_text().lower(), ttl, rdata.rdtype, rdata.to_text().lower())
            for name, ttl, rdata in zone.iterate_rdatas()}


def text_records(text: str) -> set:
    """Every record of zone-file text for the zone."""
    return zone_records(dns.zone.from_text(text, origin=ZONE + ".", relativize=False))


def serial(addr) -> int | None:
    """The zone's SOA serial as `addr` answers it over UDP; None if it does not."""
    query = dns.message.make_query(ZONE + ".", dns.rdatatype.SOA)
    reply = wire.exchange(query.to_wire(), addr, tcp=False, timeout=1.0, retries=0)
    if not reply.ok or reply.rcode != 0:
        return None
    return next((rdata.serial for rrset in reply.message.answer for rdata in rrset
                 if rdata.rdtype == dns.rdatatype.SOA), None)


def wait_serial(script: str, server: smod.Server, expected: int, wait: float,
                *logs: smod.Server) -> None:
    """Waits until `server` serves serial `expected`; fails after `wait` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if serial(server.addr) == expected:
            return
        time.sleep(0.1)
    fail(script, f"{server.name} did not serve serial {expected} within {wait:.0f}s "
         f"(has {serial(server.addr)})", server, *logs)


def answer_summary(addr, qname: str, rtype: str):
    """(rcode, AA, answer section, the SOA of the authority section) as text, sorted."""
    import dns.flags

    query = dns.message.make_query(qname, rtype)
    query.flags &= ~dns.flags.RD
    reply = wire.exchange(query.to_wire(), addr, tcp=False, timeout=1.0, retries=1)
    if not reply.ok:
        return ("no answer", reply.error)
    message = reply.message
    answer = sorted(str(rrset).lower() for rrset in message.answer)
    soa = sorted(str(rrset).lower() for rrset in message.authority
                 if rrset.rdtype == dns.rdatatype.SOA)
    return (reply.rcode, bool(message.flags & dns.flags.AA), answer, soa)


def same_answers(script: str, one: smod.Server, other: smod.Server, questions) -> None:
    """Every (name, type) of `questions` answered alike by both servers: rcode, AA,
    the answer section and the authority section's SOA."""
    for qname, rtype in questions:
        ours, theirs = answer_summary(one.addr, qname, rtype), answer_summary(other.addr, qname, rtype)
        if ours != theirs:
            fail(script, f"{qname} {rtype}: {one.name} {ours} but {other.name} {theirs}", one,
                 other)
