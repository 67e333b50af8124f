"""Zones for the differential suite.

Every zone is written as `<zone>.zone` into one directory (the layout `tern serve --zones DIR`
loads). All zones use an explicit `$TTL` and an explicit TTL on every record, so TTL defaulting
can never be the reason two servers differ.

The zones are deliberately small and hand-written: each block says which behaviour it is there
to pin. Queries are derived from them in `queries.py`.
"""

from __future__ import annotations

import dataclasses
import pathlib

import dns.name
import dns.rdatatype
import dns.zone

# Parent zone. Most behaviours live here.
EXAMPLE_COM = r"""
$ORIGIN example.com.
$TTL 3600
@               3600  IN SOA   ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 1209600 300
@               86400 IN NS    ns1.example.com.
@               86400 IN NS    NS2.Example.COM.          ; mixed-case RDATA name, in zone
@               86400 IN NS    ns.example.net.           ; apex NS in another loaded zone
@               3600  IN MX    10 mail.example.com.
@               3600  IN MX    20 Mail2                  ; relative, mixed case
@               3600  IN MX    30 mx.example.net.        ; target in another loaded zone
@               300   IN A     192.0.2.1
@               300   IN AAAA  2001:db8::1
@               3600  IN TXT   "v=spf1 -all"

ns1             3600  IN A     192.0.2.53
ns1             3600  IN AAAA  2001:db8::53
ns2             3600  IN A     192.0.2.54
mail            300   IN A     192.0.2.25
mail            300   IN AAAA  2001:db8::25
MAIL2           300   IN A     192.0.2.26                ; mixed-case owner
www             300   IN A     192.0.2.80
www             300   IN A     192.0.2.81
www             300   IN A     192.0.2.82
www             300   IN AAAA  2001:db8::80
www             300   IN AAAA  2001:db8::81

; mixed-case owner and RDATA names; TXT keeps its case
MiXeD.CaSe      600   IN A     192.0.2.90
MiXeD.CaSe      600   IN TXT   "Case Preserved In TXT"
MiXeD.CaSe      600   IN MX    5 WWW.EXAMPLE.com.

; SRV with an in-zone target (additional A/AAAA) and one in another zone
_sip._tcp       3600  IN SRV   10 60 5060 sipserver
_sip._tcp       3600  IN SRV   20 40 5060 sip.example.net.
sipserver       3600  IN A     192.0.2.60
sipserver       3600  IN AAAA  2001:db8::60

; TXT with several strings, an empty string, several RRs
txt             3600  IN TXT   "hello" "world"
txt             3600  IN TXT   "second record"
txt             3600  IN TXT   ""

; empty non-terminals: c.ent and b.c.ent exist only as ancestors
a.b.c.ent       3600  IN A     192.0.2.110

; wildcards
*.wild          3600  IN A     192.0.2.100
*.wild          3600  IN TXT   "wildcard"
*.wild          3600  IN MX    10 mail
exists.wild     3600  IN A     192.0.2.101               ; an existing name beside the wildcard
host            3600  IN A     192.0.2.102
*.host          3600  IN A     192.0.2.103               ; wildcard below an existing name
*.host          3600  IN AAAA  2001:db8::103
*.wcname        3600  IN CNAME www                       ; wildcard CNAME
*.wcname-out    3600  IN CNAME www.unloaded.test.        ; wildcard CNAME leaving our zones
*.wc-ent        3600  IN A     192.0.2.120               ; wildcard that has children
child.*.wc-ent  3600  IN A     192.0.2.121
x.y.wc-ent      3600  IN A     192.0.2.122               ; y.wc-ent is an ENT: blocks the wildcard

; CNAME chains
c1              3600  IN CNAME c2
c2              1800  IN CNAME C3.Example.Com.
c3              900   IN CNAME www
c-net           3600  IN CNAME www.example.net.          ; into another loaded zone
c-sub           3600  IN CNAME www.sub.example.com.      ; into the loaded child zone
c-out           3600  IN CNAME www.unloaded.test.        ; leaving our zones
c-wild          3600  IN CNAME foo.wild                  ; into a wildcard
c-nx            3600  IN CNAME nonexistent               ; to an NXDOMAIN name
c-ent           3600  IN CNAME c.ent                     ; to an empty non-terminal
c-deleg         3600  IN CNAME host.deleg                ; below a delegation
c-dname         3600  IN CNAME host.dn                   ; through a DNAME
chain1          3600  IN CNAME chain2                    ; chain of 12 (> 8)
chain2          3600  IN CNAME chain3
chain3          3600  IN CNAME chain4
chain4          3600  IN CNAME chain5
chain5          3600  IN CNAME chain6
chain6          3600  IN CNAME chain7
chain7          3600  IN CNAME chain8
chain8          3600  IN CNAME chain9
chain9          3600  IN CNAME chain10
chain10         3600  IN CNAME chain11
chain11         3600  IN CNAME chain12
chain12         3600  IN A     192.0.2.112
loop1           3600  IN CNAME loop2                     ; loop
loop2           3600  IN CNAME loop3
loop3           3600  IN CNAME loop1
self            3600  IN CNAME self                      ; self loop

; DNAME
dn              3600  IN DNAME dtarget.example.com.      ; in-zone target
dtarget         3600  IN A     192.0.2.130
host.dtarget    3600  IN A     192.0.2.131
*.w.dtarget     3600  IN A     192.0.2.132
dn-net          3600  IN DNAME example.net.              ; target is another loaded zone
dn-out          3600  IN DNAME unloaded.test.            ; target outside our zones
dn-sub          3600  IN DNAME Sub.Example.Com.          ; target is the loaded child zone

; delegation with glue (in-bailiwick NS) and DS at the parent side
deleg           86400 IN NS    ns1.deleg
deleg           86400 IN NS    NS2.Deleg.Example.Com.
deleg           3600  IN DS    12345 13 2 0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0
ns1.deleg       172800 IN A    192.0.2.140
ns1.deleg       172800 IN AAAA 2001:db8::140
ns2.deleg       172800 IN A    192.0.2.141

; delegation without glue: NS targets outside the delegated zone
nogl            86400 IN NS    ns.example.net.
nogl            86400 IN NS    ns.unloaded.test.

; delegation to a child zone that is loaded as a zone of its own (sub.example.com)
sub             86400 IN NS    ns1.sub
sub             86400 IN NS    ns.example.net.
sub             3600  IN DS    54321 13 2 A0B1C2D3E4F5061728394A5B6C7D8E9FA0B1C2D3E4F5061728394A5B6C7D8E9F
ns1.sub         3600  IN A     192.0.2.150

; delegation whose glue does not fit in 512 bytes
bigdeleg        86400 IN NS    ns01.bigdeleg
bigdeleg        86400 IN NS    ns02.bigdeleg
bigdeleg        86400 IN NS    ns03.bigdeleg
bigdeleg        86400 IN NS    ns04.bigdeleg
bigdeleg        86400 IN NS    ns05.bigdeleg
bigdeleg        86400 IN NS    ns06.bigdeleg
bigdeleg        86400 IN NS    ns07.bigdeleg
bigdeleg        86400 IN NS    ns08.bigdeleg
bigdeleg        86400 IN NS    ns09.bigdeleg
bigdeleg        86400 IN NS    ns10.bigdeleg
ns01.bigdeleg   86400 IN A     192.0.2.201
ns01.bigdeleg   86400 IN AAAA  2001:db8::201
ns02.bigdeleg   86400 IN A     192.0.2.202
ns02.bigdeleg   86400 IN AAAA  2001:db8::202
ns03.bigdeleg   86400 IN A     192.0.2.203
ns03.bigdeleg   86400 IN AAAA  2001:db8::203
ns04.bigdeleg   86400 IN A     192.0.2.204
ns04.bigdeleg   86400 IN AAAA  2001:db8::204
ns05.bigdeleg   86400 IN A     192.0.2.205
ns05.bigdeleg   86400 IN AAAA  2001:db8::205
ns06.bigdeleg   86400 IN A     192.0.2.206
ns06.bigdeleg   86400 IN AAAA  2001:db8::206
ns07.bigdeleg   86400 IN A     192.0.2.207
ns07.bigdeleg   86400 IN AAAA  2001:db8::207
ns08.bigdeleg   86400 IN A     192.0.2.208
ns08.bigdeleg   86400 IN AAAA  2001:db8::208
ns09.bigdeleg   86400 IN A     192.0.2.209
ns09.bigdeleg   86400 IN AAAA  2001:db8::209
ns10.bigdeleg   86400 IN A     192.0.2.210
ns10.bigdeleg   86400 IN AAAA  2001:db8::210

; large RRsets: > 512 bytes (TC without EDNS), > 1232 bytes (TC even with EDNS)
big             3600  IN TXT   "big-1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
big             3600  IN TXT   "big-2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
big             3600  IN TXT   "big-3 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
big             3600  IN TXT   "big-4 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
big             3600  IN TXT   "big-5 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
big             3600  IN TXT   "big-6 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
big             3600  IN A     192.0.2.77
{huge}
{many}
{mx_many}
"""

SUB_EXAMPLE_COM = r"""
$ORIGIN sub.example.com.
$TTL 3600
@               3600  IN SOA   ns1.sub.example.com. hostmaster.sub.example.com. 7 7200 3600 1209600 600
@               86400 IN NS    ns1.sub.example.com.
@               86400 IN NS    ns.example.net.
@               3600  IN MX    10 www
ns1             3600  IN A     192.0.2.150
www             300   IN A     192.0.2.151
Deep.Inside     300   IN AAAA  2001:db8::151
back            3600  IN CNAME www.example.com.          ; CNAME back into the parent zone
"""

EXAMPLE_NET = r"""
$ORIGIN example.net.
$TTL 3600
@               3600  IN SOA   ns.example.net. admin.example.net. 42 3600 900 604800 120
@               3600  IN NS    ns.example.net.
ns              3600  IN A     198.51.100.53
ns              3600  IN AAAA  2001:db8:1::53
www             600   IN A     198.51.100.80
mx              600   IN A     198.51.100.25
sip             600   IN A     198.51.100.60
back            3600  IN CNAME www.example.com.          ; CNAME into another loaded zone
"""


def _expand(template: str) -> str:
    huge = "\n".join(f'huge            3600  IN TXT   "huge-{i:02d} {"x" * 200}"' for i in range(1, 9))
    many = "\n".join(f"many            300   IN A     10.0.{i // 250}.{i % 250 + 1}" for i in range(40))
    mx_many = "\n".join(
        line
        for i in range(1, 13)
        for line in (
            f"mx-many         3600  IN MX    {i} mx{i:02d}.mx-many",
            f"mx{i:02d}.mx-many    3600  IN A     192.0.2.{160 + i}",
            f"mx{i:02d}.mx-many    3600  IN AAAA  2001:db8::{160 + i:x}",
        )
    )
    return template.replace("{huge}", huge).replace("{many}", many).replace("{mx_many}", mx_many)


GENERATED_ZONES: dict[str, str] = {
    "example.com": _expand(EXAMPLE_COM),
    "sub.example.com": SUB_EXAMPLE_COM,
    "example.net": EXAMPLE_NET,
}


@dataclasses.dataclass
class ZoneInfo:
    """What query generation needs to know about a loaded zone."""

    name: dns.name.Name
    # owner name (as written, case kept) -> rdata types present there
    owners: dict[dns.name.Name, set[int]]

    def names_with(self, rdtype: int) -> list[dns.name.Name]:
        return sorted(n for n, types in self.owners.items() if rdtype in types)

    def cuts(self) -> list[dns.name.Name]:
        """Delegation points (NS below the apex)."""
        return [n for n in self.names_with(dns.rdatatype.NS) if n != self.name]


def parse_zone(origin: str, text: str) -> ZoneInfo:
    zone = dns.zone.from_text(text, origin=origin, relativize=False, check_origin=True)
    owners = {name: {rds.rdtype for rds in node} for name, node in zone.nodes.items()}
    # dnspython lowercases nothing, but its node keys compare case-insensitively; keep the text
    # of the zone file for owner case (queries pick their own random case anyway).
    return ZoneInfo(name=dns.name.from_text(origin), owners=owners)


def write_zones(zone_dir: pathlib.Path, extra: dict[str, pathlib.Path]) -> list[ZoneInfo]:
    """Write the generated zones (and copy the `extra` corpus zones) into zone_dir.

    Returns ZoneInfo for the generated zones only; corpus zones bring their own query lists.
    """
    infos = []
    for origin, text in GENERATED_ZONES.items():
        (zone_dir / f"{origin}.zone").write_text(text.lstrip())
        infos.append(parse_zone(origin + ".", text))
    for origin, src in extra.items():
        (zone_dir / f"{origin}.zone").write_bytes(src.read_bytes())
    return infos
