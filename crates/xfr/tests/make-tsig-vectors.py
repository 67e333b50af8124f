#!/usr/bin/env python3
"""Writes tsig-vectors.txt: messages signed by dnspython, the oracle for
tern-xfr's TSIG tests. Each line is `ALGORITHM STEP UNSIGNED-HEX SIGNED-HEX`:
a query signed on its own, the first answer signed over the query's MAC, and
two more answers of the same stream signed with the timers only
(RFC 8945 section 5.3.1). The clock is fixed, so the output is stable.

    python3 crates/xfr/tests/make-tsig-vectors.py > crates/xfr/tests/tsig-vectors.txt
"""
import time

import dns.message
import dns.rrset
import dns.tsig

NOW = 1_700_000_000
KEY_NAME = "Transfer-Key."  # mixed case: the MAC covers it lowercased
SECRET = bytes(range(1, 33))
ALGORITHMS = {
    "hmac-md5": dns.tsig.HMAC_MD5,
    "hmac-sha1": dns.tsig.HMAC_SHA1,
    "hmac-sha256": dns.tsig.HMAC_SHA256,
    "hmac-sha384": dns.tsig.HMAC_SHA384,
    "hmac-sha512": dns.tsig.HMAC_SHA512,
}

time.time = lambda: float(NOW)


def unsigned(message):
    """The message's wire form without its TSIG."""
    saved = message.keyring, message.tsig
    message.keyring, message.tsig = None, None
    wire = message.to_wire()
    message.keyring, message.tsig = saved
    return wire


def stream(name, key, request, prefix, sign_middle):
    ctx = None
    for step, records in enumerate(
        [
            [("example.net.", "SOA", "ns.example.net. admin.example.net. 1 2 3 4 5")],
            [("www.example.net.", "A", "192.0.2.1"), ("www.example.net.", "AAAA", "2001:db8::1")],
            [("example.net.", "SOA", "ns.example.net. admin.example.net. 1 2 3 4 5")],
        ]
    ):
        answer = dns.message.make_response(request)
        for owner, rtype, rdata in records:
            answer.answer.append(dns.rrset.from_text(owner, 300, "IN", rtype, rdata))
        plain = unsigned(answer)
        if step == 1 and not sign_middle:
            ctx.update(plain)
            wire = plain
        else:
            wire = answer.to_wire(multi=True, tsig_ctx=ctx)
            ctx = answer.tsig_ctx
        print(name, f"{prefix}{step}", plain.hex(), wire.hex())


for name, algorithm in ALGORITHMS.items():
    key = dns.tsig.Key(KEY_NAME, SECRET, algorithm)
    query = dns.message.make_query("example.net.", "AXFR")
    query.id = 0x1234
    query.use_tsig(key, fudge=300)
    query_wire = query.to_wire()
    print(name, "query", unsigned(query).hex(), query_wire.hex())

    # The answers: a stream of three messages, as a transfer sends them;
    # then the same stream with its middle message left unsigned, which
    # the last message's MAC covers (STEP "gap0", "gap1", "gap2").
    request = dns.message.from_wire(query_wire, keyring=key)
    for prefix, sign_middle in (("answer", True), ("gap", False)):
        stream(name, key, request, prefix, sign_middle)

