#!/usr/bin/env python3
"""Update rules and limits from the configuration (issue 25):

1. `update-rate: 2`: three updates signed with one key, sent one after the other
   within the bucket's second, get NOERROR, NOERROR, REFUSED.
2. A rule that allows TXT only: an A record is REFUSED; the rule is changed in the
   configuration to allow A, `tern reload` (a whole reload, the zone file unchanged),
   and the same update is NOERROR and served.

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
KEYRINGS = {
    "sha-key.": {dns.name.from_text("sha-key."): dns.tsig.Key("sha-key.", SECRET,
                                                              dns.tsig.HMAC_SHA256)},
    "rate-key.": {dns.name.from_text("rate-key."): dns.tsig.Key("rate-key.", RATE_SECRET,
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


def config(zone_file: pathlib.Path, state: pathlib.Path, types: str) -> str:
    return f"""keys:
  - {{name: sha-key, algorithm: hmac-sha256, secret: "{SECRET}"}}
  - {{name: rate-key, algorithm: hmac-sha256, secret: "{RATE_SECRET}"}}
zones:
  list:
    - origin: {ZONE}.
      file: {zone_file}
      update:
        - {{key: sha-key, types: [{types}]}}
        - {{key: rate-key, types: [TXT]}}
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


def update(tern, key: str, owner: str, rtype: str, rdata: str) -> int:
    message = dns.update.Update(f"{ZONE}.", keyring=KEYRINGS[key], keyname=key)
    message.add(f"{owner}.{ZONE}.", 60, rtype, rdata)
    return dns.query.tcp(message, "127.0.0.1", port=tern.port, timeout=10).rcode()


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
            rcodes = [update(tern, "rate-key.", f"r{i}", "TXT", '"r"') for i in range(3)]
            if rcodes != [dns.rcode.NOERROR, dns.rcode.NOERROR, dns.rcode.REFUSED]:
                fail(f"update-rate 2: rcodes {[dns.rcode.to_text(r) for r in rcodes]}, "
                     "expected NOERROR, NOERROR, REFUSED", tern)
            print(f"{NAME}: update-rate 2: the third update in a row is REFUSED")

            rcode = update(tern, "sha-key.", "host", "A", "192.0.2.9")
            if rcode != dns.rcode.REFUSED:
                fail(f"an A outside the rule: {dns.rcode.to_text(rcode)}", tern)
            (tern.workdir / "tern.yaml").write_text(config(zone_file, state, "TXT, A"))
            done = subprocess.run([str(tern.binary), "reload", "--socket",
                                   str(state / "control.sock")],
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                fail(f"tern reload: {done.stdout} {done.stderr}", tern)
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
        finally:
            tern.stop()
    print(f"{NAME}: PASS")


if __name__ == "__main__":
    main()
