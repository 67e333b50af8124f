#!/usr/bin/env python3
"""dnsdist as a DNS over TLS client in front of tern (issue 26).

    client ──UDP/TCP──► dnsdist 1.7 ──TLS (validated: CA, subjectName)──► tern tls.listen

tern serves a small zone on a plain listener and on `tls.listen` with a certificate
made here by openssl (a test CA, name dot.tern.test). dnsdist has tern's TLS address as
its only backend (`tls="openssl"`, `validateCertificates=true`, the CA and the name),
and its health check is an SOA query of the zone that must resolve. Checks:

1. Every question of a set, asked of dnsdist over UDP and over TCP, gets the answer
   tern gives directly over UDP (rcode, flags AA, answer and authority sections).
2. The queries reached tern over TLS: tern's
   tern_queries_by_transport_total{transport="tls"} grew by at least as many as
   dnsdist was asked (its health checks come on top), and
   tern_tls_handshakes_total{outcome="ok"} counted dnsdist's handshakes.
3. A second dnsdist whose backend names another subjectName gives up its handshakes
   with tern (tern counts them, failed or closed) and gets no answer through it
   (SERVFAIL or none): dnsdist really validates the name, so (1) went over an
   authenticated connection.

Every wait is for an event and bounded; dnsdist, tern and the temporary directory
go on exit.

Usage (from the repository root):

    TERN_BIN=target/release/tern python3 tests/tls/dnsdist_dot.py
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
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.exception  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402

import servers as smod  # noqa: E402

WAIT = 30.0
TIMEOUT = 3.0
NAME = "dot.tern.test"
ZONE = """$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
  NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
www AAAA 2001:db8::80
mail MX 10 mx1
mx1 A 192.0.2.25
alias CNAME www
txt TXT "over tls"
"""
QUESTIONS = [("example.com.", "SOA"), ("example.com.", "NS"), ("www.example.com.", "A"),
             ("www.example.com.", "AAAA"), ("mail.example.com.", "MX"),
             ("alias.example.com.", "A"), ("txt.example.com.", "TXT"),
             ("nx.example.com.", "A"), ("www.example.com.", "TXT"),
             ("other.test.", "A")]


class Failure(Exception):
    pass


def fail(message: str) -> None:
    raise Failure(message)


def wait_for(what: str, condition, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


def log_tail(log: pathlib.Path) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-25:])
    except OSError:
        return "(no log)"


class Process:
    def __init__(self, name: str, command: list[str], cwd: pathlib.Path) -> None:
        self.name = name
        self.log = cwd / f"{name}.log"
        self.proc = subprocess.Popen(command, cwd=cwd, stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def openssl(tmp: pathlib.Path, *args: str) -> None:
    done = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, timeout=30)
    if done.returncode != 0:
        fail(f"openssl {' '.join(args)}: {done.stderr.decode(errors='replace')}")


def make_certificates(tmp: pathlib.Path) -> None:
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl(tmp, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-subj",
            "/CN=tern dnsdist test CA", "-days", "2")
    (tmp / "san.ext").write_text(f"subjectAltName=DNS:{NAME}\nbasicConstraints=CA:FALSE\n"
                                 "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    openssl(tmp, "req", *ec, "-keyout", "tern.key", "-out", "tern.csr", "-subj", f"/CN={NAME}")
    openssl(tmp, "x509", "-req", "-in", "tern.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "tern.pem")


def start_tern(tmp: pathlib.Path) -> tuple[Process, dict]:
    (tmp / "zones").mkdir()
    (tmp / "zones" / "example.com.zone").write_text(ZONE)
    ports = {"plain": smod.free_port(), "tls": smod.free_port(), "metrics": smod.free_port()}
    (tmp / "tern.yaml").write_text(
        f"listen: ['127.0.0.1:{ports['plain']}']\n"
        "zones:\n  directory: zones\n"
        "control-socket: tern.sock\n"
        f"metrics:\n  listen: 127.0.0.1:{ports['metrics']}\n"
        f"tls:\n  listen: ['127.0.0.1:{ports['tls']}']\n"
        f"  certificate: {tmp}/tern.pem\n  key: {tmp}/tern.key\n")
    tern_bin = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
    tern = Process("tern", [str(tern_bin), "serve", "--config", str(tmp / "tern.yaml")], tmp)
    wait_for("tern to serve",
             lambda: " info: serving " in tern.log.read_text(errors="replace") or tern.exited())
    if tern.exited():
        fail(f"tern exited at start:\n{log_tail(tern.log)}")
    return tern, ports


def start_dnsdist(tmp: pathlib.Path, name: str, backend: int, subject: str) -> tuple[Process, int]:
    port = smod.free_port()
    conf = tmp / f"{name}.conf"
    conf.write_text(
        f'setLocal("127.0.0.1:{port}")\n'
        'setACL({"127.0.0.0/8"})\n'
        'setSecurityPollSuffix("")\n'
        f'newServer({{address="127.0.0.1:{backend}", tls="openssl", '
        f'subjectName="{subject}", validateCertificates=true, caStore="{tmp}/ca.pem", '
        'checkName="example.com.", checkType="SOA", mustResolve=true, checkInterval=1})\n')
    dnsdist = Process(name, ["dnsdist", "--supervised", "--disable-syslog", "-C", str(conf)],
                      tmp)
    return dnsdist, port


def summary(reply: dns.message.Message):
    return (reply.rcode(), bool(reply.flags & dns.flags.AA),
            sorted(str(rrset).lower() for rrset in reply.answer),
            sorted(str(rrset).lower() for rrset in reply.authority))


def ask(qname: str, rtype: str, port: int, tcp: bool) -> dns.message.Message:
    query = dns.message.make_query(qname, rtype)
    query.flags &= ~dns.flags.RD
    if tcp:
        return dns.query.tcp(query, "127.0.0.1", port=port, timeout=TIMEOUT)
    return dns.query.udp(query, "127.0.0.1", port=port, timeout=TIMEOUT)


def metric(ports: dict, pattern: str) -> int:
    url = f"http://127.0.0.1:{ports['metrics']}/metrics"
    text = urllib.request.urlopen(url, timeout=TIMEOUT).read().decode()
    return sum(int(float(m.group(1))) for m in re.finditer(pattern, text, re.M))


TLS_QUERIES = r'^tern_queries_by_transport_total\{transport="tls",family="ipv4"\} (\S+)$'
TLS_OK = r'^tern_tls_handshakes_total\{outcome="ok",version="[\w.]+"\} (\S+)$'
# A client that rejects the certificate ends the handshake with an alert (failed) or by
# closing (closed).
TLS_REFUSED = r'^tern_tls_handshakes_total\{outcome="(?:failed|closed)",version="[\w.]+"\} (\S+)$'


def main() -> int:
    processes: list[Process] = []
    with tempfile.TemporaryDirectory(prefix="tern-dnsdist-dot-") as tmp:
        tmp = pathlib.Path(tmp)
        try:
            make_certificates(tmp)
            tern, ports = start_tern(tmp)
            processes.append(tern)
            dnsdist, port = start_dnsdist(tmp, "dnsdist", ports["tls"], NAME)
            processes.append(dnsdist)

            def through() -> bool:
                if dnsdist.exited():
                    fail(f"dnsdist exited:\n{log_tail(dnsdist.log)}")
                try:
                    return ask("www.example.com.", "A", port, False).rcode() == dns.rcode.NOERROR
                except Exception:
                    return False
            wait_for("dnsdist to answer through tern over TLS", through)

            # 1. The same answers as tern's own.
            before = metric(ports, TLS_QUERIES)
            asked = 0
            for tcp in (False, True):
                for qname, rtype in QUESTIONS:
                    direct = summary(ask(qname, rtype, ports["plain"], False))
                    proxied = summary(ask(qname, rtype, port, tcp))
                    asked += 1
                    if direct != proxied:
                        fail(f"{qname} {rtype} over {'TCP' if tcp else 'UDP'} through dnsdist: "
                             f"{proxied}, tern directly: {direct}")
            # 2. They came over TLS.
            reached = metric(ports, TLS_QUERIES) - before
            if reached < asked:
                fail(f"tern counted {reached} queries over TLS for {asked} asked of dnsdist")
            handshakes = metric(ports, TLS_OK)
            if handshakes < 1:
                fail("no TLS handshake counted")
            print(f"tls/dnsdist: {asked} questions through dnsdist (UDP and TCP) answered as "
                  f"tern answers them; tern counted {reached} queries over TLS and "
                  f"{handshakes} handshakes")

            # 3. Another name: dnsdist refuses tern's certificate, nothing gets through.
            refused_before = metric(ports, TLS_REFUSED)
            wrong, wrong_port = start_dnsdist(tmp, "dnsdist-wrong", ports["tls"],
                                              "other.tern.test")
            processes.append(wrong)
            wait_for("tern to see the second dnsdist give up a handshake",
                     lambda: metric(ports, TLS_REFUSED) > refused_before or wrong.exited())
            if wrong.exited():
                fail(f"the second dnsdist exited:\n{log_tail(wrong.log)}")
            try:
                reply = ask("www.example.com.", "A", wrong_port, False)
                if reply.rcode() == dns.rcode.NOERROR and reply.answer:
                    fail("dnsdist with the wrong subjectName got an answer through tern")
                outcome = dns.rcode.to_text(reply.rcode())
            except dns.exception.Timeout:
                outcome = "no answer"
            print(f"tls/dnsdist: with subjectName other.tern.test, tern's certificate is "
                  f"refused by dnsdist ({outcome})")
        except Failure as failure:
            print(f"tls/dnsdist: FAIL: {failure}")
            for process in processes:
                print(f"--- {process.name} log:\n{log_tail(process.log)}")
            return 1
        finally:
            for process in processes:
                process.stop()
    print("tls/dnsdist: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
