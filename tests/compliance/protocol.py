#!/usr/bin/env python3
"""NSID, QCLASS ANY, RRset TTLs and class CH (issues 11, 22): tern beside Knot, NSD, BIND 9.

All four serve the same zone; Knot, NSD, BIND and tern each have an NSID of their own
(Knot `nsid:` text, NSD `nsid:` hex, BIND `server-id`, tern `nsid:` text).

1. NSID (RFC 5001): the same queries, with and without an (empty) NSID option, to every
   server, over UDP and TCP: a positive answer, NXDOMAIN, REFUSED (a name outside the
   zone) and BADVERS (EDNS version 1). Checks: with the option, tern's answer carries
   tern's identifier wherever Knot's carries Knot's (on these cases every peer that
   answers sends its own); without the option, no server sends one. A large answer with
   the option at 512 octets stays within 512 with TC (tern).
2. QCLASS ANY: `ns1.example. A` and `nx.example. A` in class ANY. tern's answer must equal
   Knot's: rcode, AA, the question as asked (class ANY), and the records (class IN) with
   their TTLs. NSD's is printed (it answers too, without AA).
3. RRset TTLs (issues 11 and 22, docs/decisions/0002): `www` has three A records with TTLs
   600, 100, 900 (lines 7-9), `split` two groups of A records (600, then 100 after a record
   of another name), `dup` one record written twice with TTLs 600 and 100. tern must answer
   each with BIND's TTLs (600; 100; 600), and `tern check` must warn "differs" at the lines
   where `named-checkzone` warns "TTL set to prior TTL". Knot (the last TTL) and NSD (each
   record its own) are printed.
4. Class CH (RFC 4892, issue 22): `id.server.`, `hostname.bind.`, `version.server.` and
   `version.bind.` in mixed case, TXT, ANY and A, plus other names, over UDP and TCP, with
   every server at its defaults: tern's answer must equal Knot's (rcode, flags, question,
   records with TTL and class, EDNS options) with the texts aside, and tern's texts must be
   the host name and `tern VERSION`. Then tern and Knot again with `identity: ""` and
   `version: ""`: both must refuse alike. NSD and BIND are printed.

Usage (from the repository root; loopback only, every server stopped at the end):

    TERN_BIN=target/release/tern python3 tests/compliance/protocol.py

Prints what each server did; exits 1 on any failed check.
"""

from __future__ import annotations

import pathlib
import re
import struct
import subprocess
import sys
import tempfile

import dns.edns
import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype

import harness
import servers as smod

ZONE = "example"
ZONE_TEXT = f"""$ORIGIN {ZONE}.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
; the next three lines: one RRset, three TTLs
www  600 A   192.0.2.80
www  100 A   192.0.2.81
www  900 A   192.0.2.82
; one RRset in two groups: BIND keeps the later group's TTL
split 600 A  192.0.2.90
split 600 A  192.0.2.91
mid       A  192.0.2.92
split 100 A  192.0.2.93
; one record written twice with two TTLs: the first is kept
dup  600 A   192.0.2.94
dup  100 A   192.0.2.94
""" + "".join(f'big TXT "{i:02} {"b" * 60}"\n' for i in range(12))

# The lines where named-checkzone warns "TTL set to prior TTL".
DIFFERING_LINES = [8, 9, 17]

# The TTLs BIND serves each name's A records with (docs/decisions/0002).
BIND_TTLS = {"www": [600, 600, 600], "split": [100, 100, 100], "dup": [600]}

NSIDS = {"tern": b"tern-nsid", "knot": b"knot-nsid", "nsd": b"nsd-nsid", "bind": b"bind-nsid"}


class Knot(smod.Knot):
    def base_config(self) -> str:
        return super().base_config().replace(
            "server:\n", f"server:\n    nsid: {NSIDS['knot'].decode()}\n", 1)


class HiddenKnot(Knot):
    """Knot with its CH identity and version set empty (they are then refused)."""

    def base_config(self) -> str:
        return super().base_config().replace(
            "server:\n", 'server:\n    identity: ""\n    version: ""\n', 1)


class Nsd(smod.Nsd):
    def server_section(self, zonesdir: pathlib.Path) -> str:
        return super().server_section(zonesdir).replace(
            "server:\n", f"server:\n    nsid: \"{NSIDS['nsd'].hex()}\"\n", 1)


failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def ask(server, name: str, rdtype: str, *, nsid: bool, rdclass: str = "IN", version: int = 0,
        payload: int = 1232, tcp: bool = False) -> dns.message.Message | None:
    options = [dns.edns.GenericOption(dns.edns.NSID, b"")] if nsid else []
    query = dns.message.make_query(name, rdtype, rdclass, use_edns=version, payload=payload,
                                   options=options)
    query.flags &= ~dns.flags.RD
    wire = query.to_wire()
    answer = (harness.tcp_exchange if tcp else harness.udp_exchange)(server.addr, wire)
    if answer is None:
        return None
    message = dns.message.from_wire(answer, ignore_trailing=False)
    message.wire_length = len(answer)
    return message


def nsid_of(message: dns.message.Message | None):
    """The NSID value, None without one, or 'no answer'."""
    if message is None:
        return "no answer"
    for option in message.options:
        if option.otype == dns.edns.NSID:
            return bytes(option.data) if hasattr(option, "data") else option.to_wire()
    return None


def part_nsid(started: dict) -> None:
    print("\n== NSID")
    cases = [
        ("positive", dict(name="www.example.", rdtype="A")),
        ("nxdomain", dict(name="nx.example.", rdtype="A")),
        ("refused", dict(name="www.example.org.", rdtype="A")),
        ("badvers", dict(name="www.example.", rdtype="A", version=1)),
    ]
    for what, args in cases:
        for tcp in (False, True):
            label = f"{what}{' tcp' if tcp else ''}"
            got = {name: nsid_of(ask(server, nsid=True, tcp=tcp, **args))
                   for name, server in started.items()}
            print(f"     {label:14} with NSID:    " +
                  "  ".join(f"{n}={v!r}" for n, v in got.items()))
            knot_sends = got["knot"] == NSIDS["knot"]
            check((got["tern"] == NSIDS["tern"]) == knot_sends and got["tern"] != "no answer",
                  f"NSID {label}: tern sends its own iff Knot does ({knot_sends})")
            unasked = {name: nsid_of(ask(server, nsid=False, tcp=tcp, **args))
                       for name, server in started.items()}
            check(all(value is None for value in unasked.values()),
                  f"NSID {label}: nobody sends one unasked {unasked}")
    big = ask(started["tern"], "big.example.", "TXT", nsid=True, payload=512)
    check(big is not None and big.wire_length <= 512 and bool(big.flags & dns.flags.TC)
          and nsid_of(big) == NSIDS["tern"],
          f"NSID: tern's truncated 512-octet answer carries it "
          f"({big and big.wire_length} octets, TC={big and bool(big.flags & dns.flags.TC)})")


def records(message: dns.message.Message) -> list:
    return sorted((str(rrset.name), rrset.rdclass, rrset.rdtype, rrset.ttl, sorted(map(str, rrset)))
                  for rrset in message.answer + message.authority)


def shape(message: dns.message.Message | None):
    if message is None:
        return "no answer"
    question = [(str(q.name), dns.rdataclass.to_text(q.rdclass), dns.rdatatype.to_text(q.rdtype))
                for q in message.question]
    return {"rcode": message.rcode(), "aa": bool(message.flags & dns.flags.AA),
            "question": question, "records": records(message)}


def part_class_any(started: dict) -> None:
    print("\n== QCLASS ANY")
    for name in ("ns1.example.", "nx.example."):
        got = {server_name: shape(ask(server, name, "A", nsid=False, rdclass="ANY"))
               for server_name, server in started.items() if server_name != "bind"}
        for server_name, value in got.items():
            print(f"     {name:13} {server_name:5} {value}")
        check(got["tern"] == got["knot"], f"class ANY {name}: tern's answer equals Knot's")
        check(got["tern"] != "no answer" and got["tern"]["question"][0][1] == "ANY",
              f"class ANY {name}: the question's class is echoed as asked")


def part_ttls(started: dict, zone_file: pathlib.Path) -> None:
    print("\n== RRset TTLs")
    for name, expected in BIND_TTLS.items():
        ttls = {}
        for server_name, server in started.items():
            # dnspython merges the records of an RRset under one TTL: read the wire.
            wire = harness.udp_exchange(server.addr, dns.message.make_query(
                f"{name}.example.", "A", use_edns=0).to_wire())
            ttls[server_name] = wire_ttls(wire)
            print(f"     {name:5} A TTLs {server_name:5} {ttls[server_name]}")
        check(ttls["bind"] == expected, f"{name}: BIND serves {expected}")
        check(ttls["tern"] == ttls["bind"], f"{name}: tern's TTLs equal BIND's")

    tern = subprocess.run([str(harness.tern_binary()), "check", ZONE, str(zone_file)],
                          capture_output=True, text=True, timeout=30)
    bind = subprocess.run(["named-checkzone", ZONE, str(zone_file)],
                          capture_output=True, text=True, timeout=30)
    tern_lines = sorted(int(m.group(1)) for m in re.finditer(
        rf"{re.escape(str(zone_file))}:(\d+):\d+: warning: \w+\.example\.: TTL \d+ differs",
        tern.stdout + tern.stderr))
    bind_lines = sorted(int(m.group(1)) for m in re.finditer(
        r":(\d+): TTL set to prior TTL", bind.stdout + bind.stderr))
    print(f"     tern check warns at lines {tern_lines} (exit {tern.returncode}); "
          f"named-checkzone at {bind_lines} (exit {bind.returncode})")
    check(tern.returncode == 0, "tern check accepts the zone")
    check(tern_lines == bind_lines == DIFFERING_LINES,
          f"tern check warns at the lines named-checkzone does ({DIFFERING_LINES})")
    check("split.example.: TTL 100 replaces the TTL 600" in tern.stdout + tern.stderr,
          "tern check says where the later group of `split` replaces the earlier TTL")


# Class CH: the RFC 4892 names, in mixed case, and names no server answers.
CH_NAMES = ["id.server.", "HOSTNAME.bind.", "Version.Server.", "version.BIND."]
CH_OTHER_NAMES = ["authors.bind.", "example.", "id.server.example."]


def ch_ask(server, name: str, rdtype: str, *, tcp: bool, edns: bool):
    query = dns.message.make_query(name, rdtype, "CH", use_edns=0 if edns else None)
    query.flags &= ~dns.flags.RD
    answer = (harness.tcp_exchange if tcp else harness.udp_exchange)(server.addr,
                                                                     query.to_wire())
    return None if answer is None else dns.message.from_wire(answer)


def ch_shape(message):
    """Everything of a CH answer but the TXT texts."""
    if message is None:
        return "no answer"
    return {
        "rcode": dns.rcode.to_text(message.rcode()),
        "flags": dns.flags.to_text(message.flags),
        "question": [(str(q.name), dns.rdataclass.to_text(q.rdclass),
                      dns.rdatatype.to_text(q.rdtype)) for q in message.question],
        "answer": [(str(r.name), dns.rdataclass.to_text(r.rdclass),
                    dns.rdatatype.to_text(r.rdtype), r.ttl, len(r)) for r in message.answer],
        "authority": len(message.authority),
        "edns": message.edns,
        "options": sorted(int(option.otype) for option in message.options),
    }


def ch_texts(message) -> list[bytes]:
    if message is None:
        return []
    return [b"".join(rdata.strings) for rrset in message.answer for rdata in rrset
            if rrset.rdtype == dns.rdatatype.TXT]


def tern_version() -> str:
    out = subprocess.run([str(harness.tern_binary()), "--version"], capture_output=True,
                         text=True, timeout=30).stdout.split()
    return f"tern {out[1]}" if len(out) > 1 else "?"


def part_chaos(started: dict, hidden: bool) -> None:
    print(f"\n== Class CH ({'identity and version hidden' if hidden else 'defaults'})")
    host = pathlib.Path("/proc/sys/kernel/hostname").read_text().strip().encode()
    version = tern_version().encode()
    cases = [(name, rdtype) for name in CH_NAMES for rdtype in ("TXT", "ANY", "A")]
    cases += [(name, "TXT") for name in CH_OTHER_NAMES]
    for name, rdtype in cases:
        for tcp in (False, True):
            for edns in (True, False):
                label = f"{name} {rdtype} {'tcp' if tcp else 'udp'}{'' if edns else ' no-edns'}"
                got = {server_name: ch_ask(server, name, rdtype, tcp=tcp, edns=edns)
                       for server_name, server in started.items()}
                shapes = {server_name: ch_shape(m) for server_name, m in got.items()}
                texts = {server_name: ch_texts(m) for server_name, m in got.items()}
                for server_name in started:
                    print(f"     {label:34} {server_name:5} {shapes[server_name]} "
                          f"{texts[server_name]}")
                check(shapes["tern"] == shapes["knot"],
                      f"CH {label}: tern's answer equals Knot's but for the text")
                if hidden or rdtype != "TXT" or name not in CH_NAMES:
                    check(texts["tern"] == [], f"CH {label}: tern answers no text")
                else:
                    want = host if name.lower() in ("id.server.", "hostname.bind.") else version
                    check(texts["tern"] == [want], f"CH {label}: tern answers {want!r}")


def wire_ttls(wire: bytes | None) -> list[int] | None:
    """The TTLs of the answer section's records, in order, read from the wire."""
    if wire is None:
        return None
    an = struct.unpack("!H", wire[6:8])[0]
    pos = harness.skip_name(wire, 12) + 4
    out = []
    for _ in range(an):
        pos = harness.skip_name(wire, pos)
        _, _, ttl, rdlen = struct.unpack("!HHIH", wire[pos:pos + 10])
        out.append(ttl)
        pos += 10 + rdlen
    return out


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tern-protocol-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(ZONE_TEXT)
        tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                                      config_text=f"nsid: {NSIDS['tern'].decode()}\n")
        bind = harness.Bind(tmp / "bind", zone_dir, [ZONE])
        bind.extra_options = f'    server-id "{NSIDS["bind"].decode()}";'
        started = {
            "tern": tern,
            "knot": Knot(tmp / "knot", zone_dir, [ZONE]),
            "nsd": Nsd(tmp / "nsd", zone_dir, [ZONE]),
            "bind": bind,
        }
        with harness.serving(started):
            part_nsid(started)
            part_class_any(started)
            part_ttls(started, zone_file)
            part_chaos(started, hidden=False)
        hidden = {
            "tern": harness.ConfiguredTern(harness.tern_binary(), tmp / "tern-hidden", zone_dir,
                                           [ZONE], config_text="identity: ''\nversion: ''\n"),
            "knot": HiddenKnot(tmp / "knot-hidden", zone_dir, [ZONE]),
        }
        with harness.serving(hidden):
            part_chaos(hidden, hidden=True)
    print(f"\n{len(failures)} failure(s)")
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
