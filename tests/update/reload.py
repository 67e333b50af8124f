#!/usr/bin/env python3
"""Update rules and limits from the configuration (issue 25):

1. `update-rate: 2`: updates signed with one key, sent one after the other within
   the bucket's second: NOERROR; then two that its rule refuses (an A; REFUSED) and
   one with a bad TSIG (NOTAUTH), which spend no token; then NOERROR and REFUSED
   (the bucket is empty only after the two accepted ones).
2. A rule that allows TXT only: an A record is REFUSED; the rule is changed in the
   configuration to allow A, `tern reload` (a whole reload, the zone file unchanged),
   and the same update is NOERROR and served.
3. A zone added to the configuration with update rules, then `tern reload`: an
   update to it is NOERROR and served at once (no restart), and written to its
   journal.
4. A server started with no `update:` rules at all: rules added and `tern reload`,
   and an update to its zone is NOERROR.

Usage (from the repository root; loopback only):

    TERN_BIN=target/release/tern python3 tests/update/reload.py

Exits 1 on any failure, with the reason and tern's log.
"""

from __future__ import annotations

import base64
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.tsig  # noqa: E402
import dns.update  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

NAME = "update/reload"
ZONE = "example.com"
SECRET = base64.b64encode(bytes(range(1, 33))).decode()
RATE_SECRET = base64.b64encode(bytes(range(40, 72))).decode()
WRONG_SECRET = base64.b64encode(bytes(range(80, 112))).decode()
ADDED = "example.org"
KEYRINGS = {
    "sha-key.": {dns.name.from_text("sha-key."): dns.tsig.Key("sha-key.", SECRET,
                                                              dns.tsig.HMAC_SHA256)},
    "rate-key.": {dns.name.from_text("rate-key."): dns.tsig.Key("rate-key.", RATE_SECRET,
                                                                dns.tsig.HMAC_SHA256)},
    "bad-rate-key.": {dns.name.from_text("rate-key."): dns.tsig.Key("rate-key.", WRONG_SECRET,
                                                                    dns.tsig.HMAC_SHA256)},
}
WAIT = 30.0

ZONE_TEXT = f"""$ORIGIN {ZONE}.
$TTL 300
@ SOA ns1 hostmaster 1 7200 3600 1209600 300
  NS ns1
ns1 A 192.0.2.1
"""


class Tern(harness.ConfiguredTern):
    def command(self) -> list[str]:
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}",
                "--config", str(conf)]


def config(zone_file: pathlib.Path, state: pathlib.Path, types: str,
           added: pathlib.Path | None = None, rules: bool = True) -> str:
    more = "" if added is None else f"""
    - origin: {ADDED}.
      file: {added}
      update:
        - {{key: sha-key, types: [TXT]}}"""
    update = f"""
      update:
        - {{key: sha-key, types: [{types}]}}
        - {{key: rate-key, types: [TXT]}}""" if rules else ""
    return f"""keys:
  - {{name: sha-key, algorithm: hmac-sha256, secret: "{SECRET}"}}
  - {{name: rate-key, algorithm: hmac-sha256, secret: "{RATE_SECRET}"}}
zones:
  list:
    - origin: {ZONE}.
      file: {zone_file}{update}{more}
update-rate: 2
state-directory: {state}
control-socket: {state}/control.sock
zone-file-sync: 0
"""


def fail(message: str, tern=None) -> None:
    print(f"{NAME}: FAIL: {message}")
    if tern is not None:
        print(f"--- tern log:\n{tern.log_tail(60)}")
    sys.exit(1)


def update(tern, key: str, owner: str, rtype: str, rdata: str, zone: str = ZONE) -> int:
    keyname = "rate-key." if key == "bad-rate-key." else key
    message = dns.update.Update(f"{zone}.", keyring=KEYRINGS[key], keyname=keyname)
    message.add(f"{owner}.{zone}.", 60, rtype, rdata)
    try:
        return dns.query.tcp(message, "127.0.0.1", port=tern.port, timeout=10).rcode()
    except dns.tsig.PeerError:
        # The server did not verify the request's TSIG (NOTAUTH, unsigned).
        return dns.rcode.NOTAUTH


def reload(tern, state: pathlib.Path) -> None:
    done = subprocess.run([str(tern.binary), "reload", "--socket",
                           str(state / "control.sock")],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        fail(f"tern reload: {done.stdout} {done.stderr}", tern)


def served(tern, name: str, rtype: str) -> list[str]:
    reply = dns.query.udp(dns.message.make_query(name, rtype),
                          "127.0.0.1", port=tern.port, timeout=2)
    return [r.to_text() for rrset in reply.answer for r in rrset]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-update-reload-") as tmp:
        tmp = pathlib.Path(tmp)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(ZONE_TEXT)
        state = tmp / "state"
        tern = Tern(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                    config_text=config(zone_file, state, "TXT"))
        tern.workdir.mkdir(parents=True, exist_ok=True)
        tern.start()
        try:
            try:
                tern.wait_ready(WAIT)
            except smod.ServerError as err:
                fail(str(err), tern)
            rcodes = [
                update(tern, "rate-key.", "r0", "TXT", '"r"'),
                update(tern, "rate-key.", "r1", "A", "192.0.2.7"),
                update(tern, "rate-key.", "r2", "A", "192.0.2.7"),
                update(tern, "bad-rate-key.", "r3", "TXT", '"r"'),
                update(tern, "rate-key.", "r4", "TXT", '"r"'),
                update(tern, "rate-key.", "r5", "TXT", '"r"'),
            ]
            expected = [dns.rcode.NOERROR, dns.rcode.REFUSED, dns.rcode.REFUSED,
                        dns.rcode.NOTAUTH, dns.rcode.NOERROR, dns.rcode.REFUSED]
            if rcodes != expected:
                fail(f"update-rate 2: rcodes {[dns.rcode.to_text(r) for r in rcodes]}, "
                     f"expected {[dns.rcode.to_text(r) for r in expected]}", tern)
            print(f"{NAME}: update-rate 2: updates refused by the rules or by TSIG spend no "
                  "token; the third accepted one in a row is REFUSED")

            rcode = update(tern, "sha-key.", "host", "A", "192.0.2.9")
            if rcode != dns.rcode.REFUSED:
                fail(f"an A outside the rule: {dns.rcode.to_text(rcode)}", tern)
            (tern.workdir / "tern.yaml").write_text(config(zone_file, state, "TXT, A"))
            reload(tern, state)
            rcode = update(tern, "sha-key.", "host", "A", "192.0.2.9")
            if rcode != dns.rcode.NOERROR:
                fail(f"after the rule allowed A and a reload: {dns.rcode.to_text(rcode)}",
                     tern)
            reply = dns.query.udp(dns.message.make_query(f"host.{ZONE}.", "A"),
                                  "127.0.0.1", port=tern.port, timeout=2)
            if [r.to_text() for rrset in reply.answer for r in rrset] != ["192.0.2.9"]:
                fail(f"the update accepted after the reload is not served: {reply}", tern)
            print(f"{NAME}: an A REFUSED by the rule is accepted after the rule changed "
                  "and tern reload")

            added = zone_dir / f"{ADDED}.zone"
            added.write_text(ZONE_TEXT.replace(ZONE, ADDED))
            (tern.workdir / "tern.yaml").write_text(
                config(zone_file, state, "TXT, A", added=added))
            reload(tern, state)
            rcode = update(tern, "sha-key.", "new", "TXT", '"added"', zone=ADDED)
            if rcode != dns.rcode.NOERROR:
                fail(f"an update to a zone added by tern reload: {dns.rcode.to_text(rcode)}",
                     tern)
            if served(tern, f"new.{ADDED}.", "TXT") != ['"added"']:
                fail("the update to the added zone is not served", tern)
            journal = pathlib.Path(f"{added}.tern-journal")
            if not journal.exists() or journal.stat().st_size == 0:
                fail(f"the added zone's update is not in its journal {journal}", tern)
            print(f"{NAME}: a zone added by tern reload takes updates at once")
        finally:
            tern.stop()

        # A server with no update rules at all, then rules and a reload.
        bare = tmp / "bare"
        bare_state = tmp / "bare-state"
        bare_zone = zone_dir / f"{ZONE}.bare.zone"
        bare_zone.write_text(ZONE_TEXT)
        tern = Tern(harness.tern_binary(), bare, zone_dir, [ZONE],
                    config_text=config(bare_zone, bare_state, "TXT", rules=False))
        tern.workdir.mkdir(parents=True, exist_ok=True)
        tern.start()
        try:
            try:
                tern.wait_ready(WAIT)
            except smod.ServerError as err:
                fail(str(err), tern)
            rcode = update(tern, "sha-key.", "late", "TXT", '"late"')
            if rcode != dns.rcode.REFUSED:
                fail(f"an update without rules: {dns.rcode.to_text(rcode)}", tern)
            (tern.workdir / "tern.yaml").write_text(config(bare_zone, bare_state, "TXT"))
            reload(tern, bare_state)
            rcode = update(tern, "sha-key.", "late", "TXT", '"late"')
            if rcode != dns.rcode.NOERROR:
                fail(f"rules added by tern reload to a server started without any: "
                     f"{dns.rcode.to_text(rcode)}", tern)
            if served(tern, f"late.{ZONE}.", "TXT") != ['"late"']:
                fail("the update allowed by reloaded rules is not served", tern)
            print(f"{NAME}: rules added by tern reload to a server started without any "
                  "take effect")
        finally:
            tern.stop()
    print(f"{NAME}: PASS")


if __name__ == "__main__":
    main()
