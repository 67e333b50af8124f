#!/usr/bin/env python3
"""tern signs the primary zones whose configuration names a `dnssec-policy` (issue 24).

Two zones, each with a delegation and its glue, a signed delegation (DS), a wildcard
and an empty non-terminal:

    csk.test.  policy `csk`: ECDSA P-256 (the default algorithm), one CSK, NSEC
    kz.test.   policy `kz`:  Ed25519, a KSK and a ZSK, NSEC3 (4 octets of salt)

Checked, in order (each step fails the script with tern's log):

1. tern starts with no keys, generates them under the state directory, and serves both
   zones signed: each zone read back by AXFR (dig, `transfer.allow: 127.0.0.1`) passes
   BIND's `dnssec-verify` (`-z` for the CSK-only zone, whose one key has flags 257),
   ldns's `ldns-verify-zone` and Knot's `kzonecheck -d on` (every AXFR below too); a query with DO gets the RRSIGs of its answer;
   `STATE/keys/ORIGIN/` holds one `.pem` and one `.meta` per key, each of mode 0600,
   the PEM's `PRIVATE KEY` and the metadata's role and algorithm as the policy says.
2. After a restart the DNSKEY RRset each zone serves is byte-identical and the key
   files are the same: the keys were read, not made again; the serial is one above the
   one served before (2: kept in the state directory), not the file's.
3. The zone files change (serial 3, a new name) and tern gets SIGHUP: both new
   serials are served, the new name with its RRSIG, and both zones verify again.
4. The KSK of kz.test. is overwritten with garbage: `tern reload kz.test.` fails that
   zone, which keeps serving its previous version (still verifying). Then tern is
   restarted: it starts,
   serves csk.test. signed, does not serve kz.test. (REFUSED), logs the zone with the
   key file's path, and generates no key in its place.

Usage (from the repository root; loopback only; starts and stops its tern):

    TERN_BIN=target/release/tern python3 tests/dnssec/signing.py
"""

from __future__ import annotations

import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)
import wire  # noqa: E402  (tests/differential/wire.py)

CSK = "csk.test"
KZ = "kz.test"
COMMAND_TIMEOUT = 60
# How long tern may take to start, or to serve a reloaded zone.
WAIT = 60.0


def zone_text(origin: str, serial: int, extra: bool = False) -> str:
    lines = [
        f"$ORIGIN {origin}.",
        "$TTL 3600",
        f"@ SOA ns1 hostmaster {serial} 7200 3600 1209600 300",
        "  NS ns1",
        "  NS ns2.example.net.",
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
    ]
    if extra:
        lines.append("added A 192.0.2.7")
    return "\n".join(lines) + "\n"


class SigningTern(harness.ConfiguredTern):
    """tern with its configuration file only: the zones are the configuration's list."""

    def command(self) -> list[str]:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--config", str(conf)]


def fail(message: str, tern: smod.Server | None = None) -> None:
    print(f"dnssec/signing: FAIL: {message}")
    if tern is not None:
        print(f"--- tern log:\n{tern.log_tail(60)}")
    sys.exit(1)


def run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)


def axfr(tern: smod.Server, origin: str, path: pathlib.Path) -> str:
    """The zone by AXFR with dig (one SOA), written to `path`; its text."""
    done = run(["dig", f"@{tern.addr[0]}", "-p", str(tern.addr[1]), f"{origin}.", "AXFR",
                "+onesoa", "+nocmd", "+nostats"])
    if done.returncode != 0 or "Transfer failed" in done.stdout or "SOA" not in done.stdout:
        fail(f"AXFR of {origin} failed: {done.stdout[-400:]} {done.stderr[-400:]}", tern)
    path.write_text(done.stdout)
    return done.stdout


def verify(tern: smod.Server, origin: str, path: pathlib.Path, csk_only: bool) -> None:
    """The AXFR of `origin` passes dnssec-verify and ldns-verify-zone."""
    verify_text(tern, origin, path, axfr(tern, origin, path), csk_only)


def verify_text(tern: smod.Server, origin: str, path: pathlib.Path, text: str,
                csk_only: bool) -> None:
    """`text`, an AXFR of `origin` from `tern` written to `path`, passes dnssec-verify,
    ldns-verify-zone and kzonecheck -d on."""
    for rtype in ("RRSIG", "DNSKEY", "NSEC3" if origin == KZ else "NSEC"):
        if not re.search(rf"\sIN\s+{rtype}\s", text):
            fail(f"{origin}'s AXFR holds no {rtype}", tern)
    command = ["dnssec-verify", "-o", f"{origin}."] + (["-z"] if csk_only else []) + [str(path)]
    done = run(command)
    if done.returncode != 0:
        fail(f"dnssec-verify rejects {origin}: {done.stdout[-600:]} {done.stderr[-600:]}", tern)
    lines = (done.stdout + done.stderr).splitlines()
    last = next((line.strip() for line in lines if "Algorithm:" in line), lines[-1].strip())
    done = run(["ldns-verify-zone", str(path)])
    if done.returncode != 0:
        fail(f"ldns-verify-zone rejects {origin}: {done.stdout[-600:]} {done.stderr[-600:]}",
             tern)
    ldns = (done.stdout + done.stderr).strip().splitlines()[-1]
    # Knot's semantic checks with its DNSSEC checks on (knot-dnssecutils).
    done = run(["kzonecheck", "-o", f"{origin}.", "-d", "on", str(path)])
    if done.returncode != 0:
        fail(f"kzonecheck -d on rejects {origin}: {done.stdout[-600:]} {done.stderr[-600:]}",
             tern)
    print(f"dnssec/signing: {origin} by AXFR: dnssec-verify: {last}; ldns-verify-zone: "
          f"{ldns}; kzonecheck -d on: {(done.stdout + done.stderr).strip() or 'no error'}")


def query(tern: smod.Server, qname: str, rtype: str, dnssec: bool = True) -> wire.Response:
    message = dns.message.make_query(qname, rtype, want_dnssec=dnssec)
    message.flags &= ~dns.flags.RD
    reply = wire.exchange(message.to_wire(), tern.addr, tcp=True, timeout=2.0, retries=2)
    if not reply.ok:
        fail(f"{qname} {rtype}: no answer: {reply.error}", tern)
    return reply


def signed_answer(tern: smod.Server, qname: str, rtype: str) -> None:
    """A query with DO for `qname` gets its RRset and an RRSIG over it."""
    reply = query(tern, qname, rtype)
    covered = [rdata.type_covered for rrset in reply.message.answer
               if rrset.rdtype == dns.rdatatype.RRSIG for rdata in rrset]
    wanted = dns.rdatatype.from_text(rtype)
    if reply.rcode != dns.rcode.NOERROR or wanted not in covered:
        fail(f"{qname} {rtype} with DO: rcode {reply.rcode}, RRSIGs over "
             f"{[dns.rdatatype.to_text(c) for c in covered]}", tern)


def serial(tern: smod.Server, origin: str) -> int | None:
    reply = query(tern, f"{origin}.", "SOA", dnssec=False)
    return next((rdata.serial for rrset in reply.message.answer for rdata in rrset
                 if rdata.rdtype == dns.rdatatype.SOA), None)


def dnskeys(tern: smod.Server, origin: str) -> list[bytes]:
    """The DNSKEY RRset's RDATA in wire form, sorted."""
    reply = query(tern, f"{origin}.", "DNSKEY")
    return sorted(rdata.to_wire() for rrset in reply.message.answer
                  if rrset.rdtype == dns.rdatatype.DNSKEY for rdata in rrset)


def key_files(state: pathlib.Path, origin: str) -> dict[str, bytes]:
    directory = state / "keys" / f"{origin}."
    if not directory.is_dir():
        return {}
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def check_key_files(tern: smod.Server, state: pathlib.Path, origin: str,
                    roles: list[str], algorithm: str, number: int) -> None:
    files = key_files(state, origin)
    names = sorted(files)
    if len(names) != 2 * len(roles):
        fail(f"{origin}: key files {names}, wanted a .pem and a .meta per {roles}", tern)
    for role in roles:
        stems = {name.rsplit(".", 1)[0] for name in names if name.startswith(f"{role}-{number:03}-")}
        if len(stems) != 1:
            fail(f"{origin}: no single {role} of algorithm {number} in {names}", tern)
        stem = stems.pop()
        for suffix in (".pem", ".meta"):
            path = state / "keys" / f"{origin}." / f"{stem}{suffix}"
            mode = path.stat().st_mode & 0o777
            if mode != 0o600:
                fail(f"{path} has mode {mode:o}, not 600", tern)
        pem = files[f"{stem}.pem"].decode()
        meta = files[f"{stem}.meta"].decode()
        if not pem.startswith("-----BEGIN PRIVATE KEY-----\n"):
            fail(f"{stem}.pem is not a PEM private key: {pem[:40]!r}", tern)
        for line in (f"role: {role}", f"algorithm: {algorithm}", "created: ", "active: "):
            if line not in meta:
                fail(f"{stem}.meta lacks {line!r}: {meta!r}", tern)
    print(f"dnssec/signing: {origin}: key files {names}, each of mode 600")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-dnssec-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        state = tmp / "state"
        for origin in (CSK, KZ):
            (zone_dir / f"{origin}.zone").write_text(zone_text(origin, 1))
        config = f"""control-socket: {tmp}/tern.sock
state-directory: {state}
transfer:
  allow: ["127.0.0.1"]
dnssec:
  signing-threads: 2
  policies:
    - name: csk
    - name: kz
      algorithm: ed25519
      keys: ksk-zsk
      rrsig-lifetime: 14d
      rrsig-refresh: 7d
      dnskey-ttl: 1h
      nsec3: {{iterations: 0, salt-length: 4, opt-out: false}}
zones:
  list:
    - {{origin: {CSK}, file: {zone_dir}/{CSK}.zone, dnssec-policy: csk}}
    - {{origin: {KZ}, file: {zone_dir}/{KZ}.zone, dnssec-policy: kz}}
"""
        tern = SigningTern(harness.tern_binary(), tmp / "tern", zone_dir, [CSK, KZ],
                           config_text=config)
        try:
            # 1. First start: keys generated, zones served signed.
            tern.start()
            tern.wait_ready(WAIT)
            for origin in (CSK, KZ):
                verify(tern, origin, tmp / f"{origin}.axfr", csk_only=origin == CSK)
                signed_answer(tern, f"www.{origin}.", "AAAA")
                signed_answer(tern, f"any.{origin}.", "TXT")  # from the wildcard
            print("dnssec/signing: queries with DO get their answers' RRSIGs")
            check_key_files(tern, state, CSK, ["csk"], "ecdsap256sha256", 13)
            check_key_files(tern, state, KZ, ["ksk", "zsk"], "ed25519", 15)
            first = {origin: (dnskeys(tern, origin), key_files(state, origin))
                     for origin in (CSK, KZ)}
            if len(first[CSK][0]) != 1 or len(first[KZ][0]) != 2:
                fail(f"DNSKEY RRsets of {len(first[CSK][0])} and {len(first[KZ][0])} keys", tern)

            # 2. A restart reads the keys.
            tern.stop()
            tern.start()
            tern.wait_ready(WAIT)
            for origin in (CSK, KZ):
                again = (dnskeys(tern, origin), key_files(state, origin))
                if again != first[origin]:
                    fail(f"{origin}: the DNSKEY RRset or the key files changed across a restart",
                         tern)
                # Signed again whole: one above the serial served before (kept in the
                # state directory), not the file's.
                if serial(tern, origin) != 2:
                    fail(f"{origin}: serial {serial(tern, origin)} after a restart, not 2", tern)
            print("dnssec/signing: after a restart both DNSKEY RRsets and the key files are "
                  "byte-identical; serial 2 (one above the last served) is served")

            # 3. An edit and SIGHUP: the new serials (the file's 3), signed.
            for origin in (CSK, KZ):
                (zone_dir / f"{origin}.zone").write_text(zone_text(origin, 3, extra=True))
            os.killpg(tern.proc.pid, signal.SIGHUP)
            deadline = time.monotonic() + WAIT
            for origin in (CSK, KZ):
                while serial(tern, origin) != 3:
                    if time.monotonic() > deadline:
                        fail(f"{origin}: serial 3 not served {WAIT:.0f}s after SIGHUP", tern)
                    time.sleep(0.1)
                signed_answer(tern, f"added.{origin}.", "A")
                verify(tern, origin, tmp / f"{origin}.2.axfr", csk_only=origin == CSK)
                if dnskeys(tern, origin) != first[origin][0]:
                    fail(f"{origin}: the DNSKEY RRset changed at the reload", tern)
            print("dnssec/signing: after an edit and SIGHUP both zones serve serial 3, signed")

            # 4. A corrupt key: a reload of that zone keeps its previous version;
            # after a restart it is not served, the other is.
            ksk = next(state / "keys" / f"{KZ}." / name for name in first[KZ][1]
                       if name.startswith("ksk-") and name.endswith(".pem"))
            ksk.write_text("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
            done = run([str(tern.binary), "reload", "--socket", f"{tmp}/tern.sock", f"{KZ}."])
            if "1 failed to load, 1 of them kept their previous version" not in done.stdout:
                fail(f"tern reload {KZ}. with a corrupt KSK: {done.stdout} {done.stderr}", tern)
            if serial(tern, KZ) != 3:
                fail(f"{KZ}: serial 3 no longer served after a reload with a corrupt KSK", tern)
            verify(tern, KZ, tmp / f"{KZ}.3.axfr", csk_only=False)
            print(f"dnssec/signing: tern reload {KZ}. with a corrupt KSK: {done.stdout.strip()}")
            tern.stop()
            tern.zones = [CSK]
            tern.start()
            tern.wait_ready(WAIT)
            verify(tern, CSK, tmp / f"{CSK}.3.axfr", csk_only=True)
            reply = query(tern, f"{KZ}.", "SOA", dnssec=False)
            if reply.rcode != dns.rcode.REFUSED:
                fail(f"{KZ}. with a corrupt KSK answered rcode {reply.rcode}, not REFUSED", tern)
            log = tern.log_tail(100000)
            pattern = rf"zone {re.escape(KZ)}: not signed.*{re.escape(str(ksk))}"
            line = next((l for l in log.splitlines() if re.search(pattern, l)), None)
            if line is None:
                fail(f"tern's log names neither the zone nor the key file ({pattern})", tern)
            if sorted(key_files(state, KZ)) != sorted(first[KZ][1]):
                fail(f"{KZ}: key files changed after the corrupt key: {sorted(key_files(state, KZ))}",
                     tern)
            print(f"dnssec/signing: with a corrupt KSK {KZ}. is REFUSED while {CSK}. serves; "
                  f"tern's log: {line.strip()[-150:]}")
        finally:
            tern.stop()
    print("dnssec/signing: ok")


if __name__ == "__main__":
    main()
