#!/usr/bin/env python3
"""ACME end to end, offline (issue 25): certificates issued by Debian's pebble for names
in a zone whose DNS-01 TXT records certbot and lego write by dynamic update with TSIG.

    pebble (ACME test server, HTTPS with a throwaway CA made here by openssl;
            DNS-01 checked by asking the authoritative server itself: -dnsserver)
      ▲ ACME over HTTPS                    │ TXT _acme-challenge.NAME?
    certbot + certbot-dns-rfc2136          ▼
      (hmac-md5, then hmac-sha512)  ──UPDATE──► knotd   (today: the proof the test works)
    lego, rfc2136 provider (hmac-sha256)  ──► tern    (when it accepts UPDATE)

Each client gets a certificate for its own name in the zone `example.com.` (pebble's
certificate must name it), and afterwards the zone, read by AXFR, holds no
`_acme-challenge` record and its serial rose by at least two (the TXT added, then
deleted). Each key may update TXT records only.

Nothing leaves loopback: when run as root, the script runs itself in a network
namespace of its own holding only `lo` (`unshare --net`); otherwise every address it
configures is 127.0.0.1 (pebble's `-dnsserver`, the clients' servers and lego's
resolvers).

tern side, as in differential.py: `TERN_UPDATE=0` leaves tern out; `TERN_UPDATE=1`
requires it; unset, tern is asked once and, if it does not take UPDATE, the script says
"tern side skipped: tern refuses UPDATE" and runs against Knot alone.

Usage (from the repository root):

    TERN_BIN=target/release/tern python3 tests/update/acme.py

Exits 1 on any failure, with the step, the client's output and the servers' logs.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compliance"))
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.tsig  # noqa: E402
import dns.tsigkeyring  # noqa: E402
import dns.update  # noqa: E402
import dns.zone  # noqa: E402

import harness  # noqa: E402  (tests/compliance/harness.py)
import servers as smod  # noqa: E402  (tests/differential/servers.py)

ORIGIN = "example.com."
ZONE_TEXT = f"""$ORIGIN {ORIGIN}
$TTL 300
@ SOA ns1 hostmaster 1 3600 900 604800 300
@ NS ns1
ns1 A 127.0.0.1
certbot-md5 A 127.0.0.1
certbot-sha512 A 127.0.0.1
lego A 127.0.0.1
"""
# (client, TSIG algorithm, key name, the name its certificate is for).
CLIENTS = [
    ("certbot", "hmac-md5", "acme-md5", "certbot-md5." + ORIGIN),
    ("certbot", "hmac-sha512", "acme-sha512", "certbot-sha512." + ORIGIN),
    ("lego", "hmac-sha256", "acme-sha256", "lego." + ORIGIN),
]
SECRETS = {key: base64.b64encode(bytes([i + 1] * 32)).decode()
           for i, (_, _, key, _) in enumerate(CLIENTS)}
ALGORITHMS = {key: algorithm for _, algorithm, key, _ in CLIENTS}
# How long a client may take for one certificate, pebble to start, one exchange.
CLIENT_TIMEOUT = 300
START_TIMEOUT = 30.0
EXCHANGE_TIMEOUT = 10.0
# The marker of the run inside the private network namespace.
NAMESPACE_MARK = "TERN_ACME_NETNS"


def fail(message: str, *servers) -> None:
    print(f"update/acme: FAIL: {message}")
    for server in servers:
        print(f"--- {server.name} log:\n{server.log_tail(40)}")
    sys.exit(1)


#--- the servers


class Knot(smod.Knot):
    def command(self) -> list[str]:
        (self.workdir / "zones").mkdir(exist_ok=True)
        (self.workdir / "zones" / f"{ORIGIN}zone").write_text(ZONE_TEXT)
        keys = "".join(f"  - id: {key}\n    algorithm: {ALGORITHMS[key]}\n    secret: {secret}\n"
                       for key, secret in SECRETS.items())
        conf = self.workdir / "knot.conf"
        # Knot's log to stderr, unbuffered: the tail a failure prints is complete.
        base = self.base_config().replace("target: stdout", "target: stderr")
        conf.write_text(base + f"""key:
{keys}acl:
  - id: acme
    key: [{", ".join(SECRETS)}]
    action: update
    update-type: [TXT]
  - id: transfer
    address: 127.0.0.0/8
    action: transfer
template:
  - id: default
    storage: {self.workdir}/zones
    zonefile-sync: -1
    journal-content: changes
    semantic-checks: off
zone:
  - domain: {ORIGIN}
    file: {ORIGIN}zone
    acl: [acme, transfer]
""")
        return ["knotd", "-c", str(conf)]


class Tern(harness.ConfiguredTern):
    def command(self) -> list[str]:
        zone_file = self.workdir / f"{ORIGIN}zone"
        zone_file.write_text(ZONE_TEXT)
        (self.workdir / "state").mkdir(exist_ok=True)
        keys = "".join(f'  - {{name: {key}, algorithm: {ALGORITHMS[key]}, secret: "{secret}"}}\n'
                       for key, secret in SECRETS.items())
        rules = "".join(f"        - {{key: {key}, types: [TXT]}}\n" for key in SECRETS)
        self.config_text = f"""control-socket: {self.workdir / "state"}/tern.sock
keys:
{keys}zones:
  directory: {self.zone_dir}
  list:
    - origin: {ORIGIN}
      file: {zone_file}
      update:
{rules}transfer:
  allow: ["127.0.0.0/8"]
state-directory: {self.workdir / "state"}
"""
        conf = self.workdir / "tern.yaml"
        conf.write_text(self.config_text)
        # No `--zones`: it would replace `zones.list`.
        return [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}", "--config",
                str(conf)]


def make_server(name: str, root: pathlib.Path) -> smod.Server:
    empty = root / "no-zones"
    empty.mkdir(exist_ok=True)
    args = (root / name, empty, [ORIGIN.rstrip(".")])
    if name == "tern":
        return Tern(harness.tern_binary(), *args)
    return Knot(*args)


def zone_records(server: smod.Server) -> list[tuple[str, str, str]]:
    """The zone by AXFR: (owner, type, RDATA) of every record."""
    messages = dns.query.xfr(server.addr[0], ORIGIN, port=server.addr[1], relativize=False,
                             timeout=EXCHANGE_TIMEOUT, lifetime=60)
    zone = dns.zone.from_xfr(messages, relativize=False)
    return [(name.to_text().lower(), dns.rdatatype.to_text(rdata.rdtype), rdata.to_text())
            for name, _ttl, rdata in zone.iterate_rdatas()]


def serial(records) -> int:
    return next(int(data.split()[2]) for owner, rtype, data in records
                if owner == ORIGIN and rtype == "SOA")


def probe_update(server: smod.Server) -> str:
    """One allowed UPDATE that changes nothing (a TXT deleted that is not there); the
    RCODE, or why there was none."""
    key = CLIENTS[0][2]
    message = dns.update.UpdateMessage(ORIGIN)
    message.delete("probe." + ORIGIN, "TXT")
    # dnspython names HMAC-MD5 by its old registry name (RFC 8945), the
    # others by their own.
    algorithm = {"hmac-md5": dns.tsig.HMAC_MD5}.get(ALGORITHMS[key], ALGORITHMS[key])
    ring = dns.tsigkeyring.from_text({key: (algorithm, SECRETS[key])})
    message.use_tsig(ring, keyname=key, algorithm=algorithm)
    try:
        answer = dns.query.tcp(message, server.addr[0], port=server.addr[1],
                               timeout=EXCHANGE_TIMEOUT)
    except Exception as error:  # noqa: BLE001 - any failure means: no UPDATE here
        return f"no answer ({type(error).__name__}: {error})"
    return dns.rcode.to_text(answer.rcode())


def tern_takes_updates() -> tuple[bool, str]:
    try:
        harness.tern_binary()
    except smod.ServerError as error:
        return False, str(error)
    with tempfile.TemporaryDirectory(prefix="tern-acme-probe-") as tmp:
        tern = make_server("tern", pathlib.Path(tmp))
        try:
            with harness.serving({"tern": tern}):
                rcode = probe_update(tern)
        except smod.ServerError as error:
            last = str(error).strip().splitlines()
            return False, ("tern does not start with `update:` in its configuration "
                           f"({last[-1] if last else ''})")
    if rcode != "NOERROR":
        return False, f"tern answers {rcode} to a well-formed allowed UPDATE"
    return True, ""


#--- pebble


def throwaway_ca(directory: pathlib.Path) -> dict[str, pathlib.Path]:
    """A CA made here for this run, and pebble's HTTPS certificate (localhost and
    127.0.0.1) signed by it."""
    paths = {name: directory / name for name in
             ("ca.key", "ca.pem", "key.pem", "csr.pem", "cert.pem", "san.ext")}
    paths["san.ext"].write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for command in (
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=tern acme.py throwaway CA", "-keyout", paths["ca.key"], "-out",
         paths["ca.pem"]],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
         "-keyout", paths["key.pem"], "-out", paths["csr.pem"]],
        ["openssl", "x509", "-req", "-days", "2", "-in", paths["csr.pem"], "-CA",
         paths["ca.pem"], "-CAkey", paths["ca.key"], "-CAcreateserial", "-extfile",
         paths["san.ext"], "-out", paths["cert.pem"]],
    ):
        done = subprocess.run([str(part) for part in command], capture_output=True,
                              text=True, timeout=60)
        if done.returncode != 0:
            fail(f"openssl: {' '.join(map(str, command))}:\n{done.stderr}")
    return paths


class Pebble(smod.Server):
    """pebble on 127.0.0.1, validating DNS-01 against `dns_port` on 127.0.0.1 and
    nowhere else, at once (PEBBLE_VA_NOSLEEP), every nonce good (the clients' retries
    are not what is tested), no authorization reused (each client's TXT is asked for)."""

    name = "pebble"

    def __init__(self, workdir: pathlib.Path, dns_port: int, ca: dict):
        self.dns_port = dns_port
        self.ca = ca
        self.management_port = smod.free_port()
        super().__init__(workdir, workdir, [])

    @property
    def directory_url(self) -> str:
        return f"https://127.0.0.1:{self.port}/dir"

    def command(self) -> list[str]:
        config = self.workdir / "pebble.json"
        config.write_text(json.dumps({"pebble": {
            "listenAddress": f"127.0.0.1:{self.port}",
            "managementListenAddress": f"127.0.0.1:{self.management_port}",
            "certificate": str(self.ca["cert.pem"]),
            "privateKey": str(self.ca["key.pem"]),
            "httpPort": smod.free_port(),
            "tlsPort": smod.free_port(),
            "ocspResponderURL": "",
            "externalAccountBindingRequired": False,
        }}))
        return ["pebble", "-config", str(config), "-dnsserver", f"127.0.0.1:{self.dns_port}"]

    def start(self) -> None:
        os.environ.update({"PEBBLE_VA_NOSLEEP": "1", "PEBBLE_WFE_NONCEREJECT": "0",
                           "PEBBLE_AUTHZREUSE": "0"})
        super().start()

    def wait_ready(self, timeout: float, check_stop=lambda: None) -> None:
        """Until the ACME directory answers over HTTPS, with the throwaway CA trusted."""
        context = ssl.create_default_context(cafile=str(self.ca["ca.pem"]))
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise smod.ServerError(f"pebble exited while starting:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.directory_url, context=context,
                                            timeout=2) as answer:
                    if "newOrder" in json.load(answer):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise smod.ServerError(f"pebble's directory did not answer:\n{self.log_tail()}")
            time.sleep(0.1)


#--- the clients


def run_client(command: list[str], env: dict, what: str, *servers) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=CLIENT_TIMEOUT,
                          env={**os.environ, **env})
    if done.returncode != 0:
        fail(f"{what} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}", *servers)


def certbot(tmp: pathlib.Path, server: smod.Server, pebble: Pebble, algorithm: str,
            key: str, name: str) -> pathlib.Path:
    base = tmp / f"certbot-{key}"
    base.mkdir()
    credentials = base / "rfc2136.ini"
    credentials.write_text(f"""dns_rfc2136_server = 127.0.0.1
dns_rfc2136_port = {server.port}
dns_rfc2136_name = {key}
dns_rfc2136_secret = {SECRETS[key]}
dns_rfc2136_algorithm = {algorithm.upper()}
""")
    credentials.chmod(0o600)
    run_client(["certbot", "certonly", "--non-interactive", "--agree-tos", "--no-eff-email",
                "-m", "acme-test@" + ORIGIN.rstrip("."), "--server", pebble.directory_url,
                "--config-dir", str(base / "config"), "--work-dir", str(base / "work"),
                "--logs-dir", str(base / "logs"), "--authenticator", "dns-rfc2136",
                "--dns-rfc2136-credentials", str(credentials),
                "--dns-rfc2136-propagation-seconds", "0", "-d", name.rstrip(".")],
               {"REQUESTS_CA_BUNDLE": str(pebble.ca["ca.pem"])},
               f"certbot ({algorithm}) for {name}", server, pebble)
    return base / "config" / "live" / name.rstrip(".") / "cert.pem"


def lego(tmp: pathlib.Path, server: smod.Server, pebble: Pebble, algorithm: str, key: str,
         name: str) -> pathlib.Path:
    base = tmp / f"lego-{key}"
    base.mkdir()
    run_client(["lego", "--server", pebble.directory_url, "--accept-tos",
                "--email", "acme-test@" + ORIGIN.rstrip("."), "--path", str(base),
                "--dns", "rfc2136", "--dns.resolvers", f"127.0.0.1:{server.port}",
                "--dns.disable-cp", "--domains", name.rstrip("."), "run"],
               {"LEGO_CA_CERTIFICATES": str(pebble.ca["ca.pem"]),
                "RFC2136_NAMESERVER": f"127.0.0.1:{server.port}",
                "RFC2136_TSIG_KEY": key, "RFC2136_TSIG_SECRET": SECRETS[key],
                "RFC2136_TSIG_ALGORITHM": algorithm + ".",
                "RFC2136_PROPAGATION_TIMEOUT": "60", "RFC2136_POLLING_INTERVAL": "1"},
               f"lego ({algorithm}) for {name}", server, pebble)
    return base / "certificates" / f"{name.rstrip('.')}.crt"


def certificate_names(path: pathlib.Path) -> str:
    done = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in",
                           str(path)], capture_output=True, text=True, timeout=30)
    return done.stdout


def issue_all(name: str, tmp: pathlib.Path, ca: dict) -> None:
    """Every client's certificate through `name` (knot or tern)."""
    server = make_server(name, tmp)
    with harness.serving({name: server}):
        pebble = Pebble(tmp / f"pebble-{name}", server.port, ca)
        with harness.serving({"pebble": pebble}):
            for client, algorithm, key, domain in CLIENTS:
                before = serial(zone_records(server))
                issue = certbot if client == "certbot" else lego
                path = issue(tmp / name, server, pebble, algorithm, key, domain)
                if not path.is_file():
                    fail(f"{client} ({algorithm}) reported success but wrote no {path}",
                         server, pebble)
                if f"DNS:{domain.rstrip('.')}" not in certificate_names(path):
                    fail(f"{path} is not for {domain}: {certificate_names(path)}", server)
                records = zone_records(server)
                left = [r for r in records if r[0].startswith("_acme-challenge.")]
                if left:
                    fail(f"{client} ({algorithm}) left {left} in {name}'s zone", server)
                if serial(records) < before + 2:
                    fail(f"{name}'s serial went from {before} to {serial(records)} while "
                         f"{client} ({algorithm}) got its certificate: its TXT was not "
                         "added and deleted by UPDATE", server, pebble)
                print(f"update/acme: {name}: {client} with {algorithm} got a certificate "
                      f"for {domain} (serial {before} -> {serial(records)}, no TXT left)")


def in_private_network() -> None:
    """Runs this script again in a network namespace holding only `lo`, when it can
    make one (root); returns if it is already there or cannot."""
    if os.environ.get(NAMESPACE_MARK) or os.geteuid() != 0 or not shutil.which("unshare"):
        if not os.environ.get(NAMESPACE_MARK):
            print("update/acme: not root: running in this network namespace (loopback "
                  "addresses only)")
        return
    env = {**os.environ, NAMESPACE_MARK: "1"}
    command = ["unshare", "--net", "--", "sh", "-c",
               'ip link set lo up && exec "$0" "$@"', sys.executable, *sys.argv]
    sys.exit(subprocess.run(command, env=env).returncode)


def main() -> None:
    in_private_network()
    for tool in ("pebble", "certbot", "lego", "openssl", "knotd"):
        if not shutil.which(tool):
            fail(f"{tool} is not installed (make deps: scripts/install-test-deps.sh)")
    mode = os.environ.get("TERN_UPDATE", "")
    if mode not in ("", "0", "1"):
        fail(f"TERN_UPDATE is {mode!r}: 0 (leave tern out), 1 (require it) or unset (detect)")
    names = ["knot"]
    if mode == "0":
        print("update/acme: tern side skipped (TERN_UPDATE=0)")
    else:
        takes, why = tern_takes_updates()
        if takes:
            names.append("tern")
        elif mode == "1":
            fail(f"TERN_UPDATE=1 but {why}")
        else:
            print(f"update/acme: tern side skipped: tern refuses UPDATE ({why})")
    with tempfile.TemporaryDirectory(prefix="tern-acme-") as tmp:
        tmp = pathlib.Path(tmp)
        ca = throwaway_ca(tmp)
        for name in names:
            (tmp / name).mkdir()
            issue_all(name, tmp, ca)
    print("update/acme: PASS")


if __name__ == "__main__":
    main()
