#!/usr/bin/env python3
"""Generate the benchmark zones and the dnsperf query mix.

Two kinds of zone, both deterministic (fixed seed, so every run and every
server sees the same bytes):

  mixed NAMES   the zone `bench.` used by scripts/bench-peers.sh and the
                criterion lookup bench (benches/src/lib.rs builds the same
                shape in Rust). NAMES hosts plus aliases, delegations and a
                wildcard, about 1.2 x NAMES owner names in all:

                  host{i}        A (every host), AAAA (every 4th host)
                  alias{i}       CNAME host{i}            (NAMES / 10 of them)
                  sub{i}         NS ns1.sub{i} + glue A   (NAMES / 20 of them)
                  *.wild         A                        (the wildcard)

                With --queries FILE it also writes a dnsperf data file of
                QUERIES lines ("name type"), in this mix:

                  40 %  host{i} A            exact hit, lowercase
                  10 %  HoSt{i} A            exact hit, mixed case (0x20 style)
                   5 %  host{i} AAAA         hit or NODATA (3 hosts in 4 have no AAAA)
                  15 %  nx{i} A              NXDOMAIN
                  10 %  w{i}.wild A          wildcard synthesis
                  10 %  alias{i} A           CNAME, followed to the host's A
                  10 %  www.sub{i} A         referral (NS + glue)

  big RECORDS   the zone `big.` of RECORDS A records (h0 .. h{RECORDS-1}),
                plus SOA and NS, for the zone-load measurement. The last
                name, printed on stdout, is what the load timer waits for.

  flood COUNT   a random-subdomain flood against the zone `bench.` (of
                `mixed`): a dnsperf data file of COUNT query lines whose
                names are all distinct, so that every query is a cache miss.
                Each name's first label is 6 to 14 random letters and
                digits, a hyphen and the line number in base 36 (so no two
                are alike):

                  50 %  {label}.bench. A         NXDOMAIN
                  25 %  {label}.wild.bench. A    wildcard answer
                  15 %  {label}.bench. AAAA      NXDOMAIN
                  10 %  {label}.wild.bench. TXT  NODATA (from the wildcard)

Usage:
  gen-bench-zone.py mixed --names 10000 --zone DIR/bench.zone --queries FILE [--count 100000]
  gen-bench-zone.py big --records 1000000 --zone DIR/big.zone
  gen-bench-zone.py flood --count 100000 --queries FILE
"""

from __future__ import annotations

import argparse
import random
import sys

SEED = 20261121
SOA = "@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n"

# (share in percent, kind) of the query mix; the shares add up to 100.
MIX = [
    (40, "exact"),
    (10, "mixed-case"),
    (5, "aaaa"),
    (15, "nxdomain"),
    (10, "wildcard"),
    (10, "cname"),
    (10, "referral"),
]


def host_address(i: int) -> str:
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


def write_mixed_zone(out, names: int) -> None:
    out.write("$ORIGIN bench.\n$TTL 3600\n")
    out.write(SOA)
    out.write("@ IN NS ns1\n@ IN NS ns2\n")
    out.write("ns1 IN A 192.0.2.1\nns2 IN A 192.0.2.2\n")
    out.write("*.wild IN A 192.0.2.100\n")
    for i in range(names):
        out.write(f"host{i} IN A {host_address(i)}\n")
        if i % 4 == 0:
            out.write(f"host{i} IN AAAA 2001:db8::{i:x}\n")
    for i in range(names // 10):
        out.write(f"alias{i} IN CNAME host{i}\n")
    for i in range(names // 20):
        out.write(f"sub{i} IN NS ns1.sub{i}\n")
        out.write(f"ns1.sub{i} IN A 198.51.{(i >> 8) & 255}.{i & 255}\n")


def mixed_case(name: str, rng: random.Random) -> str:
    return "".join(c.upper() if c.isalpha() and rng.random() < 0.5 else c for c in name)


def query_line(kind: str, names: int, rng: random.Random) -> str:
    host = rng.randrange(names)
    if kind == "exact":
        return f"host{host}.bench. A"
    if kind == "mixed-case":
        return f"{mixed_case(f'host{host}.bench.', rng)} A"
    if kind == "aaaa":
        return f"host{host}.bench. AAAA"
    if kind == "nxdomain":
        return f"nx{rng.randrange(1_000_000)}.bench. A"
    if kind == "wildcard":
        return f"w{rng.randrange(1_000_000)}.wild.bench. A"
    if kind == "cname":
        return f"alias{rng.randrange(max(names // 10, 1))}.bench. A"
    if kind == "referral":
        return f"www.sub{rng.randrange(max(names // 20, 1))}.bench. A"
    raise ValueError(kind)


def write_queries(out, names: int, count: int) -> None:
    rng = random.Random(SEED)
    kinds = [kind for share, kind in MIX for _ in range(share)]
    for _ in range(count):
        out.write(query_line(rng.choice(kinds), names, rng) + "\n")


# (share in percent, suffix, type) of the flood; the shares add up to 100.
FLOOD = [
    (50, "bench.", "A"),
    (25, "wild.bench.", "A"),
    (15, "bench.", "AAAA"),
    (10, "wild.bench.", "TXT"),
]

FLOOD_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def base36(n: int) -> str:
    digits = BASE36[n % 36]
    while n >= 36:
        n //= 36
        digits = BASE36[n % 36] + digits
    return digits


def write_flood(out, count: int) -> None:
    rng = random.Random(SEED + 1)
    kinds = [(suffix, qtype) for share, suffix, qtype in FLOOD for _ in range(share)]
    for i in range(count):
        suffix, qtype = rng.choice(kinds)
        label = "".join(rng.choice(FLOOD_ALPHABET) for _ in range(rng.randrange(6, 15)))
        out.write(f"{label}-{base36(i)}.{suffix} {qtype}\n")


def write_big_zone(out, records: int) -> str:
    out.write("$ORIGIN big.\n$TTL 3600\n")
    out.write(SOA)
    out.write("@ IN NS ns1\nns1 IN A 192.0.2.1\n")
    # Written in chunks: a million small writes cost more than the text.
    chunk = []
    for i in range(records):
        chunk.append(f"h{i} IN A {host_address(i)}\n")
        if len(chunk) == 10_000:
            out.write("".join(chunk))
            chunk.clear()
    out.write("".join(chunk))
    return f"h{records - 1}.big."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    mixed = sub.add_parser("mixed", help="the zone bench. and a query mix")
    mixed.add_argument("--names", type=int, default=10_000)
    mixed.add_argument("--zone", required=True)
    mixed.add_argument("--queries")
    mixed.add_argument("--count", type=int, default=100_000, help="query lines to write")
    big = sub.add_parser("big", help="the zone big. of N A records")
    big.add_argument("--records", type=int, default=1_000_000)
    big.add_argument("--zone", required=True)
    flood = sub.add_parser("flood", help="distinct random names under bench.")
    flood.add_argument("--count", type=int, default=100_000, help="query lines to write")
    flood.add_argument("--queries", required=True)
    args = parser.parse_args()

    if args.command == "mixed":
        if args.names < 20:
            parser.error("--names must be at least 20")
        with open(args.zone, "w") as out:
            write_mixed_zone(out, args.names)
        if args.queries:
            with open(args.queries, "w") as out:
                write_queries(out, args.names, args.count)
    elif args.command == "flood":
        with open(args.queries, "w") as out:
            write_flood(out, args.count)
    else:
        if args.records < 1:
            parser.error("--records must be at least 1")
        with open(args.zone, "w") as out:
            print(write_big_zone(out, args.records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
