"""The validator check: every RRSIG in tern's DO=1 answers verifies against the zone's DNSKEY.

For each section of an answer, every RRSIG record is checked against the RRset it covers (same
owner, type covered, same section) with dnspython's `dns.dnssec.validate_rrsig` (the
`cryptography` package does the arithmetic), at the fixed time `signed.VALIDATION_TIME`, with
the DNSKEY RRsets of the zones being served. An RRSIG whose RRset is not in the section, or
that does not verify, is an error. Wildcard expansions verify too: the validator rebuilds the
`*` owner from the RRSIG's label count.
"""

from __future__ import annotations

import pathlib

import dns.dnssec
import dns.exception
import dns.message
import dns.name
import dns.rdatatype
import dns.zone


def zone_keys(files: dict[str, pathlib.Path]) -> dict[dns.name.Name, dns.rrset.RRset]:
    """The apex DNSKEY RRset of each signed zone file, by zone name."""
    keys = {}
    for origin, path in files.items():
        name = dns.name.from_text(origin)
        zone = dns.zone.from_file(str(path), origin=name, relativize=False, check_origin=False)
        dnskey = zone.get_rrset(name, dns.rdatatype.DNSKEY)
        if dnskey is not None:
            keys[name] = dnskey
    return keys


def check(wire: bytes, keys: dict, now: int) -> tuple[int, list[str]]:
    """(number of RRSIGs verified, errors) for one answer. The answer to a query for type RRSIG
    holds RRSIGs without their RRsets: those are not checked."""
    msg = dns.message.from_wire(wire)
    verified = 0
    errors = []
    for section_name, section in (("answer", msg.answer), ("authority", msg.authority), ("additional", msg.additional)):
        for sigs in section:
            if sigs.rdtype != dns.rdatatype.RRSIG:
                continue
            covered = [r for r in section if r.name == sigs.name and r.rdtype == sigs.covers]
            label = f"{section_name}: RRSIG {dns.rdatatype.to_text(sigs.covers)} at {sigs.name}"
            if not covered:
                if section_name == "answer" and msg.question[0].rdtype == dns.rdatatype.RRSIG:
                    continue
                errors.append(f"{label}: the RRset it covers is not in the section")
                continue
            for sig in sigs:
                try:
                    dns.dnssec.validate_rrsig(covered[0], sig, keys, now=now)
                    verified += 1
                except (dns.dnssec.ValidationFailure, dns.exception.DNSException) as e:
                    errors.append(f"{label} (key tag {sig.key_tag}): {e}")
    return verified, errors
