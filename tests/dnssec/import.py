#!/usr/bin/env python3
"""A signed zone moves from BIND to tern without a rollover (`tern keys import`, issue 24),
and tern signs with RSA/SHA-256 keys of its own.

BIND's `dnssec-keygen` makes the keys and `dnssec-signzone` signs each zone with them; the
test notes the DNSKEY RRset BIND's signed zone has. Then `tern keys import` takes the
same files and tern serves the zones:

    p256.test  ECDSA P-256 KSK and ZSK (`.key` and `.private`), policy ksk-zsk, NSEC
    rsa.test   RSA/SHA-256 2048-bit KSK and ZSK made for a BIND `dnssec-policy`
               (`dnssec-keygen -k`: `.key`, `.private` and `.state`), NSEC3
    ed.test    one Ed25519 key with flags 257, imported as a CSK (no ZSK beside it)
    pem.test   an ECDSA P-256 key in a PKCS#8 PEM file written by Python's `cryptography`
               (OpenSSL's writer), imported with `--role csk --algorithm ecdsap256sha256`
    knot.test  an ECDSA P-256 CSK made by Knot's `keymgr generate` (its `keys/ID.pem`,
               GnuTLS's PKCS#8), imported the same way: a move from Knot
    new.test   no import: policy `algorithm: rsasha256, key-size: 3072`, KSK and ZSK that
               tern generates (RSA from scratch)

Checked, in order (each step fails the script with tern's log):

1. Every import prints each key with BIND's key tag; importing a key again is refused (the
   key tag is the zone's already), and so is a zone without a dnssec-policy.
2. tern serves each zone read back by AXFR with exactly BIND's DNSKEY RRset (the same
   RDATA, so the same key tags), every RRSIG made by an imported key (the DNSKEY RRset by
   the KSK, the SOA by the ZSK), and the AXFR passes BIND's `dnssec-verify` and ldns's
   `ldns-verify-zone`; the PEM zone's DNSKEY is the PEM key's public key, the Knot
   zone's the one `keymgr dnskey` prints; new.test's keys are
   RSA of 3072 bits (RFC 3110 form), and it verifies the same way.
3. While tern runs, a third key (a new ZSK from `dnssec-keygen`) is imported into
   p256.test and `tern reload p256.test.` is sent: tern's DNSKEY RRset becomes BIND's plus
   that key, and the zone still verifies.

Usage (from the repository root; loopback only; starts and stops its tern):

    TERN_BIN=target/release/tern python3 tests/dnssec/import.py
"""

from __future__ import annotations

import base64
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.dnssec  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.rdata  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.zone  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)
import wire  # noqa: E402  (tests/differential/wire.py)

P256, RSA, ED, PEM, KNOT, NEW = (
    "p256.test", "rsa.test", "ed.test", "pem.test", "knot.test", "new.test")
IMPORTED = [P256, RSA, ED, PEM, KNOT]
COMMAND_TIMEOUT = 120
# How long tern may take to start, or to serve a reloaded zone.
WAIT = 60.0

current_tern: smod.Server | None = None


def zone_text(origin: str) -> str:
    return "\n".join([
        f"$ORIGIN {origin}.",
        "$TTL 3600",
        "@ SOA ns1 hostmaster 1 7200 3600 1209600 300",
        "  NS ns1",
        "  MX 10 mail",
        "ns1 A 192.0.2.1",
        "mail A 192.0.2.25",
        "www A 192.0.2.80",
        "  AAAA 2001:db8::80",
        "* TXT \"wildcard\"",
        "a.b.c A 192.0.2.3",          # b.c and c: empty non-terminals
        "sub NS ns.sub",              # an insecure delegation with glue
        "ns.sub A 192.0.2.53",
        "secure NS ns.example.net.",  # a secure one
        "secure DS 12345 13 2 " + "ab" * 32,
    ]) + "\n"


class ImportTern(harness.ConfiguredTern):
    """tern with its configuration file only: the zones are the configuration's list."""

    def command(self) -> list[str]:
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--config", str(self.workdir.parent / "tern.yaml")]


def fail(message: str) -> None:
    print(f"dnssec/import: FAIL: {message}")
    if current_tern is not None:
        print(f"--- tern log:\n{current_tern.log_tail(60)}")
    sys.exit(1)


def run(command: list[str], cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
                          cwd=cwd)


def must(command: list[str], cwd: pathlib.Path | None = None) -> str:
    done = run(command, cwd)
    if done.returncode != 0:
        fail(f"{' '.join(command)}: exit {done.returncode}: {done.stdout[-600:]} "
             f"{done.stderr[-600:]}")
    return done.stdout


def keygen(keys: pathlib.Path, origin: str, *args: str) -> pathlib.Path:
    """dnssec-keygen in `keys`; the new key's path without suffix."""
    stem = must(["dnssec-keygen", "-K", str(keys), *args, f"{origin}."]).strip().splitlines()[-1]
    return keys / stem


def apex_dnskeys(zone: dns.zone.Zone) -> list:
    return list(zone.find_rdataset(zone.origin, dns.rdatatype.DNSKEY))


def dnskey_set(zone: dns.zone.Zone) -> set[bytes]:
    return {rdata.to_wire() for rdata in apex_dnskeys(zone)}


def tags(wires: set[bytes]) -> list[int]:
    """The key tags of DNSKEY RDATA in wire form."""
    return sorted(dns.dnssec.key_id(dns.rdata.from_wire(1, dns.rdatatype.DNSKEY, wire, 0,
                                                        len(wire))) for wire in wires)


def read_zone(origin: str, path: pathlib.Path) -> dns.zone.Zone:
    return dns.zone.from_file(str(path), origin=f"{origin}.", relativize=False)


def verify(origin: str, path: pathlib.Path, csk_only: bool) -> str:
    """`path` passes dnssec-verify and ldns-verify-zone; their last words."""
    command = ["dnssec-verify", "-o", f"{origin}."] + (["-z"] if csk_only else []) + [str(path)]
    done = run(command)
    if done.returncode != 0:
        fail(f"dnssec-verify rejects {path}: {done.stdout[-600:]} {done.stderr[-600:]}")
    lines = (done.stdout + done.stderr).splitlines()
    first = next((line.strip() for line in lines if "Algorithm:" in line), lines[-1].strip())
    done = run(["ldns-verify-zone", str(path)])
    if done.returncode != 0:
        fail(f"ldns-verify-zone rejects {path}: {done.stdout[-600:]} {done.stderr[-600:]}")
    return f"dnssec-verify: {first}; ldns-verify-zone: " \
           f"{(done.stdout + done.stderr).strip().splitlines()[-1]}"


def axfr(tern: smod.Server, origin: str, path: pathlib.Path) -> dns.zone.Zone:
    done = run(["dig", f"@{tern.addr[0]}", "-p", str(tern.addr[1]), f"{origin}.", "AXFR",
                "+onesoa", "+nocmd", "+nostats"])
    if done.returncode != 0 or "Transfer failed" in done.stdout or "SOA" not in done.stdout:
        fail(f"AXFR of {origin} failed: {done.stdout[-400:]} {done.stderr[-400:]}")
    path.write_text(done.stdout)
    return read_zone(origin, path)


def served_dnskeys(tern: smod.Server, origin: str) -> set[bytes]:
    message = dns.message.make_query(f"{origin}.", "DNSKEY", want_dnssec=True)
    message.flags &= ~dns.flags.RD
    reply = wire.exchange(message.to_wire(), tern.addr, tcp=True, timeout=2.0, retries=2)
    if not reply.ok:
        fail(f"{origin} DNSKEY: no answer: {reply.error}")
    return {rdata.to_wire() for rrset in reply.message.answer
            if rrset.rdtype == dns.rdatatype.DNSKEY for rdata in rrset}


def signers(zone: dns.zone.Zone, rtype: int) -> set[int]:
    """The key tags of the RRSIGs over the apex's `rtype` RRset."""
    rrsigs = zone.find_rdataset(zone.origin, dns.rdatatype.RRSIG, covers=rtype)
    return {rdata.key_tag for rdata in rrsigs}


def import_keys(binary: pathlib.Path, config: pathlib.Path, origin: str,
                files: list[pathlib.Path], *extra: str) -> subprocess.CompletedProcess:
    return run([str(binary), "keys", "import", "--config", str(config), *extra, f"{origin}.",
                *map(str, files)])


def main() -> None:
    global current_tern
    with tempfile.TemporaryDirectory(prefix="tern-import-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir, keys, state = tmp / "zones", tmp / "bind-keys", tmp / "state"
        zone_dir.mkdir()
        keys.mkdir()
        for origin in IMPORTED + [NEW, "plain.test"]:
            (zone_dir / f"{origin}.zone").write_text(zone_text(origin))

        # BIND's keys, and each zone signed by dnssec-signzone with them.
        keygen(keys, P256, "-a", "ECDSAP256SHA256", "-f", "KSK")
        keygen(keys, P256, "-a", "ECDSAP256SHA256")
        (tmp / "named.conf").write_text(
            'dnssec-policy "rsa" { keys { ksk lifetime unlimited algorithm rsasha256 2048; '
            'zsk lifetime unlimited algorithm rsasha256 2048; }; };\n')
        must(["dnssec-keygen", "-K", str(keys), "-l", str(tmp / "named.conf"), "-k", "rsa",
              f"{RSA}."])
        if len(list(keys.glob(f"K{RSA}.+008+*.state"))) != 2:
            fail(f"dnssec-keygen -k made no two .state files: {sorted(keys.iterdir())}")
        keygen(keys, ED, "-a", "ED25519", "-f", "KSK")
        expected_dnskeys: dict[str, set[bytes]] = {}
        for origin in (P256, RSA, ED):
            signed = tmp / f"{origin}.bind"
            must(["dnssec-signzone", "-S", "-K", str(keys), "-d", str(tmp), "-o", f"{origin}.",
                  "-f", str(signed)] + (["-z"] if origin == ED else [])
                 + (["-3", "-"] if origin == RSA else []) + [str(zone_dir / f"{origin}.zone")])
            verify(origin, signed, csk_only=origin == ED)
            expected_dnskeys[origin] = dnskey_set(read_zone(origin, signed))
            wanted = 1 if origin == ED else 2
            if len(expected_dnskeys[origin]) != wanted:
                fail(f"BIND signed {origin} with {len(expected_dnskeys[origin])} keys, not {wanted}")
            print(f"dnssec/import: BIND signed {origin} with key tags {tags(expected_dnskeys[origin])}")
        # pem.test's key as PKCS#8 PEM, and its public key in DNSSEC form (x and y).
        private = ec.generate_private_key(ec.SECP256R1())
        pem = tmp / "pem-key.pem"
        pem.write_bytes(private.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
        pem_public = private.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)[1:]
        # knot.test's CSK from Knot's keymgr, and the DNSKEY it prints for it.
        kasp = tmp / "kasp"
        kasp.mkdir()
        knot_id = must(["keymgr", "-D", str(kasp), f"{KNOT}.", "generate", "algorithm=13",
                        "ksk=yes", "zsk=yes"]).strip().splitlines()[0]
        knot_record = must(["keymgr", "-D", str(kasp), f"{KNOT}.", "dnskey", knot_id]).split()
        if knot_record[1:3] != ["DNSKEY", "257"]:
            fail(f"keymgr dnskey printed {knot_record}")
        expected_dnskeys[KNOT] = {dns.rdata.from_text("IN", "DNSKEY",
                                                  " ".join(knot_record[2:])).to_wire()}

        config = tmp / "tern.yaml"
        config.write_text(f"""control-socket: {tmp}/tern.sock
state-directory: {state}
transfer:
  allow: ["127.0.0.1"]
dnssec:
  policies:
    - {{name: p256, keys: ksk-zsk}}
    - {{name: rsa, algorithm: rsasha256, keys: ksk-zsk, nsec3: {{iterations: 0}}}}
    - {{name: ed, algorithm: ed25519}}
    - {{name: pem}}
    - {{name: knot}}
    - {{name: new, algorithm: rsasha256, key-size: 3072, keys: ksk-zsk}}
zones:
  list:
    - {{origin: {P256}, file: {zone_dir}/{P256}.zone, dnssec-policy: p256}}
    - {{origin: {RSA}, file: {zone_dir}/{RSA}.zone, dnssec-policy: rsa}}
    - {{origin: {ED}, file: {zone_dir}/{ED}.zone, dnssec-policy: ed}}
    - {{origin: {PEM}, file: {zone_dir}/{PEM}.zone, dnssec-policy: pem}}
    - {{origin: {KNOT}, file: {zone_dir}/{KNOT}.zone, dnssec-policy: knot}}
    - {{origin: {NEW}, file: {zone_dir}/{NEW}.zone, dnssec-policy: new}}
    - {{origin: plain.test, file: {zone_dir}/plain.test.zone}}
""")
        binary = harness.tern_binary()

        # 1. The imports, before tern first signs these zones.
        for origin in IMPORTED:
            if origin in (PEM, KNOT):
                key_file = pem if origin == PEM else kasp / "keys" / f"{knot_id}.pem"
                done = import_keys(binary, config, origin, [key_file], "--role", "csk",
                                   "--algorithm", "ecdsap256sha256")
            else:
                done = import_keys(binary, config, origin, sorted(keys.glob(f"K{origin}.+*")))
            if done.returncode != 0:
                fail(f"tern keys import {origin}.: {done.stdout} {done.stderr}")
            print(f"dnssec/import: {done.stdout.strip()}")
            if origin != PEM:
                printed = sorted(int(tag) for tag in re.findall(r"key tag (\d+)", done.stdout))
                bind_tags = tags(expected_dnskeys[origin])
                if printed != bind_tags:
                    fail(f"{origin}: tern imported key tags {printed}, BIND's are {bind_tags}")
        again = import_keys(binary, config, P256, sorted(keys.glob(f"K{P256}.+*")))
        if again.returncode == 0 or "is already the zone's" not in again.stderr:
            fail(f"a second import of {P256}'s keys: exit {again.returncode}: {again.stderr}")
        plain = import_keys(binary, config, "plain.test", sorted(keys.glob(f"K{ED}.+*")))
        if plain.returncode == 0 or "no dnssec-policy" not in plain.stderr:
            fail(f"an import into a zone without policy: exit {plain.returncode}: {plain.stderr}")
        print("dnssec/import: importing a key again is refused, and so is a zone without "
              "a dnssec-policy")

        # 2. tern serves the zones signed with the imported keys.
        tern = ImportTern(binary, tmp / "tern", zone_dir, IMPORTED + [NEW])
        current_tern = tern
        try:
            tern.start()
            tern.wait_ready(WAIT)
            for origin in IMPORTED:
                served = axfr(tern, origin, tmp / f"{origin}.axfr")
                dnskeys = dnskey_set(served)
                if origin == PEM:
                    (key,) = apex_dnskeys(served)
                    if len(dnskeys) != 1 or key.key != pem_public or key.flags != 257:
                        fail(f"{PEM}: DNSKEY {key} is not the PEM key's public key "
                             f"{base64.b64encode(pem_public).decode()}")
                elif dnskeys != expected_dnskeys[origin]:
                    fail(f"{origin}: tern's DNSKEY RRset differs from BIND's (Knot's)")
                ksks = {dns.dnssec.key_id(k) for k in apex_dnskeys(served) if k.flags == 257}
                zsks = {dns.dnssec.key_id(k) for k in apex_dnskeys(served)
                        if k.flags == 256} or ksks
                if signers(served, dns.rdatatype.DNSKEY) != ksks \
                        or signers(served, dns.rdatatype.SOA) != zsks:
                    fail(f"{origin}: DNSKEY signed by {signers(served, dns.rdatatype.DNSKEY)}, "
                         f"SOA by {signers(served, dns.rdatatype.SOA)}; KSKs {ksks}, ZSKs {zsks}")
                result = verify(origin, tmp / f"{origin}.axfr",
                                csk_only=origin in (ED, PEM, KNOT))
                print(f"dnssec/import: {origin} served with the imported keys "
                      f"{sorted(ksks | zsks)}: {result}")
            served = axfr(tern, NEW, tmp / f"{NEW}.axfr")
            sizes = sorted((int(k.flags), int(k.algorithm), (len(k.key) - 1 - k.key[0]) * 8)
                           for k in apex_dnskeys(served))
            if sizes != [(256, 8, 3072), (257, 8, 3072)]:
                fail(f"{NEW}: DNSKEYs (flags, algorithm, modulus bits) {sizes}")
            print(f"dnssec/import: {NEW} signed from scratch with RSA keys {sizes}: "
                  f"{verify(NEW, tmp / f'{NEW}.axfr', csk_only=False)}")

            # 3. A key imported while tern runs is used from the zone's next load.
            zsk = keygen(keys, P256, "-a", "ECDSAP256SHA256")
            zsk_file = pathlib.Path(f"{zsk}.key")
            done = import_keys(binary, config, P256, [zsk_file])
            if done.returncode != 0:
                fail(f"tern keys import of a new ZSK: {done.stdout} {done.stderr}")
            print(f"dnssec/import: {done.stdout.strip()}")
            record = next(line for line in zsk_file.read_text().splitlines()
                          if " DNSKEY " in line and not line.startswith(";"))
            fields = record.split(" DNSKEY ", 1)[1]
            new_rdata = dns.rdata.from_text("IN", "DNSKEY", fields).to_wire()
            if served_dnskeys(tern, P256) != expected_dnskeys[P256]:
                fail(f"{P256}: the DNSKEY RRset changed before the reload")
            must([str(binary), "reload", "--socket", f"{tmp}/tern.sock", f"{P256}."])
            wanted = expected_dnskeys[P256] | {new_rdata}
            deadline = time.monotonic() + WAIT
            while served_dnskeys(tern, P256) != wanted:
                if time.monotonic() > deadline:
                    fail(f"{P256}: the new ZSK not served {WAIT:.0f}s after tern reload")
                time.sleep(0.1)
            axfr(tern, P256, tmp / f"{P256}.2.axfr")
            print(f"dnssec/import: after tern reload {P256}. its DNSKEY RRset is BIND's plus "
                  f"the new ZSK: {verify(P256, tmp / f'{P256}.2.axfr', csk_only=False)}")
        finally:
            tern.stop()
    print("dnssec/import: ok")


if __name__ == "__main__":
    main()
