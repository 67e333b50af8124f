#!/usr/bin/env python3
"""tern's Prometheus endpoint, read by a real Prometheus (Debian's `prometheus`).

tern serves two zones on 127.0.0.1 with `metrics.listen` set. The test sends a known
mix of queries (UDP over IPv4 and IPv6, TCP, names of each zone and of no zone, a
query type counted as `other`, a malformed message), waits until tern's own endpoint
counts every one of them, and checks the exposition with `promtool check metrics`.
Then it starts Prometheus with a 1 s scrape interval against that endpoint, waits
until the series reach Prometheus's HTTP API, and compares them with what was sent.

Every wait is for an event (a count reached, a series seen) and bounded; the
processes and the temporary directory go on exit.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.message  # noqa: E402
import dns.query  # noqa: E402
import dns.rcode  # noqa: E402
import dns.rdatatype  # noqa: E402

import servers as smod  # noqa: E402  (tests/differential/servers.py)

SCRIPT = "metrics/prometheus.py"
WAIT = 60.0  # seconds for any one event (Prometheus's first scrapes included)

ZONE_COM = """$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 7 3600 900 604800 300
@ NS ns1
ns1 A 127.0.0.1
www A 127.0.0.2
"""

ZONE_NET = ZONE_COM.replace("example.com.", "example.net.").replace(" 7 ", " 42 ")

# What the test sends: (name, type, transport, family, count, the answer's rcode).
MIX = [
    ("www.example.com.", "A", "udp", "ipv4", 7, "NOERROR"),
    ("www.example.com.", "AAAA", "udp", "ipv6", 3, "NOERROR"),
    ("example.com.", "SOA", "tcp", "ipv4", 2, "NOERROR"),
    ("nothing.example.net.", "A", "udp", "ipv4", 5, "NXDOMAIN"),
    ("www.example.org.", "A", "udp", "ipv4", 4, "REFUSED"),  # not ours: no zone
    ("www.example.com.", "TYPE65280", "udp", "ipv4", 1, "NOERROR"),  # type `other`
]


def fail(message: str, *logs: pathlib.Path) -> None:
    print(f"{SCRIPT}: FAIL: {message}", file=sys.stderr)
    for log in logs:
        try:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            tail = "(no log)"
        print(f"--- {log.name} ---\n{tail}", file=sys.stderr)
    sys.exit(1)


def check_alert_rules(tmp: pathlib.Path) -> None:
    """docs/operations.md's Prometheus rules (the ```yaml blocks of "What to alert on")
    pass `promtool check rules`, and name only series tern serves."""
    doc = (HERE.parent.parent / "docs" / "operations.md").read_text()
    section = doc.split("### What to alert on", 1)[-1].split("\n## ", 1)[0]
    blocks = section.split("```yaml\n")[1:]
    if not blocks:
        fail("docs/operations.md: no ```yaml rules under \"What to alert on\"")
    metrics_rs = (HERE.parent.parent / "crates" / "tern" / "src" / "metrics.rs").read_text()
    for number, block in enumerate(blocks):
        rules = block.split("```", 1)[0]
        path = tmp / f"rules-{number}.yml"
        path.write_text(rules)
        check = subprocess.run(["promtool", "check", "rules", str(path)],
                               capture_output=True, text=True)
        if check.returncode != 0:
            fail(f"promtool check rules on docs/operations.md's block {number}: "
                 f"rc {check.returncode}\n{check.stdout}{check.stderr}\n{rules}")
        for series in sorted(set(re.findall(r"\btern_[a-z_]+", rules))):
            if f'"{series}"' not in metrics_rs:
                fail(f"docs/operations.md's rules name {series}, which tern does not serve")
        print(f"{SCRIPT}: promtool check rules: {check.stdout.strip().splitlines()[-1]}")


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.read().decode()


def parse_exposition(text: str) -> dict[str, float]:
    """Sample lines as {'name{labels}': value}."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def wait_for(what: str, condition, logs) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    fail(f"timed out waiting for {what}", *logs)


def ask(name: str, rtype: str, transport: str, family: str, port: int) -> dns.message.Message:
    query = dns.message.make_query(name, dns.rdatatype.from_text(rtype), use_edns=False)
    where = "127.0.0.1" if family == "ipv4" else "::1"
    if transport == "tcp":
        return dns.query.tcp(query, where, port=port, timeout=5)
    return dns.query.udp(query, where, port=port, timeout=5)


def main() -> None:
    tern_bin = pathlib.Path(os.environ.get("TERN_BIN", "target/release/tern")).resolve()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-metrics-"))
    tern = None
    prometheus = None
    try:
        (tmp / "zones").mkdir()
        (tmp / "zones" / "example.com.zone").write_text(ZONE_COM)
        (tmp / "zones" / "example.net.zone").write_text(ZONE_NET)
        port = smod.free_port()
        metrics_port = free_tcp_port()
        (tmp / "tern.yaml").write_text(
            f"listen: ['127.0.0.1:{port}', '[::1]:{port}']\n"
            "zones:\n  directory: zones\n"
            "control-socket: tern.sock\n"
            f"metrics:\n  listen: 127.0.0.1:{metrics_port}\n"
        )
        tern_log = tmp / "tern.log"
        tern = subprocess.Popen(
            [str(tern_bin), "serve", "--config", str(tmp / "tern.yaml")],
            cwd=tmp, stdout=subprocess.DEVNULL, stderr=open(tern_log, "wb"),
        )
        endpoint = f"http://127.0.0.1:{metrics_port}/metrics"
        wait_for("tern to serve", lambda: " info: serving " in tern_log.read_text(), [tern_log])

        # The mix, each answer checked as it comes.
        for name, rtype, transport, family, count, rcode in MIX:
            for _ in range(count):
                reply = ask(name, rtype, transport, family, port)
                if dns.rcode.to_text(reply.rcode()) != rcode:
                    fail(f"{name} {rtype}: {dns.rcode.to_text(reply.rcode())}, expected {rcode}",
                         tern_log)
        # A malformed message (a header that promises a question it lacks):
        # dropped or FORMERR, counted either way.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"\x12\x34\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00", ("127.0.0.1", port))

        sent = sum(entry[4] for entry in MIX) + 1

        def tern_samples() -> dict[str, float]:
            return parse_exposition(http_get(endpoint))

        # Every query of the mix is counted once the malformed one (sent last) is.
        wait_for(
            f"tern to count {sent} queries",
            lambda: sum(v for k, v in tern_samples().items()
                        if k.startswith("tern_queries_total{")) >= sent,
            [tern_log],
        )
        text = http_get(endpoint)
        samples = parse_exposition(text)
        expected = {
            'tern_queries_total{zone="example.com.",type="A"}': 7,
            'tern_queries_total{zone="example.com.",type="AAAA"}': 3,
            'tern_queries_total{zone="example.com.",type="SOA"}': 2,
            'tern_queries_total{zone="example.com.",type="other"}': 1,
            'tern_queries_total{zone="example.net.",type="A"}': 5,
            'tern_queries_total{type="A"}': 4,  # example.org: no zone
            'tern_queries_total{type="other"}': 1,  # the malformed message
            'tern_queries_by_transport_total{transport="udp",family="ipv4"}': 18,
            'tern_queries_by_transport_total{transport="udp",family="ipv6"}': 3,
            'tern_queries_by_transport_total{transport="tcp",family="ipv4"}': 2,
            'tern_queries_by_transport_total{transport="tcp",family="ipv6"}': 0,
            'tern_answers_total{zone="example.net.",rcode="NXDOMAIN"}': 5,
            'tern_answers_total{rcode="REFUSED"}': 4,
            'tern_zone_serial{zone="example.com."}': 7,
            'tern_zone_serial{zone="example.net."}': 42,
            'tern_tcp_connections_accepted_total': 2,
            'tern_build_info{version="' + tern_version(tern_bin) + '"}': 1,
        }
        for key, value in expected.items():
            if samples.get(key) != value:
                fail(f"tern's endpoint: {key} is {samples.get(key)}, expected {value}\n{text}",
                     tern_log)
        zone_noerror = samples.get('tern_answers_total{zone="example.com.",rcode="NOERROR"}', 0)
        if zone_noerror != 13:
            fail(f"example.com. NOERROR answers: {zone_noerror}, expected 13\n{text}", tern_log)
        # The cache answered the repeats: every UDP query of a zone after the first.
        if samples.get("tern_answers_from_cache_total", 0) < 10:
            fail(f"cache hits not counted\n{text}", tern_log)

        check = subprocess.run(["promtool", "check", "metrics"], input=text,
                               capture_output=True, text=True)
        if check.returncode != 0 or check.stdout.strip() or check.stderr.strip():
            fail(f"promtool check metrics: rc {check.returncode}\n{check.stdout}{check.stderr}")

        check_alert_rules(tmp)

        # Other paths and methods.
        for path, status in (("/nothing", 404),):
            try:
                http_get(f"http://127.0.0.1:{metrics_port}{path}")
                fail(f"{path} answered 200")
            except urllib.error.HTTPError as err:
                if err.code != status:
                    fail(f"{path}: HTTP {err.code}, expected {status}")

        # A real Prometheus scrapes it.
        prom_port = free_tcp_port()
        (tmp / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: tern\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        )
        prom_log = tmp / "prometheus.log"
        prometheus = subprocess.Popen(
            ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            cwd=tmp, stdout=subprocess.DEVNULL, stderr=open(prom_log, "wb"),
        )
        api = f"http://127.0.0.1:{prom_port}/api/v1/query?query="

        def prom_value(expr: str) -> float | None:
            try:
                reply = json.loads(http_get(api + urllib.parse.quote(expr)))
            except (OSError, ValueError):
                return None
            result = reply.get("data", {}).get("result", [])
            if reply.get("status") != "success" or len(result) != 1:
                return None
            return float(result[0]["value"][1])

        # The scrape target is up, and the counts arrive as tern counted them.
        wait_for("Prometheus to scrape tern",
                 lambda: prom_value('up{job="tern"}') == 1, [prom_log, tern_log])
        for expr, value in (
            ('tern_queries_total{zone="example.com.",type="A"}', 7),
            ('sum(tern_queries_total{zone="example.net."})', 5),
            ('tern_answers_total{rcode="REFUSED",zone=""}', 4),
            ('tern_zone_serial{zone="example.net."}', 42),
            ('sum(tern_queries_by_transport_total)', sent),
            ('tern_build_info', 1),
        ):
            wait_for(f"Prometheus to read {expr} = {value}",
                     lambda: prom_value(expr) == value, [prom_log, tern_log])
        start = prom_value("tern_start_time_seconds")
        if start is None or not time.time() - 600 < start <= time.time():
            fail(f"tern_start_time_seconds is {start}", prom_log)
        print(f"{SCRIPT}: OK: {sent} queries counted by type, zone, transport and rcode; "
              "promtool accepts the exposition; Prometheus scraped and read back the series")
    finally:
        for proc in (prometheus, tern):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def tern_version(binary: pathlib.Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.split()[-1]


if __name__ == "__main__":
    main()
