"""Query sets: generated from the zones' contents, and read from the corpora query lists."""

from __future__ import annotations

import dataclasses
import pathlib
import random

import dns.flags
import dns.message
import dns.name
import dns.rdatatype

from zones import ZoneInfo

EDNS_PAYLOAD = 1232
# Asked at every owner name besides the types present there. TYPE65400 (private use) is
# present nowhere.
COMMON_TYPES = ("A", "AAAA", "MX", "TXT", "NS", "SOA", "DS", "ANY", "CNAME", "TYPE65400")
GLUE_TYPES = ("A", "NS", "DS", "ANY")
# Also asked at every owner of a signed zone: the DNSSEC types, asked for directly.
DNSSEC_TYPES = ("RRSIG", "NSEC", "NSEC3", "DNSKEY", "NSEC3PARAM")
# A small EDNS payload for DO queries whose signed answer may not fit (TC with DNSSEC).
SMALL_PAYLOAD = 512
# Names whose answers are large: always asked over TCP too.
LARGE_OWNERS = ("big", "huge", "many", "mx-many", "bigdeleg")
# Names outside all loaded zones (REFUSED), incl. suffix look-alikes of loaded zones.
OUTSIDE = (
    ".",
    "com.",
    "net.",
    "example.org.",
    "www.unloaded.test.",
    "xexample.com.",
    "example.com.evil.",
    "www.example.com.evil.",
    "notflags.",
    "ANOTHER.World.",
)


@dataclasses.dataclass(frozen=True)
class Query:
    set_name: str  # "generated", "signed-<mode>" or the corpus file's name
    qname: str  # as sent, case included
    qtype: str
    edns: bool
    do: bool = False
    rd: bool = False
    tcp: bool = False
    note: str = ""
    payload: int = EDNS_PAYLOAD

    def describe(self) -> str:
        opts = [
            "tcp" if self.tcp else "udp",
            ("edns" + ("+do" if self.do else "")) if self.edns else "noedns",
        ]
        if self.payload != EDNS_PAYLOAD and self.edns:
            opts.append(f"payload={self.payload}")
        if self.rd:
            opts.append("rd")
        return f"{self.qname} {self.qtype} [{' '.join(opts)}]"

    def to_wire(self, qid: int) -> bytes:
        msg = dns.message.make_query(
            dns.name.from_text(self.qname),
            dns.rdatatype.from_text(self.qtype),
            use_edns=0 if self.edns else False,
            payload=self.payload,
            want_dnssec=self.do,
            id=qid,
        )
        msg.flags = dns.flags.RD if self.rd else 0
        return msg.to_wire()


def random_case(name: str, rng: random.Random) -> str:
    """0x20 case variation. Escapes (\\DDD) are left alone."""
    out = []
    escape = 0
    for ch in name:
        if ch == "\\":
            escape = 4
        if escape:
            escape -= 1
            out.append(ch)
        else:
            out.append(ch.upper() if rng.random() < 0.5 else ch.lower())
    return "".join(out)


def _rel(name: dns.name.Name, zone: ZoneInfo) -> str:
    return name.relativize(zone.name).to_text()


def generated_names(
    zones: list[ZoneInfo], rng: random.Random, extra_types: tuple[str, ...] = ()
) -> list[tuple[str, list[str], str]]:
    """(qname, qtypes, note) triples covering every interesting kind of name. `extra_types` are
    asked at every owner too (the DNSSEC types for signed zones)."""
    out: list[tuple[str, list[str], str]] = []
    loaded = {z.name for z in zones}
    for zone in zones:
        owners = zone.owners
        cuts = zone.cuts()
        # every owner x (present types + common types); names below a cut (glue) all get the
        # same referral, so fewer types there
        for name, types in sorted(owners.items()):
            present = [dns.rdatatype.to_text(t) for t in sorted(types)]
            below_cut = any(name != cut and name.is_subdomain(cut) for cut in cuts)
            common = GLUE_TYPES if below_cut else COMMON_TYPES + extra_types
            qtypes = present + [t for t in common if t not in present]
            out.append((name.to_text(), qtypes, "glue (below a cut)" if below_cut else "owner"))
        # empty non-terminals (ancestors of owners that own nothing)
        ents = set()
        for name in owners:
            parent = name.parent()
            while parent != zone.name and parent.is_subdomain(zone.name):
                if parent not in owners:
                    ents.add(parent)
                parent = parent.parent()
        for name in sorted(ents):
            out.append((name.to_text(), ["A", "TXT", "NS", "DS", "ANY"], "empty non-terminal"))
            out.append((f"nx{rng.randrange(1000)}.{name.to_text()}", ["A", "TXT"], "below an empty non-terminal"))
        # names below existing names: NXDOMAIN, or wildcard / delegation / DNAME answers
        for name in sorted(owners):
            if name.labels[0] == b"*":
                continue
            label = f"nx{rng.randrange(1000)}"
            out.append((f"{label}.{name.to_text()}", ["A", "TXT"], "below an existing name"))
        # names matching wildcards, one and several labels deep
        for name in sorted(owners):
            if name.labels[0] != b"*":
                continue
            base = name.parent().to_text()
            types = [dns.rdatatype.to_text(t) for t in sorted(owners[name])]
            out.append((f"q{rng.randrange(1000)}.{base}", types + ["A", "AAAA", "TXT", "MX", "ANY"], "wildcard"))
            out.append((f"a.b.c.{base}", ["A", "TXT"], "wildcard, several labels deep"))
            out.append((f"x.*.{base}", ["A"], "below the literal * name"))
        # names below delegations
        for cut in cuts:
            for sub in ("host", "a.b", "ns1"):
                out.append((f"{sub}.{cut.to_text()}", ["A", "NS", "DS", "TXT"], "below a delegation"))
        # names below DNAMEs
        for name in zone.names_with(dns.rdatatype.DNAME):
            for sub in ("host", "www", "a.b", "nx-below", "q.w", "inside.deep"):
                out.append((f"{sub}.{name.to_text()}", ["A", "AAAA", "CNAME", "DNAME", "TXT"], "below a DNAME"))
        # the delegated child's own names when its zone is loaded
        for cut in cuts:
            if cut in loaded:
                out.append((cut.to_text(), ["SOA", "NS", "DS", "MX", "A", "ANY"], "cut with loaded child zone"))
    for name in OUTSIDE:
        out.append((name, ["A", "SOA", "NS", "DS"], "outside all zones"))
    return out


def generated_queries(
    zones: list[ZoneInfo], seed: int, tcp_every: int, signed: str | None = None, small_every: int = 8
) -> list[Query]:
    """Every name x type, with and without EDNS; plus a random-case (0x20) variant of every name
    for its first few types.

    RD and DO are set pseudo-randomly (fixed seed), and a subset (every `tcp_every`-th query,
    plus every query for a large answer) is repeated over TCP.

    For a signed group (`signed` names the signing mode) every query has EDNS and DO=1, the
    DNSSEC types are asked too, and every `small_every`-th query is repeated with a 512-octet
    EDNS payload, where signed answers often do not fit (TC).
    """
    rng = random.Random(seed)
    queries: list[Query] = []
    set_name = f"signed-{signed}" if signed else "generated"
    extra = DNSSEC_TYPES if signed else ()
    for qname, qtypes, note in generated_names(zones, rng, extra):
        variants = [(qname, qtypes, note), (random_case(qname, rng), qtypes[:3], note + ", 0x20 case")]
        for name, vtypes, vnote in variants:
            for qtype in vtypes:
                if signed:
                    rd = rng.random() < 0.5
                    queries.append(Query(set_name, name, qtype, True, do=True, rd=rd, note=vnote))
                    if len(queries) % small_every == 0:
                        queries.append(
                            Query(set_name, name, qtype, True, do=True, rd=rd, note=vnote, payload=SMALL_PAYLOAD)
                        )
                    continue
                for edns in (True, False):
                    do = edns and rng.random() < 0.25
                    queries.append(Query(set_name, name, qtype, edns, do=do, rd=rng.random() < 0.5, note=vnote))
    large = tuple(f"{o}." for o in LARGE_OWNERS)
    tcp = [
        dataclasses.replace(q, tcp=True)
        for i, q in enumerate(queries)
        if i % tcp_every == 0 or q.qname.lower().startswith(large) or q.payload != EDNS_PAYLOAD
    ]
    return queries + tcp


def corpus_queries(path: pathlib.Path, seed: int) -> list[Query]:
    """Queries from a derived corpora list (`<qname> <qtype>`, `;;` option lines).

    `DO=both` runs the query with and without DO; `TCP` also runs it over TCP. Every query is
    asked without EDNS, with EDNS, and (when DO is asked for) with EDNS+DO.
    """
    rng = random.Random(seed)
    queries: list[Query] = []
    opts: list[str] = []
    note = ""
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith(";;"):
            fields = [f.strip() for f in line[2:].split(";")]
            opts, note = [], ""
            for f in fields:
                if f.startswith("opts:"):
                    opts = f[5:].split()
                elif f.startswith("note:"):
                    note = f[5:].strip()
            continue
        if line.startswith(";"):
            continue
        qname, qtype = line.split()[:2]
        variants = [(False, False), (True, False)]
        if "DO" in opts or "DO=both" in opts:
            variants.append((True, True))
        transports = [False, True] if "TCP" in opts else [False]
        for tcp in transports:
            for edns, do in variants:
                queries.append(Query(path.name, qname, qtype, edns, do=do, rd=rng.random() < 0.5, tcp=tcp, note=note))
        opts, note = [], ""
    return queries
