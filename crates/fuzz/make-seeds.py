#!/usr/bin/env python3
"""Writes the committed seed corpora under crates/fuzz/corpus/<target>/.

Deterministic (no network, no clock): queries and answers built with
dnspython's wire encoder plus hand-made malformed messages, zone snippets
in the style of zones/, and synthetic names. Run from anywhere:
    python3 -B crates/fuzz/make-seeds.py
"""
import os
import struct

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def query(qname, qtype, id_=0x1234, edns=-1, do=False, payload=1232, options=None, rd=True):
    m = dns.message.make_query(qname, qtype, use_edns=edns, want_dnssec=do,
                               payload=payload, options=options or [])
    m.id = id_
    if not rd:
        m.flags &= ~dns.flags.RD
    return m.to_wire()


def answer(q, records, authority=(), additional=(), rcode=0, aa=True):
    m = dns.message.make_response(dns.message.from_wire(q))
    if aa:
        m.flags |= dns.flags.AA
    m.set_rcode(rcode)
    for section, rrs in ((m.answer, records), (m.authority, authority), (m.additional, additional)):
        for (owner, ttl, rtype, text) in rrs:
            section.append(dns.rrset.from_text(owner, ttl, "IN", rtype, text))
    return m.to_wire()


def header(id_=0x1234, flags=0x0100, counts=(1, 0, 0, 0)):
    return struct.pack("!HHHHHH", id_, flags, *counts)


QNAME = b"\x03www\x07example\x03com\x00"


def messages():
    """(name, bytes) of well-formed queries and answers."""
    out = []
    q_a = query("www.example.com.", "A")
    out.append(("query-a", q_a))
    out.append(("query-mixed-case", query("WwW.ExAmPlE.cOm.", "AAAA", id_=7)))
    out.append(("query-edns-do", query("example.com.", "DNSKEY", edns=0, do=True, payload=4096)))
    out.append(("query-edns-small", query("big.example.com.", "TXT", edns=0, payload=100)))
    out.append(("query-cookie", query("example.com.", "SOA", edns=0, options=[
        dns.edns.GenericOption(10, bytes(range(8)))])))
    out.append(("query-cookie-server", query("www.example.com.", "A", edns=0, options=[
        dns.edns.GenericOption(10, bytes(range(8)) + b"\x01\x00\x00\x00" + bytes(12))])))
    out.append(("query-cookie-long", query("nope.example.com.", "A", edns=0, do=True, options=[
        dns.edns.GenericOption(10, bytes(range(40)))])))
    out.append(("query-cookie-twice", query("example.com.", "NS", edns=0, options=[
        dns.edns.GenericOption(10, bytes(8)), dns.edns.GenericOption(10, bytes(range(16)))])))
    out.append(("query-nsid-unknown-opt", query("example.com.", "NS", edns=0, options=[
        dns.edns.GenericOption(3, b""), dns.edns.GenericOption(65001, b"xyz")])))
    out.append(("query-any", query("example.com.", "ANY", rd=False)))
    ch = dns.message.make_query("version.bind.", "TXT", rdclass="CH")
    ch.id = 0x0c0c
    out.append(("query-ch-version", ch.to_wire()))
    out.append(("query-wildcard", query("x.users.example.com.", "A")))
    out.append(("query-dname", query("a.old.example.com.", "A")))
    out.append(("query-cname-loop", query("loop1.example.com.", "A")))
    out.append(("query-referral", query("host.lab.example.com.", "A", edns=0)))
    out.append(("query-nxdomain", query("nope.example.com.", "A", edns=0, do=True)))
    out.append(("query-refused", query("www.example.org.", "A")))
    out.append(("query-axfr", query("example.com.", "AXFR")))
    out.append(("answer-a", answer(q_a, [("www.example.com.", 300, "A", "192.0.2.80")],
                                   authority=[("example.com.", 3600, "NS", "ns1.example.com.")],
                                   additional=[("ns1.example.com.", 3600, "A", "192.0.2.1"),
                                               ("ns1.example.com.", 3600, "AAAA", "2001:db8::1")])))
    q_mx = query("example.com.", "MX", edns=0)
    out.append(("answer-mx-edns", answer(q_mx, [("example.com.", 3600, "MX", "10 mail.example.com.")],
                                         additional=[("mail.example.com.", 3600, "A", "192.0.2.25")])))
    q_soa = query("nope.example.com.", "A")
    out.append(("answer-nxdomain-soa", answer(q_soa, [], authority=[
        ("example.com.", 300, "SOA",
         "ns1.example.com. hostmaster.example.com. 2026112101 7200 3600 1209600 300")], rcode=3)))
    q_cname = query("web.example.com.", "A")
    out.append(("answer-cname", answer(q_cname, [("web.example.com.", 3600, "CNAME", "www.example.com."),
                                                  ("www.example.com.", 3600, "A", "192.0.2.80")])))
    q_srv = query("_sip._udp.example.com.", "SRV")
    out.append(("answer-srv-txt", answer(q_srv, [("_sip._udp.example.com.", 3600, "SRV", "10 60 5060 sip.example.com.")],
                                         additional=[("example.com.", 3600, "TXT", '"v=spf1 mx -all" "second"')])))
    q_ptr = query("1.2.0.192.in-addr.arpa.", "PTR")
    out.append(("answer-ptr", answer(q_ptr, [("1.2.0.192.in-addr.arpa.", 60, "PTR", "ns1.example.com.")])))
    q_caa = query("example.com.", "CAA")
    out.append(("answer-caa-unknown", answer(q_caa, [("example.com.", 60, "CAA", '0 issue "ca.example"'),
                                                      ("example.com.", 60, "TYPE65280", r"\# 3 010203")])))
    return out


def cookie(length):
    """A COOKIE option (RFC 7873) whose value is `length` octets."""
    return struct.pack("!HH", 10, length) + bytes(range(length))


def opt_rr(options):
    """An OPT record (UDP size 1232, version 0) carrying raw `options`."""
    return b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00" + struct.pack("!H", len(options)) + options


def malformed():
    """(name, bytes) of hostile messages, one per issue-6 case."""
    h = header()
    q = QNAME + b"\x00\x01\x00\x01"
    return [
        ("short-11", h[:11]),
        ("qr-set", header(flags=0x8100) + q),
        ("cookie-7", header(counts=(1, 0, 0, 1)) + q + opt_rr(cookie(7))),
        ("cookie-9", header(counts=(1, 0, 0, 1)) + q + opt_rr(cookie(9))),
        ("cookie-41", header(counts=(1, 0, 0, 1)) + q + opt_rr(cookie(41))),
        ("cookie-only-no-question", header(counts=(0, 0, 0, 1)) + opt_rr(cookie(8))),
        ("qdcount-0", header(counts=(0, 0, 0, 0))),
        ("qdcount-2", header(counts=(2, 0, 0, 0)) + q + q),
        ("pointer-loop", header(counts=(1, 1, 0, 0)) + q + b"\xc0\x21\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00"),
        ("pointer-forward", header(counts=(1, 1, 0, 0)) + q + b"\xc0\x30\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00"),
        ("pointer-past-end", header(counts=(1, 1, 0, 0)) + q + b"\xff\xff\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00"),
        ("label-64", header() + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01"),
        ("name-256", header() + (b"\x3f" + b"a" * 63) * 4 + b"\x00\x00\x01\x00\x01"),
        ("counts-past-end", header(counts=(1, 0xffff, 0xffff, 0xffff)) + q),
        ("rdlength-past-end", header(counts=(1, 1, 0, 0)) + q + b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\xff\xff\x01"),
        ("trailing-garbage", header() + q + b"garbage"),
        ("two-opt", header(counts=(1, 0, 0, 2)) + q + b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00" * 2),
        ("opt-in-answer", header(counts=(1, 1, 0, 0)) + q + b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"),
        ("opt-non-root", header(counts=(1, 0, 0, 1)) + q + b"\xc0\x0c\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"),
        ("opt-bad-option", header(counts=(1, 0, 0, 1)) + q + b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x03\x00\x0a\x00"),
        ("edns-version-1", header(counts=(1, 0, 0, 1)) + q + b"\x00\x00\x29\x04\xd0\x00\x01\x00\x00\x00\x00"),
        ("opcode-notify", header(flags=0x2000) + q),
        ("opcode-15-flags", header(flags=0x7f30) + q),
        ("tc-z-ad-cd", header(flags=0x0370) + q),
        ("label-type-01", header() + b"\x41a\x00\x00\x01\x00\x01"),
        ("ns-rdata-pointer-into-next", header(flags=0x8400, counts=(1, 1, 0, 0)) + q +
         b"\xc0\x0c\x00\x02\x00\x01\x00\x00\x00\x3c\x00\x02\xc0\x0c"),
    ]


ZONES = {
    "example-com": open(os.path.join(HERE, "../../zones/example.com.zone"), "rb").read(),
    "directives": b"$ORIGIN sub.fuzz.\n$TTL 300\n@ IN SOA ns hostmaster 1 2 3 4 5\n"
                  b"@ NS ns\nns A 192.0.2.1\n$GENERATE 1-5 host$ A 192.0.2.$\n",
    "escapes-quotes": b'a\\.b 60 IN TXT "quoted \\"string\\"" unquoted \\065\\066\n'
                      b'\\@\\$ 60 IN TXT ""\nsp\\032ace 60 IN A 192.0.2.9\n',
    "parens-comments": b"@ 3600 IN SOA ns1 hm ( 1 ; serial\n 7200 3600\n 1209600 300 )\n; comment only\n",
    "generic-rdata": b"x 60 IN TYPE65280 \\# 4 DEADBEEF\ny 60 IN A \\# 4 C0000201\nz 60 CLASS1 TYPE1 192.0.2.3\n",
    "many-types": b"@ 60 IN MX 10 mail\n@ 60 IN SRV 0 5 5060 sip\n@ 60 IN CAA 0 issue \"ca.example\"\n"
                  b"@ 60 IN AAAA 2001:db8::1\n@ 60 IN PTR host\n@ 60 IN HINFO \"cpu\" \"os\"\n"
                  b"@ 60 IN SSHFP 1 1 0123456789ABCDEF0123456789ABCDEF01234567\n"
                  b"@ 60 IN DS 12345 8 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE23A6EB6A1B3C5D7E\n"
                  b"old 60 IN DNAME users\n",
    "dnssec": b"@ 60 IN DNSKEY 257 3 8 AwEAAag=\n@ 60 IN NSEC a.fuzz. A NS SOA RRSIG NSEC\n"
              b"@ 60 IN RRSIG A 8 1 60 20260101000000 20250101000000 12345 fuzz. AAAA\n"
              b"@ 60 IN NSEC3PARAM 1 0 10 AABB\n",
    "errors": b"bad 60 IN A 300.1.1.1\n@ IN AAA ::1\n$INCLUDE other.zone\n$ORIGIN\n",
    "relative-at-ttl": b"$TTL 1h\n@ IN A 192.0.2.1\n  IN AAAA ::1\nwww 1d2h IN CNAME @\n",
}

NAMES = [
    b"www.example.com.", b"WwW.ExAmPlE.CoM.", b"relative.name", b".", b"@",
    b"a\\.b.example.", b"\\@\\$\\(\\).x.", b"\\000\\255\\032.", b"*.wild.example.",
    b"a" * 63 + b".", b"a" * 64 + b".", (b"b" * 63 + b".") * 3 + b"c" * 61 + b".",
    b"..", b"a..b.", b"\\", b"\\25", b"\\256.", b"xn--bcher-kva.example.",
    b"\x03www\x07example\x03com\x00", b"\x00", b"\x01.\x01\\\x00",
]


# The forward_answer target's question types, in the order of
# tern_cache::fuzzing::TYPES (the selector's low four bits).
FORWARD_TYPES = ["A", "AAAA", "CNAME", "DNAME", "MX", "SRV", "TXT", "NS", "SOA", "ANY",
                 "PTR", "NAPTR", "HTTPS", "RRSIG", "MB", "MINFO"]


def generic(rdata):
    """RFC 3597 text for RDATA dnspython has no text format for."""
    return "\\# %d %s" % (len(rdata), rdata.hex())


def forward_answers():
    """(name, bytes) seeds of forward_answer: a selector octet (type index, 0x10 for an
    EDNS client), then an upstream answer to www.example.com. without its ID and
    question (the target puts back the ones it sent)."""
    soa = ("example.com.", 300, "SOA", "ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300")
    cases = [
        ("a", "A", [("www.example.com.", 300, "A", "192.0.2.1")], [], 0),
        ("aaaa", "AAAA", [("www.example.com.", 300, "AAAA", "2001:db8::1")], [], 0),
        ("cname-chain", "A", [("www.example.com.", 300, "CNAME", "web.example.com."),
                              ("web.example.com.", 60, "A", "192.0.2.2")], [], 0),
        ("cname", "CNAME", [("www.example.com.", 300, "CNAME", "web.example.com.")], [], 0),
        ("dname-asked", "DNAME", [("www.example.com.", 300, "DNAME", "example.net.")], [], 0),
        ("mx", "MX", [("www.example.com.", 300, "MX", "10 mail.example.com.")], [], 0),
        ("srv", "SRV", [("www.example.com.", 300, "SRV", "0 1 5060 sip.example.com.")], [], 0),
        ("txt", "TXT", [("www.example.com.", 300, "TXT", '"v=spf1 -all" "two"')], [], 0),
        ("ns", "NS", [("www.example.com.", 300, "NS", "ns1.example.com.")], [], 0),
        ("soa", "SOA", [("www.example.com.", 300, "SOA",
                         "ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300")], [], 0),
        ("ptr", "PTR", [("www.example.com.", 300, "PTR", "host.example.com.")], [], 0),
        ("naptr", "NAPTR", [("www.example.com.", 300, "NAPTR",
                             '100 10 "u" "E2U+sip" "!^.*$!sip:a@example.com!" .')], [], 0),
        ("https", "HTTPS", [("www.example.com.", 300, "HTTPS", "1 . alpn=h2")], [], 0),
        ("mb", "MB", [("www.example.com.", 300, "MB", generic(b"\x04mbox\x07example\x03com\x00"))],
         [], 0),
        ("minfo", "MINFO", [("www.example.com.", 300, "MINFO",
                             generic(b"\x01r\x07example\x03com\x00\x01e\x07example\x03com\x00"))],
         [], 0),
        ("nxdomain", "A", [], [soa], 3),
        ("nodata", "AAAA", [], [soa], 0),
        ("servfail", "A", [], [], 2),
    ]
    out = []
    for name, rtype, records, authority, rcode in cases:
        for edns in (False, True):
            q = query("www.example.com.", rtype, edns=0 if edns else -1)
            wire = answer(q, records, authority=authority, rcode=rcode, aa=False)
            qlen = len(QNAME) + 4
            selector = FORWARD_TYPES.index(rtype) | (0x10 if edns else 0)
            out.append(("%s%s" % (name, "-edns" if edns else ""),
                        bytes([selector]) + wire[2:12] + wire[12 + qlen:]))
    # Truncated (asked again over TCP), and a pointer into the header.
    q = query("www.example.com.", "A")
    wire = bytearray(answer(q, [("www.example.com.", 300, "A", "192.0.2.1")], aa=False))
    wire[2] |= 0x02
    out.append(("truncated", bytes([0]) + bytes(wire[2:12]) + bytes(wire[12 + len(QNAME) + 4:])))
    rest = bytearray(wire[2:12]) + bytearray(wire[12 + len(QNAME) + 4:])
    rest[0] &= ~0x02
    rest[10 + 1] = 2  # the answer's owner pointer: into the header
    out.append(("pointer-into-header", bytes([0]) + bytes(rest)))
    return out


def xfr_seeds():
    """(name, bytes) seeds of xfr_incoming: a selector octet (1: IXFR from serial 7),
    then (length, message) pairs of a primary's answer to `example.` AXFR/IXFR."""
    def soa(serial):
        return ("example.", 300, "SOA", f". . {serial} 3600 900 604800 300")
    def framed(*messages):
        return b"".join(struct.pack("!H", len(m)) + m for m in messages)
    axfr = query("example.", "AXFR", id_=0x4242, rd=False)
    ixfr = query("example.", "IXFR", id_=0x4242, rd=False)
    body = [("www.example.", 300, "A", "192.0.2.2"),
            ("example.", 300, "NS", "ns.example."),
            ("ns.example.", 300, "A", "192.0.2.53"),
            ("mail.example.", 300, "MX", "10 ns.example."),
            ("txt.example.", 300, "TXT", '"text"')]
    yield "axfr-one-message", b"\0" + framed(answer(axfr, [soa(8)] + body + [soa(8)]))
    yield "axfr-two-messages", b"\0" + framed(answer(axfr, [soa(8)] + body[:2]),
                                              answer(axfr, body[2:] + [soa(8)]))
    yield "ixfr-current", b"\1" + framed(answer(ixfr, [soa(7)]))
    yield "ixfr-full", b"\1" + framed(answer(ixfr, [soa(8)] + body + [soa(8)]))
    yield "ixfr-differences", b"\1" + framed(answer(ixfr, [
        soa(8), soa(7), ("www.example.", 300, "A", "192.0.2.1"),
        soa(8), ("www.example.", 300, "A", "192.0.2.9"), soa(8)]))
    yield "axfr-refused", b"\0" + framed(answer(axfr, [], rcode=5))


def update_seeds():
    """UPDATE messages for the zone of tern_update::fuzzing (example.); the
    ID's low bit makes the zone signed, the next caps its size."""
    import dns.update

    def msg(id_=0x1000, zone="example."):
        m = dns.update.UpdateMessage(zone)
        m.id = id_
        return m

    m = msg(); m.add("_acme-challenge", 60, "TXT", '"token"')
    yield "add-txt", m.to_wire()
    m = msg(); m.delete("www", "TXT", '"hello"')
    yield "delete-rr", m.to_wire()
    m = msg(); m.delete("www", "A")
    yield "delete-rrset", m.to_wire()
    m = msg(); m.delete("www")
    yield "delete-name", m.to_wire()
    m = msg(); m.delete("@")
    yield "delete-apex", m.to_wire()
    m = msg(); m.present("www"); m.add("www", 300, "AAAA", "2001:db8::80")
    yield "prereq-in-use", m.to_wire()
    m = msg(); m.absent("new"); m.add("new", 300, "A", "192.0.2.9")
    yield "prereq-not-in-use", m.to_wire()
    m = msg(); m.present("www", "A"); m.replace("www", 600, "A", "192.0.2.81")
    yield "prereq-rrset-exists", m.to_wire()
    m = msg(); m.present("www", "A", "192.0.2.80"); m.delete("www", "A", "192.0.2.80")
    yield "prereq-value", m.to_wire()
    m = msg(); m.absent("www", "MX"); m.add("www", 300, "MX", "10 www")
    yield "prereq-rrset-absent", m.to_wire()
    m = msg(); m.present("nowhere")
    yield "fail-nxdomain", m.to_wire()
    m = msg(); m.absent("www")
    yield "fail-yxdomain", m.to_wire()
    m = msg(); m.present("www", "MX")
    yield "fail-nxrrset", m.to_wire()
    m = msg(); m.absent("www", "A")
    yield "fail-yxrrset", m.to_wire()
    m = msg(); m.present("www", "A", "192.0.2.99")
    yield "fail-value", m.to_wire()
    m = msg(); m.add("www.example.net.", 300, "A", "192.0.2.1")
    yield "notzone", m.to_wire()
    m = msg(); m.add("www", 300, "CNAME", "alias"); m.add("alias", 300, "CNAME", "ns1")
    yield "cname-rules", m.to_wire()
    m = msg(); m.add("alias", 300, "A", "192.0.2.7"); m.add("x.old", 300, "A", "192.0.2.7")
    yield "cname-dname-ignored", m.to_wire()
    m = msg(); m.add("c", 300, "DNAME", "example.org."); m.add("fresh", 300, "DNAME", "example.org.")
    yield "dname-rules", m.to_wire()
    m = msg(); m.add("@", 300, "SOA", "ns1 hostmaster 100 3600 900 604800 300")
    yield "soa-higher", m.to_wire()
    m = msg(); m.add("@", 300, "SOA", "ns1 hostmaster 6 3600 900 604800 300")
    yield "soa-lower", m.to_wire()
    m = msg(); m.delete("@", "NS", "ns1"); m.delete("@", "NS", "ns2"); m.delete("@", "SOA")
    yield "apex-protected", m.to_wire()
    m = msg(); m.add("www", 300, "TXT", '"x"'); m.add("www", 300, "NSEC3PARAM", "1 0 0 -")
    yield "nsec3param-below-apex", m.to_wire()
    m = msg(0x1001); m.add("www", 300, "NSEC", "www A")
    yield "signed-nsec", m.to_wire()
    m = msg(0x1002)
    for i in range(8):
        m.add("many", 300, "A", "192.0.2.%d" % i)
    yield "too-many-records", m.to_wire()
    m = msg(); m.add("sub", 300, "NS", "ns2.sub"); m.add("ns2.sub", 300, "A", "192.0.2.54")
    yield "delegation-glue", m.to_wire()
    m = msg(zone="example.org."); m.add("www", 300, "A", "192.0.2.1")
    yield "notauth", m.to_wire()
    # A TSIG record by hand (fixed time, MAC not checked by the target).
    m = msg(); m.add("_acme-challenge", 60, "TXT", '"signed"')
    wire = bytearray(m.to_wire())
    wire[11] += 1
    alg = dns.name.from_text("hmac-sha256.").to_wire()
    rdata = alg + struct.pack("!HIHH", 0, 1_800_000_000, 300, 32) + bytes(32) + struct.pack("!HHH", 0x1000, 0, 0)
    owner = dns.name.from_text("acme-key.").to_wire()
    yield "tsig", bytes(wire) + owner + struct.pack("!HHIH", 250, 255, 0, len(rdata)) + rdata
    add = msg(); add.add("www", 300, "A", "192.0.2.9")
    wire = bytearray(add.to_wire())
    # A class ANY deletion with a TTL, an update of class CH, a zone of
    # type A, two zones, a trailing octet, a response.
    bad = msg(); bad.delete("www", "A")
    b = bytearray(bad.to_wire()); b[-5] = 1
    yield "formerr-any-ttl", bytes(b)
    b = bytearray(wire); b[-12] = 3
    yield "formerr-class", bytes(b)
    b = bytearray(wire); b[12 + 9] = 1
    yield "formerr-zone-type", bytes(b)
    yield "formerr-trailing", bytes(wire) + b"\0"
    b = bytearray(wire); b[2] |= 0x80
    yield "formerr-response", bytes(b)
# sign_zone (tern_dnssec::fuzzing::sign): an options octet, then 4 octets per record:
# depth and first label, second and third labels, type and TTL, value. Labels and
# types index the tables of crates/dnssec/src/fuzzing.rs.
SIGN_LABELS = ["a", "b", "c", "*", "www", "ns", "sub", "A", "B", "xn--9a", "x-y", "\\.",
               "\\255", "0", "z", "Sub"]
SIGN_TYPES = ["A", "AAAA", "TXT", "NS", "DS", "MX", "CNAME", "DNAME", "SOA", "NSEC", "RRSIG",
              "DNSKEY", "NSEC3PARAM", "CAA", "CDS", "TYPE1234"]


def sign_record(owner, rtype, value, ttl_index=0):
    """The 4 octets of one record: `owner` as labels (up to 3, from SIGN_LABELS)."""
    labels = [SIGN_LABELS.index(label) for label in owner] + [0, 0, 0]
    a = len(owner) | (labels[0] << 4)
    b = labels[1] | (labels[2] << 4)
    c = SIGN_TYPES.index(rtype) | (ttl_index << 6)
    return bytes([a, b, c, value])


def sign_seeds():
    # A zone with each kind of name: data, a wildcard, empty non-terminals (a.b.c),
    # an insecure delegation with glue (sub), a secure one (a, with DS), a CNAME,
    # records to replace (RRSIG, NSEC, an apex DNSKEY and NSEC3PARAM), CDS and CAA
    # at the apex, a generic type, and mixed case (A, B, Sub).
    zone = b"".join([
        sign_record(["www"], "A", 80),
        sign_record(["www"], "AAAA", 80),
        sign_record(["*", "b"], "TXT", 9),
        sign_record(["a", "b", "c"], "A", 3),
        sign_record(["sub"], "NS", 1),              # target "a" (value 1: one label, a)
        sign_record(["ns", "sub"], "A", 53),        # glue
        sign_record(["a"], "NS", 0),                # target outside the zone
        sign_record(["a"], "DS", 13),
        sign_record(["z"], "CNAME", 0x11),
        sign_record(["www"], "RRSIG", 1),
        sign_record(["www"], "NSEC", 1),
        sign_record([], "DNSKEY", 1),
        sign_record([], "NSEC3PARAM", 0),
        sign_record([], "CDS", 2),
        sign_record([], "CAA", 3),
        sign_record(["x-y"], "TYPE1234", 4, ttl_index=1),
        sign_record(["A", "B"], "MX", 0x25),
        sign_record(["Sub", "b"], "TXT", 5, ttl_index=2),
    ])
    # Options: bit 0 NSEC3, 1 opt-out, 2 KSK+ZSK, 3 Ed25519, 4-5 iterations, 6 salt,
    # 7 a serial served before.
    for options, name in ((0x00, "nsec-csk-p256"), (0x0c, "nsec-kz-ed25519"),
                          (0x01, "nsec3-csk-p256"), (0x4d, "nsec3-salt-kz-ed25519"),
                          (0x03, "nsec3-optout-csk-p256"), (0x1f, "nsec3-optout-1-kz-ed25519"),
                          (0xa1, "nsec3-5-serial-csk-p256"), (0x80, "nsec-serial-csk-p256")):
        yield name, bytes([options]) + zone
    yield "apex-only", b"\x00"
    # Refused by the checks: a CNAME beside other data.
    yield "cname-and-data", b"\x00" + sign_record(["www"], "CNAME", 0) + sign_record(["www"], "A", 1)


# signed_update (tern_zones::fuzzing::signed_update): a zone octet (low two bits: 0 NSEC,
# 1 NSEC3, 2 NSEC3 opt-out; bits 2-7 the optional parts of the zone), then updates: a
# header (its records less one in the low two bits; 0x80: the group goes on after it) and
# 3 octets a record: owner (5 bits), operation (2 bits), TTL 60 (bit 7); type (low 4
# bits); value. Owners and types index the tables of crates/zones/src/fuzzing.rs.
SU_OWNERS = ["@", "a", "b.a", "c.b.a", "new", "n.new", "e2", "e1.e2", "c.e1.e2", "sub", "ns.sub",
             "deep.x.sub", "sec", "g.sec", "*.w", "q.w", "w", "z.*.w", "dn", "x.dn", "e", "x.e",
             "ns.x.e", "y.e", "h0", "h7", "y.h0", "ns", "zz", "*", "mail", "a.b.c.d.deep"]
SU_TYPES = ["A", "AAAA", "NS", "DS", "DNAME", "TXT", "MX", "CNAME", "A", "NS", "DS", "TXT", "SOA",
            "SRV", "ANY", "CAA"]
SU_OPS = ["add", "del-rrset", "del-name", "del-rr"]


def su_update(records, more=False):
    """One update: `records` as (operation, owner, type, value[, TTL 60]); `more`: the
    group goes on after it."""
    out = bytearray([(len(records) - 1) | (0x80 if more else 0)])
    for record in records:
        op, owner, rtype, value = record[:4]
        short_ttl = len(record) > 4 and record[4]
        out += bytes([SU_OWNERS.index(owner) | (SU_OPS.index(op) << 5) | (0x80 if short_ttl else 0),
                      SU_TYPES.index(rtype), value])
    return bytes(out)


def signed_update_seeds():
    # The zone octet's parts (bits 2-7): 0xfc all of them (cuts, DS, ENTs, wildcard,
    # DNAME, more hosts), 0x24 the insecure delegation and the wildcard, 0 none.
    families = {
        # Delegations made, removed and made again in one group, DS added and removed.
        "cut": (0xfc, [
            su_update([("add", "new", "NS", 3), ("add", "n.new", "A", 7)]),
            su_update([("del-rrset", "sub", "NS", 1)]),
            su_update([("add", "sub", "NS", 1)], more=True),
            su_update([("add", "sub", "DS", 4)]),
            su_update([("del-rrset", "sec", "DS", 1)]),
            su_update([("add", "a", "NS", 2)]),
        ]),
        # DNAMEs made above names, data under one, the zone's removed.
        "dname": (0xfc, [
            su_update([("add", "a", "DNAME", 6)]),
            su_update([("add", "x.dn", "A", 4)]),
            su_update([("del-rrset", "dn", "DNAME", 1)]),
            su_update([("add", "h0", "DNAME", 6), ("add", "e", "DNAME", 6)]),
        ]),
        "hosts": (0xfc, [
            su_update([("add", "h0", "TXT", 3)]),
            su_update([("add", "new", "A", 5), ("add", "mail", "MX", 5)]),
            su_update([("del-name", "h7", "ANY", 1)]),
            su_update([("del-rr", "a", "A", 2), ("add", "a", "AAAA", 9)]),
        ]),
        "small": (0x00, [
            su_update([("add", "new", "A", 5)]),
            su_update([("add", "h0", "NS", 0)]),
            su_update([("add", "b.a", "CNAME", 5)]),
        ]),
        # The SOA's TTL changed (the whole zone signed), then windows again.
        "soa-ttl": (0x24, [
            su_update([("add", "@", "SOA", 200, True)]),
            su_update([("add", "x.dn", "TXT", 1), ("add", "sub", "DS", 9)]),
            su_update([("del-rrset", "dn", "DNAME", 1), ("add", "deep.x.sub", "A", 5)]),
        ]),
        # The SOA's TTL changed twice (the whole zone signed, then again from the
        # signer's records the first signing kept), then a window.
        "soa-twice": (0x24, [
            su_update([("add", "@", "SOA", 200, True)]),
            su_update([("add", "@", "SOA", 201)]),
            su_update([("add", "new", "A", 5)]),
        ]),
        # Below the wildcard, the wildcard removed, one at the apex, empty non-terminals.
        "wild-ent": (0xfc, [
            su_update([("add", "z.*.w", "A", 8)]),
            su_update([("del-rrset", "*.w", "TXT", 1)]),
            su_update([("add", "*", "TXT", 2), ("add", "y.e", "A", 3)]),
            su_update([("del-name", "c.e1.e2", "ANY", 1)]),
            su_update([("add", "a.b.c.d.deep", "A", 1), ("add", "e1.e2", "TXT", 1)]),
        ]),
    }
    for denial, prefix in enumerate(("nsec", "nsec3", "optout")):
        for name, (parts, updates) in families.items():
            yield "%s-%s" % (prefix, name), bytes([parts | denial]) + b"".join(updates)


def main():
    for name, data in sign_seeds():
        write("sign_zone", name, data)
    for name, data in messages():
        for target in ("parse_message", "roundtrip", "respond"):
            write(target, name, data)
    for name, data in malformed():
        for target in ("parse_message", "roundtrip", "respond"):
            write(target, name, data)
    for name, data in ZONES.items():
        write("zone_scan", name, data)
    for i, data in enumerate(NAMES):
        write("name_from_text", "name-%02d" % i, data)
    for name, data in forward_answers():
        write("forward_answer", name, data)
    for name, data in xfr_seeds():
        write("xfr_incoming", name, data)
    for name, data in update_seeds():
        write("update", name, data)
    for name, data in signed_update_seeds():
        write("signed_update", name, data)


if __name__ == "__main__":
    main()
