#!/usr/bin/env python3
"""tern serving zones over TLS (XoT out, RFC 9103) to BIND 9.18, NSD and kdig (issue 26).

On loopback, with throwaway CAs and certificates made by openssl in a temporary
directory:

    tern (primary: zone file, plain DNS on P, TLS on T; transfer.tls-only;
          NOTIFY to the secondaries over plain UDP, port-53 style)
        ──TLS (TSIG inside)──►  BIND 9.18  (primaries { 127.0.0.1 port T key K tls X; })
        ──TLS (TSIG inside)──►  NSD 4.6    (request-xfr: 127.0.0.1@T K tls-auth)

1. Both secondaries verify tern's certificate (name ns.xot.test, the test CA) and
   transfer serial 1 by AXFR over TLS; their copies equal the zone file; tern counts
   the transfers under tern_transfers_out_total{transport="tls",outcome="completed"}
   and none over TCP.
2. `transfer.tls-only`: kdig's AXFR over plain TCP and IXFR over UDP, signed, are
   REFUSED and counted (reason tls-only); kdig's AXFR over TLS, signed, is served
   (the records equal the zone file's); an unsigned one over TLS is REFUSED (key), so
   TLS does not replace TSIG.
3. The zone changes and tern is sent SIGHUP: its NOTIFY brings both secondaries to
   serial 2 by IXFR over TLS (tern logs two incremental IXFRs "over tls").
4. Mutual TLS: `tls.client-ca` is added and `tern reload` run (no restart): kdig
   without a client certificate still gets DoT answers but its AXFR over TLS is
   REFUSED (counted: client-certificate); kdig with a certificate from the client CA
   is served; a client with a self-signed certificate fails the handshake (counted:
   failed). The zone changes again with the same reload, and BIND and NSD, which
   present certificates from the client CA, reach serial 3 over TLS.

The incoming side's refusals (a wrong pin, an expired certificate, a plain-TCP
downgrade) are tests/xot/xot_in.py's.

Every wait is for an event (a serial served, a counter reaching its value), bounded.

Usage (from the repository root):

    TERN_BIN=target/release/tern python3 tests/xot/xot_out.py

Exits 1 on any failure, with the reason and the logs.
"""

from __future__ import annotations

import base64
import os
import pathlib
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "transfer"))

import common  # noqa: E402  (tests/transfer/common.py)
from common import KEY_NAME, ZONE, text_records  # noqa: E402
import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

import dns.message  # noqa: E402
import dns.zone  # noqa: E402

SCRIPT = "xot_out"
SECRET = base64.b64encode(bytes(range(130, 162))).decode()
WAIT = 60.0
COMMAND_TIMEOUT = 30
SERVER_NAME = "ns.xot.test"


def fail(message: str, *servers: smod.Server) -> None:
    print(f"xot/{SCRIPT}: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(60)}")
    sys.exit(1)


def run(cmd: list[str], cwd: pathlib.Path) -> bytes:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=COMMAND_TIMEOUT)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)}: {done.stderr.decode(errors='replace')}")
    return done.stdout


def make_certificates(tmp: pathlib.Path) -> None:
    """ca.pem signs server.pem (ns.xot.test, 127.0.0.1); clientca.pem signs
    client.pem (clientAuth); stranger.pem is a self-signed client certificate."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for ca in ("ca", "clientca"):
        run(["openssl", "req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
             "-subj", f"/CN=tern XoT test {ca}", "-days", "2"], tmp)
    (tmp / "server.ext").write_text(
        f"subjectAltName=DNS:{SERVER_NAME},IP:127.0.0.1\n"
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    (tmp / "client.ext").write_text(
        "subjectAltName=DNS:secondary.xot.test\n"
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n")
    for name, ca in (("server", "ca"), ("client", "clientca")):
        run(["openssl", "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}.xot.test"], tmp)
        run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey",
             f"{ca}.key", "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext",
             "-out", f"{name}.pem"], tmp)
    run(["openssl", "req", "-x509", *ec, "-keyout", "stranger.key", "-out", "stranger.pem",
         "-subj", "/CN=stranger.xot.test", "-days", "2"], tmp)


def zone_text(serial: int, hosts: int = 400) -> str:
    lines = [
        f"$ORIGIN {ZONE}.",
        "$TTL 300",
        f"@ SOA ns1 hostmaster {serial} 3600 600 1209600 300",
        "  NS ns1",
        "ns1 A 192.0.2.1",
        f"www A 192.0.2.{serial + 10}",
        f"s{serial} TXT \"serial {serial}\"",
    ]
    lines += [f"host{i} A 192.0.2.{i % 250 + 1}" for i in range(hosts)]
    return "\n".join(lines) + "\n"


class BindSecondary(harness.Bind):
    """BIND 9.18, secondary of tern over TLS: strict TLS (the CA and the name), a
    client certificate from the client CA, TSIG inside."""

    def __init__(self, workdir, zone_dir, certs: pathlib.Path, tls_port: int):
        self.certs = certs
        self.tls_port = tls_port
        super().__init__(workdir, zone_dir, [ZONE])

    def command(self) -> list[str]:
        conf = self.workdir / "named.conf"
        options = ("    notify no;\n    allow-notify { 127.0.0.1; };\n"
                   "    allow-transfer { 127.0.0.0/8; };")
        conf.write_text(f"""tls tern-tls {{
    ca-file "{self.certs}/ca.pem";
    remote-hostname "{SERVER_NAME}";
    key-file "{self.certs}/client.key";
    cert-file "{self.certs}/client.pem";
}};
""" + self.options_section(options) + f"""key "{KEY_NAME}" {{ algorithm hmac-sha256; secret "{SECRET}"; }};
zone "{ZONE}" {{
    type secondary;
    primaries {{ 127.0.0.1 port {self.tls_port} key "{KEY_NAME}" tls tern-tls; }};
    file "{self.workdir}/{ZONE}.db";
}};
""")
        return ["named", "-g", "-4", "-n", "1", "-c", str(conf)]


class NsdSecondary(smod.Nsd):
    """NSD 4.6, secondary of tern over TLS (`tls-auth`: the name, the CA bundle, a
    client certificate), TSIG inside."""

    def __init__(self, workdir, zone_dir, certs: pathlib.Path, tls_port: int):
        self.certs = certs
        self.tls_port = tls_port
        super().__init__(workdir, zone_dir, [ZONE])

    def command(self) -> list[str]:
        conf = self.workdir / "nsd.conf"
        server = self.server_section(self.workdir).replace(
            "remote-control:", f'    tls-cert-bundle: "{self.certs}/ca.pem"\n\nremote-control:', 1)
        conf.write_text(server + f"""key:
    name: {KEY_NAME}
    algorithm: hmac-sha256
    secret: "{SECRET}"
tls-auth:
    name: tern-tls
    auth-domain-name: {SERVER_NAME}
    client-cert: {self.certs}/client.pem
    client-key: {self.certs}/client.key
zone:
    name: {ZONE}
    zonefile: {ZONE}.zone
    request-xfr: 127.0.0.1@{self.tls_port} {KEY_NAME} tern-tls
    allow-notify: 127.0.0.1 {KEY_NAME}
    provide-xfr: 127.0.0.0/8 NOKEY
""")
        return ["nsd", "-d", "-c", str(conf)]


class TernPrimary(harness.ConfiguredTern):
    pass


def tern_config(tmp: pathlib.Path, tls_port: int, metrics_port: int, targets: str,
                client_ca: bool) -> str:
    ca = f"\n  client-ca: {tmp}/certs/clientca.pem" if client_ca else ""
    return f"""control-socket: {tmp}/tern/tern.sock
state-directory: {tmp}/tern/state
metrics:
  listen: 127.0.0.1:{metrics_port}
tls:
  listen: ["127.0.0.1:{tls_port}"]
  certificate: {tmp}/certs/server.pem
  key: {tmp}/certs/server.key{ca}
keys:
  - {{name: {KEY_NAME}, algorithm: hmac-sha256, secret: "{SECRET}"}}
transfer:
  allow: ["127.0.0.0/8"]
  key: {KEY_NAME}
  tls-only: true
notify:
  targets: [{targets}]
  key: {KEY_NAME}
"""


def metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return reply.read().decode()


def transfers(port: int) -> dict[tuple[str, str], int]:
    """tern_transfers_out_total by (transport, outcome), and the refusals by
    ("refused", reason)."""
    text = metrics(port)
    counts = {}
    for m in re.finditer(r'^tern_transfers_out_total\{transport="(\w+)",outcome="([\w-]+)"\} '
                         r'(\d+)$', text, re.M):
        counts[(m.group(1), m.group(2))] = int(m.group(3))
    for m in re.finditer(r'^tern_transfers_out_refused_total\{reason="([\w-]+)"\} (\d+)$',
                         text, re.M):
        counts[("refused", m.group(1))] = int(m.group(2))
    return counts


def handshakes_failed(port: int) -> int:
    return sum(int(m.group(1)) for m in re.finditer(
        r'^tern_tls_handshakes_total\{outcome="failed",version="\w[\w.]*"\} (\d+)$',
        metrics(port), re.M))


def kdig(tern_port: int, tls_port: int, qtype: str, *flags: str, key: bool = True,
         tls: bool = True) -> str:
    cmd = ["kdig", "@127.0.0.1", "-p", str(tls_port if tls else tern_port), ZONE + ".",
           qtype, "+time=10", "+retry=0", *flags]
    if tls:
        cmd += ["+tls"]
    if key:
        cmd += ["-y", f"hmac-sha256:{KEY_NAME}:{SECRET}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    return done.stdout + done.stderr


def records_of(kdig_output: str) -> set:
    """The records of a kdig AXFR's output (its comment lines and TSIG left out)."""
    lines = [l for l in kdig_output.splitlines()
             if l and not l.startswith(";") and "\tTSIG\t" not in l]
    # The SOA opens and closes the transfer.
    zone = dns.zone.from_text("\n".join(lines[:-1]) + "\n", origin=ZONE + ".",
                              relativize=False, check_origin=False)
    return common.zone_records(zone)


def wait_for(what: str, condition, *logs: smod.Server) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            fail(f"{what}: not within {WAIT:.0f} s", *logs)
        time.sleep(0.1)


def tls_client(tls_port: int, cert: pathlib.Path, key: pathlib.Path,
               ca: pathlib.Path) -> str:
    """A TLS handshake with `cert` as the client certificate, then an SOA query:
    "answered", or why not."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(ca)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["dot"])
    query = dns.message.make_query(ZONE + ".", "SOA").to_wire()
    try:
        with socket.create_connection(("127.0.0.1", tls_port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
                tls.sendall(len(query).to_bytes(2, "big") + query)
                length = tls.recv(2)
                if len(length) < 2:
                    return "closed"
                return "answered"
    except (ssl.SSLError, OSError) as err:
        return f"refused: {err}"



def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tern-xot-out-") as tmp:
        tmp = pathlib.Path(tmp)
        certs = tmp / "certs"
        certs.mkdir()
        make_certificates(certs)
        zone_dir = tmp / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(zone_text(1))
        tern_port, tls_port, metrics_port = (smod.free_port(), smod.free_port(),
                                             smod.free_port())
        bind = BindSecondary(tmp / "bind", tmp / "bind", certs, tls_port)
        nsd = NsdSecondary(tmp / "nsd", tmp / "nsd", certs, tls_port)
        secondaries = [bind, nsd]
        targets = ", ".join(f'"127.0.0.1:{s.port}"' for s in secondaries)
        tern = TernPrimary(harness.tern_binary(), tmp / "tern", zone_dir, [ZONE],
                           config_text=tern_config(tmp, tls_port, metrics_port, targets,
                                                   client_ca=False))
        tern.port = tern_port
        config_file = tmp / "tern" / "tern.yaml"

        def served_serial(server: smod.Server) -> int | None:
            return common.serial(server.addr)

        def same_as_zone(server: smod.Server, serial: int) -> None:
            got = common.axfr_records(server.addr, None)
            expected = text_records(zone_text(serial))
            if got != expected:
                fail(f"{server.name}'s copy of serial {serial} differs from the zone: "
                     f"{sorted(got ^ expected)[:4]}", server, tern)

        with harness.serving({"tern": tern}):
            # 1. AXFR over TLS to both secondaries.
            with harness.serving({"bind": bind, "nsd": nsd}):
                for secondary in secondaries:
                    wait_for(f"{secondary.name} serving serial 1",
                             lambda s=secondary: served_serial(s) == 1, secondary, tern)
                    same_as_zone(secondary, 1)
                counts = transfers(metrics_port)
                if counts.get(("tls", "completed"), 0) < 2:
                    fail(f"transfers over TLS not counted: {counts}", tern)
                if counts.get(("tcp", "started"), 0) or counts.get(("tcp", "completed"), 0):
                    fail(f"a transfer over plain TCP was served: {counts}", tern)
                print(f"xot/{SCRIPT}: BIND and NSD transferred serial 1 from tern over TLS "
                      f"(strict: CA and name); copies equal the zone; counted "
                      f"tls completed {counts[('tls', 'completed')]}")

                # 2. tls-only: plain TCP and UDP refused, TLS served, TSIG still required.
                before = transfers(metrics_port)
                plain = kdig(tern_port, tls_port, "AXFR", tls=False)
                if "REFUSED" not in plain:
                    fail(f"AXFR over plain TCP with tls-only: {plain[-400:]}", tern)
                udp = kdig(tern_port, tls_port, "IXFR=0", "+notcp", tls=False)
                if "REFUSED" not in udp:
                    fail(f"IXFR over UDP with tls-only: {udp[-400:]}", tern)
                after = transfers(metrics_port)
                refused = after[("refused", "tls-only")] - before.get(("refused", "tls-only"), 0)
                if refused != 2 or after[("tcp", "refused")] <= before.get(("tcp", "refused"), 0):
                    fail(f"tls-only refusals not counted: {before} -> {after}", tern)
                over_tls = kdig(tern_port, tls_port, "AXFR", f"+tls-ca={certs}/ca.pem",
                                f"+tls-hostname={SERVER_NAME}")
                if records_of(over_tls) != text_records(zone_text(1)):
                    fail(f"kdig AXFR over TLS: {over_tls[-600:]}", tern)
                unsigned = kdig(tern_port, tls_port, "AXFR", f"+tls-ca={certs}/ca.pem",
                                key=False)
                if "REFUSED" not in unsigned:
                    fail(f"an unsigned AXFR over TLS: {unsigned[-400:]}", tern)
                print(f"xot/{SCRIPT}: tls-only: AXFR over TCP and IXFR over UDP REFUSED "
                      f"(counted {refused}), kdig's AXFR over TLS served, unsigned REFUSED")

                # 3. A change: NOTIFY, then IXFR over TLS.
                zone_file.write_text(zone_text(2))
                os.killpg(tern.proc.pid, signal.SIGHUP)
                for secondary in secondaries:
                    wait_for(f"{secondary.name} serving serial 2",
                             lambda s=secondary: served_serial(s) == 2, secondary, tern)
                    same_as_zone(secondary, 2)
                pattern = (r"example\. IXFR, outgoing, to 127\.0\.0\.1, serial 2: \d+ messages, "
                           r"\d+ records, signed, in [\d.]+ s, over tls")
                lines = [l for l in tern.log_tail(100000).splitlines() if re.search(pattern, l)]
                if len(lines) != 2:
                    fail(f"tern logged {len(lines)} IXFRs over TLS, not 2", tern)
                print(f"xot/{SCRIPT}: after NOTIFY both at serial 2 by IXFR over TLS: "
                      f"{lines[0].strip()[-100:]}")

                # 4. Mutual TLS, turned on by a reload.
                config_file.write_text(tern_config(tmp, tls_port, metrics_port, targets,
                                                   client_ca=True))
                zone_file.write_text(zone_text(3))
                before = transfers(metrics_port)
                reload = subprocess.run(
                    [str(harness.tern_binary()), "reload", "--socket",
                     str(tmp / "tern" / "tern.sock")],
                    capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
                if reload.returncode != 0:
                    fail(f"tern reload: {reload.stdout}{reload.stderr}", tern)
                for secondary in secondaries:
                    wait_for(f"{secondary.name} serving serial 3 with its client certificate",
                             lambda s=secondary: served_serial(s) == 3, secondary, tern)
                    same_as_zone(secondary, 3)
                after = transfers(metrics_port)
                if after[("tls", "completed")] - before[("tls", "completed")] < 2:
                    fail(f"serial 3 not transferred over TLS: {before} -> {after}", tern)
                query = kdig(tern_port, tls_port, "SOA", f"+tls-ca={certs}/ca.pem", key=False)
                if "status: NOERROR" not in query:
                    fail(f"a DoT query without a client certificate: {query[-400:]}", tern)
                before = transfers(metrics_port)
                anonymous = kdig(tern_port, tls_port, "AXFR", f"+tls-ca={certs}/ca.pem")
                if "REFUSED" not in anonymous:
                    fail(f"AXFR over TLS without a client certificate: {anonymous[-400:]}", tern)
                after = transfers(metrics_port)
                if (after[("refused", "client-certificate")]
                        != before[("refused", "client-certificate")] + 1):
                    fail(f"client-certificate refusal not counted: {before} -> {after}", tern)
                with_cert = kdig(tern_port, tls_port, "AXFR", f"+tls-ca={certs}/ca.pem",
                                 f"+tls-certfile={certs}/client.pem",
                                 f"+tls-keyfile={certs}/client.key")
                if records_of(with_cert) != text_records(zone_text(3)):
                    fail(f"AXFR over TLS with a client certificate: {with_cert[-600:]}", tern)
                failed = handshakes_failed(metrics_port)
                stranger = tls_client(tls_port, certs / "stranger.pem", certs / "stranger.key",
                                      certs / "ca.pem")
                if stranger == "answered":
                    fail("a client certificate from no trusted CA was accepted", tern)
                wait_for("the stranger's handshake counted as failed",
                         lambda: handshakes_failed(metrics_port) > failed, tern)
                print(f"xot/{SCRIPT}: client-ca by reload: BIND and NSD at serial 3 with their "
                      f"certificates; without one DoT answered and AXFR REFUSED (counted); "
                      f"kdig with one served; a self-signed one refused ({stranger[:60]})")
    print(f"xot/{SCRIPT}: ok")


if __name__ == "__main__":
    main()
