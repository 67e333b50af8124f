#!/usr/bin/env python3
"""tern as the secondary of a hostile or broken primary (issue 10).

A small primary in this script, on loopback, answers tern's SOA queries (UDP) and
transfers (TCP), signed with the shared key by dnspython. It first serves a good zone
(serial 1), which tern must take. Then, for each case below, it announces serial 2 and
answers the transfer badly; `tern refresh` makes tern try at once. Each time tern must:
log the exact reason (asserted below), keep serving serial 1 (the previous version:
its www address is checked), and show the failure, counted, in `tern zone-status`.

| case | what the primary does | the reason tern logs |
|---|---|---|
| garbage | a message that does not parse | malformed transfer |
| no-soa-first | the first record is not the SOA | the first record is not the zone's SOA |
| no-soa-last | closes the connection before the closing SOA | reading: ... |
| out-of-zone | a record outside the zone | record outside the zone: www.example.org. |
| unsigned | answers without TSIG | TSIG: message not signed |
| wrong-key | signs with another secret | TSIG: BADSIG |
| stall | sends the first message, then nothing (tern's read timeout, 10 s) | reading: ... |
| endless | sends records without end (tern's record limit, 1,000 here) | the zone exceeds the size limits |
| refused | answers REFUSED | the primary answered rcode 5 |

Then the ACL and TSIG checks of NOTIFY, as a client sees them: a NOTIFY for the zone from
an address that is not the primary's (127.0.0.2) gets REFUSED; one signed with an unknown
key NOTAUTH with BADKEY; one with a wrong MAC NOTAUTH with BADSIG; one for a zone that is
not tern's NOTAUTH. Last, the good primary again: tern takes serial 3.

Usage (from the repository root; loopback only):

    TERN_BIN=target/release/tern python3 tests/transfer/hostile.py

Exits 1 on any failure, with the reason and tern's log.
"""

from __future__ import annotations

import base64
import pathlib
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.opcode  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.rrset  # noqa: E402
import dns.tsig  # noqa: E402

import common  # noqa: E402  (tests/transfer/common.py)
from common import KEY_NAME, ZONE  # noqa: E402
import harness  # noqa: E402
import servers as smod  # noqa: E402

SECRET = base64.b64encode(bytes(range(90, 122))).decode()
OTHER_SECRET = base64.b64encode(bytes(range(1, 33))).decode()
# tern's limit on the records of a received zone, in its configuration here.
MAX_RECORDS = 1000
# How long each case may take to show in tern's log (the stall waits for tern's 10 s
# read timeout twice: its IXFR, then its AXFR).
CASE_WAIT = 60.0
# TSIG error codes by name (dnspython's rcode names 16 BADVERS).
TSIG_ERRORS = {16: "BADSIG", 17: "BADKEY", 18: "BADTIME"}
COMMAND_TIMEOUT = 30

CASES = {
    "garbage": r"malformed transfer",
    "no-soa-first": r"malformed transfer: the first record is not the zone's SOA",
    "no-soa-last": r"reading: ",
    "out-of-zone": r"record outside the zone: www\.example\.org\.",
    "unsigned": r"TSIG: message not signed",
    "wrong-key": r"TSIG: BADSIG",
    "stall": r"reading: ",
    "endless": r"the zone exceeds the size limits",
    "refused": r"the primary answered rcode 5",
}


def fail(message: str, *servers) -> None:
    common.fail("hostile", message, *servers)


def keyring(secret: str) -> dict:
    return {dns.name.from_text(KEY_NAME): dns.tsig.Key(KEY_NAME, secret, "hmac-sha256")}


def soa(serial: int) -> dns.rrset.RRset:
    return dns.rrset.from_text(ZONE + ".", 300, "IN", "SOA",
                               f"ns.{ZONE}. hostmaster.{ZONE}. {serial} 3600 3600 604800 300")


def record(owner: str, rtype: str, text: str) -> dns.rrset.RRset:
    return dns.rrset.from_text(owner, 300, "IN", rtype, text)


def good_body(www: int) -> list:
    return [record(f"{ZONE}.", "NS", f"ns.{ZONE}."),
            record(f"ns.{ZONE}.", "A", "192.0.2.53"),
            record(f"www.{ZONE}.", "A", f"192.0.2.{www}")]


class Primary:
    """The hostile primary: `serial` is what its SOA says; `mode` how it transfers."""

    def __init__(self):
        self.serial = 1
        self.mode = "good"
        self.www = 80
        self.stop = threading.Event()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.port = self.udp.getsockname()[1]
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(8)
        for target in (self.serve_udp, self.serve_tcp):
            threading.Thread(target=target, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.udp.close()
        self.tcp.close()

    def serve_udp(self) -> None:
        self.udp.settimeout(0.2)
        while not self.stop.is_set():
            try:
                data, peer = self.udp.recvfrom(65535)
            except (socket.timeout, OSError):
                continue
            try:
                query = dns.message.from_wire(data, keyring=keyring(SECRET))
            except Exception:  # noqa: BLE001  (a malformed query gets nothing)
                continue
            answer = dns.message.make_response(query)
            answer.flags |= 0x0400  # AA
            answer.answer.append(soa(self.serial))
            self.udp.sendto(answer.to_wire(), peer)

    def serve_tcp(self) -> None:
        self.tcp.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.tcp.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self.transfer, args=(conn,), daemon=True).start()

    def transfer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                length = struct.unpack("!H", harness.recv_exact(conn, 2))[0]
                query = dns.message.from_wire(harness.recv_exact(conn, length),
                                              keyring=keyring(SECRET))
            except Exception:  # noqa: BLE001
                return
            for message in self.messages(query):
                if message is None:  # stall: hold the connection, send nothing
                    self.stop.wait(20)
                    return
                try:
                    conn.sendall(struct.pack("!H", len(message)) + message)
                except OSError:
                    return

    def messages(self, query):
        """The wire messages of the answer to `query` in the current mode."""
        mode, serial = self.mode, self.serial
        if mode == "garbage":
            yield query.id.to_bytes(2, "big") + b"\x84\x00\x00\x01\x00\x05garbage"
            return

        def message(rrsets, first=False, sign=True, secret=SECRET, ctx=None, rcode=0):
            response = dns.message.make_response(query)
            if not first:
                response.question = []
            response.flags |= 0x0400
            response.set_rcode(rcode)
            for rrset in rrsets:
                response.answer.append(rrset)
            if not sign:
                response.keyring = None
                response.tsig = None
                return response.to_wire(), None
            if secret != SECRET:
                response.use_tsig(keyring(secret), keyname=KEY_NAME)
            wire = response.to_wire(multi=True, tsig_ctx=ctx)
            return wire, response.tsig_ctx

        if mode == "refused":
            yield message([], first=True, rcode=5)[0]
            return
        body = good_body(self.www)
        if mode == "no-soa-first":
            rrsets = [[body[0], soa(serial)] + body[1:] + [soa(serial)]]
        elif mode == "out-of-zone":
            rrsets = [[soa(serial)] + body + [record("www.example.org.", "A", "192.0.2.66"),
                                               soa(serial)]]
        elif mode in ("no-soa-last", "endless"):
            rrsets = [[soa(serial)] + body]
        else:
            rrsets = [[soa(serial)] + body[:1], body[1:] + [soa(serial)]]
        sign = mode != "unsigned"
        secret = OTHER_SECRET if mode == "wrong-key" else SECRET
        ctx = None
        for i, part in enumerate(rrsets):
            wire, ctx = message(part, first=i == 0, sign=sign, secret=secret, ctx=ctx)
            yield wire
            if mode == "stall":
                yield None
                return
        if mode == "endless":
            for i in range(MAX_RECORDS * 2):
                part = [record(f"h{i}.{ZONE}.", "A", f"192.0.2.{i % 250 + 1}")]
                wire, ctx = message(part, sign=True, ctx=ctx)
                yield wire


def www(addr) -> str | None:
    query = dns.message.make_query(f"www.{ZONE}.", "A")
    import wire

    reply = wire.exchange(query.to_wire(), addr, tcp=False, timeout=1.0, retries=0)
    if not reply.ok or reply.rcode != 0:
        return None
    return next((rd.address for rrset in reply.message.answer for rd in rrset
                 if rd.rdtype == dns.rdatatype.A), None)


def control(tmp: pathlib.Path, *args: str) -> str:
    done = subprocess.run([str(harness.tern_binary()), *args, "--socket", str(tmp / "tern.sock")],
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    return done.stdout + done.stderr


def notify(tern_addr, zone: str, source: str = "127.0.0.1", secret: str | None = SECRET,
           keyname: str = KEY_NAME) -> dns.message.Message | None:
    message = dns.message.make_query(zone, "SOA")
    message.set_opcode(dns.opcode.NOTIFY)
    message.flags &= ~0x0100
    message.flags |= 0x0400
    if secret:
        message.use_tsig({dns.name.from_text(keyname): dns.tsig.Key(keyname, secret,
                                                                     "hmac-sha256")},
                         keyname=keyname)
    reply = harness.udp_exchange_from(tern_addr, message.to_wire(), source, timeout=2.0)
    if reply is None:
        return None
    return dns.message.from_wire(reply, ignore_trailing=True, keyring=False)


def main() -> None:
    primary = Primary()
    try:
        with tempfile.TemporaryDirectory(prefix="tern-hostile-") as tmp:
            tmp = pathlib.Path(tmp)
            config = f"""control-socket: {tmp}/tern.sock
keys:
  - {{name: {KEY_NAME}, algorithm: hmac-sha256, secret: "{SECRET}"}}
transfer:
  max-zone-records: {MAX_RECORDS}
zones:
  secondary:
    - {{origin: {ZONE}., primaries: ["127.0.0.1:{primary.port}"], key: {KEY_NAME}}}
"""
            tern = harness.ConfiguredTern(harness.tern_binary(), tmp / "tern", tmp, [ZONE],
                                          config_text=config)
            tern.command = lambda: [str(tern.binary), "serve", "--listen",
                                    f"127.0.0.1:{tern.port}", "--config",
                                    str(write_config(tern))]
            with harness.serving({"tern": tern}):
                if www(tern.addr) != "192.0.2.80":
                    fail("tern does not serve the good zone", tern)
                print("transfer/hostile: serial 1 from the primary, served")
                for number, (case, reason) in enumerate(CASES.items()):
                    primary.mode, primary.serial = case, 2
                    before = tern.log_tail(100000).count("refresh from")
                    control(tmp, "refresh", ZONE)
                    pattern = rf"{ZONE}\.: refresh from 127\.0\.0\.1:{primary.port} failed: .*{reason}"
                    deadline = time.monotonic() + CASE_WAIT
                    line = None
                    while time.monotonic() < deadline and line is None:
                        lines = [l for l in tern.log_tail(100000).splitlines() if "refresh from" in l]
                        line = next((l for l in lines[before:] if re.search(pattern, l)), None)
                        time.sleep(0.1)
                    if line is None:
                        fail(f"{case}: no log line matching {pattern!r}", tern)
                    if www(tern.addr) != "192.0.2.80":
                        fail(f"{case}: tern no longer serves serial 1's data", tern)
                    status = control(tmp, "zone-status", ZONE)
                    if ("serial 1 " not in status or "refresh failed" not in status
                            or f" failures {number + 1} " not in status):
                        fail(f"{case}: zone-status (failure {number + 1}): {status}", tern)
                    print(f"transfer/hostile: {case}: refused, serial 1 kept; "
                          f"tern: {line.split(': ', 1)[-1][:110]}")

                # NOTIFY: from another address, with an unknown key, with a wrong
                # MAC, for a zone that is not tern's.
                checks = [
                    ("from 127.0.0.2", notify(tern.addr, ZONE + ".", source="127.0.0.2"),
                     dns.rcode.REFUSED, None),
                    ("an unknown key", notify(tern.addr, ZONE + ".", keyname="other-key"),
                     dns.rcode.NOTAUTH, dns.rcode.BADKEY),
                    ("a wrong MAC", notify(tern.addr, ZONE + ".", secret=OTHER_SECRET),
                     dns.rcode.NOTAUTH, dns.rcode.BADSIG),
                    ("another zone", notify(tern.addr, "example.org."),
                     dns.rcode.NOTAUTH, None),
                ]
                for what, reply, rcode, tsig_error in checks:
                    if reply is None or reply.rcode() != rcode:
                        fail(f"NOTIFY {what}: {reply and dns.rcode.to_text(reply.rcode())}, "
                             f"not {dns.rcode.to_text(rcode)}", tern)
                    if tsig_error is not None and (reply.tsig_error != tsig_error):
                        fail(f"NOTIFY {what}: TSIG error {reply.tsig_error}, not {tsig_error}",
                             tern)
                    print(f"transfer/hostile: NOTIFY {what}: {dns.rcode.to_text(rcode)}"
                          + (f"/{TSIG_ERRORS[tsig_error]}" if tsig_error else ""))

                # The good primary again: a signed NOTIFY brings serial 3.
                primary.mode, primary.serial, primary.www = "good", 3, 81
                reply = notify(tern.addr, ZONE + ".")
                if reply is None or reply.rcode() != dns.rcode.NOERROR:
                    fail(f"the primary's NOTIFY: {reply}", tern)
                common.wait_serial("hostile", tern, 3, CASE_WAIT)
                if www(tern.addr) != "192.0.2.81":
                    fail("serial 3's data is not served", tern)
                print("transfer/hostile: the good primary's NOTIFY: serial 3 served")
    finally:
        primary.close()
    print("transfer/hostile: ok")


def write_config(tern) -> pathlib.Path:
    conf = tern.workdir / "tern.yaml"
    conf.write_text(tern.config_text)
    return conf


if __name__ == "__main__":
    main()
