#!/usr/bin/env python3
"""An UPDATE over the AF_XDP path (issue 25 with issue 12), between two network namespaces.

tern serves `example.com.` with `--xdp` on the server end of a veth pair (the namespaces,
veth, addresses and clean-up of tests/xdp/xdp.py, reused from it: 198.51.100.0/24 and
2001:db8::/32 only, all deleted on exit). From the client namespace, over UDP to port 53
(which the XDP program takes):

1. a query is answered through XDP (`tern_xdp_answered_total` rises);
2. an UPDATE signed with TSIG adding a TXT record, over IPv4 and over IPv6, is answered
   NOERROR (tern hands it to the update thread as over its sockets; before, REFUSED) with
   a TSIG the client verifies, from the address it was sent to, and the record is served;
   the UPDATE came in through XDP (`tern_xdp_received_total` counts it);
3. an UPDATE no rule allows (an A record) is REFUSED and changes nothing.

Usage (root; from the repository root):

    TERN_BIN=target/debug/tern python3 tests/update/xdp.py

Exits 1 on any failure, with the reason and tern's log.
"""

from __future__ import annotations

import atexit
import base64
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "xdp"))

import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.rcode  # noqa: E402
import dns.tsig  # noqa: E402
import dns.update  # noqa: E402

import xdp as x  # noqa: E402  (tests/xdp/xdp.py)

NAME = "update/xdp"
ZONE = "example.com"
SECRET = base64.b64encode(bytes(range(7, 39))).decode()
KEYRING = {dns.name.from_text("xdp-key."): dns.tsig.Key("xdp-key.", SECRET,
                                                        dns.tsig.HMAC_SHA256)}
PORT = 53
METRICS_PORT = 9102

ZONE_TEXT = f"""$ORIGIN {ZONE}.
$TTL 300
@ SOA ns1 hostmaster 1 7200 3600 1209600 300
  NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
"""


def config(workdir: pathlib.Path, zone_file: pathlib.Path) -> str:
    return f"""listen: ['{x.SERVER_V4}:{PORT}', '[{x.SERVER_V6}]:{PORT}']
keys:
  - {{name: xdp-key, algorithm: hmac-sha256, secret: "{SECRET}"}}
zones:
  list:
    - origin: {ZONE}.
      file: {zone_file}
      update:
        - {{key: xdp-key, types: [TXT]}}
control-socket: {workdir / 'tern.sock'}
zone-file-sync: 0
metrics:
  listen: '{x.SERVER_V4}:{METRICS_PORT}'
log-level: info
"""


def exchange(client: x.Client, message: dns.message.Message, family: int) -> dns.message.Message:
    """`message` over UDP from the client namespace; its answer, parsed (a TSIG checked)."""
    wire = message.to_wire()
    answer = client.udp(wire, family, PORT)
    if answer is None:
        raise x.Failure(f"no answer over IPv{family} to {message.question[0]}")
    return dns.message.from_wire(answer, keyring=KEYRING, request_mac=message.mac)


def main() -> int:
    if x.os.geteuid() != 0:
        print(f"{NAME}: FAIL: must run as root (network namespaces, BPF)", file=sys.stderr)
        return 1
    cleanup = x.Cleanup()
    atexit.register(cleanup.run)
    x.install_signal_handlers()
    tern = None
    client = None
    try:
        cleanup.directory = pathlib.Path(tempfile.mkdtemp(prefix="tern-update-xdp-"))
        network = x.set_up_network(cleanup)
        x.run(network.server.command(["ethtool", "-K", network.server_link, "rxvlan", "off",
                                      "rx-vlan-stag-hw-parse", "off"]))
        zone_dir = cleanup.directory / "zones"
        zone_dir.mkdir()
        zone_file = zone_dir / f"{ZONE}.zone"
        zone_file.write_text(ZONE_TEXT)
        workdir = cleanup.directory / "tern"
        tern = x.Tern("xdp", network, workdir, PORT, METRICS_PORT, config(workdir, zone_file),
                      True, cleanup)
        client = x.Client(network)
        tern.start()
        x.wait_answering(client, tern)
        before = tern.metrics()

        for family in (4, 6):
            owner = f"_acme-challenge{family}.{ZONE}."
            update = dns.update.Update(f"{ZONE}.", keyring=KEYRING, keyname="xdp-key.")
            update.add(owner, 60, "TXT", f'"over xdp {family}"')
            update.id = client.query_id()
            reply = exchange(client, update, family)
            if reply.rcode() != dns.rcode.NOERROR:
                raise x.Failure(f"an UPDATE over XDP (IPv{family}): "
                                f"{dns.rcode.to_text(reply.rcode())}, expected NOERROR\n"
                                f"{tern.log_tail()}")
            query = dns.message.make_query(owner, "TXT")
            query.id = client.query_id()
            served = exchange(client, query, family)
            texts = [r.to_text() for rrset in served.answer for r in rrset]
            if texts != [f'"over xdp {family}"']:
                raise x.Failure(f"the TXT added over XDP (IPv{family}) is not served: {served}")
            print(f"{NAME}: an UPDATE over XDP (IPv{family}) is NOERROR, TSIG-signed, "
                  "and served")

        refused = dns.update.Update(f"{ZONE}.", keyring=KEYRING, keyname="xdp-key.")
        refused.add(f"host.{ZONE}.", 60, "A", "192.0.2.9")
        refused.id = client.query_id()
        reply = exchange(client, refused, 4)
        if reply.rcode() != dns.rcode.REFUSED:
            raise x.Failure(f"an UPDATE no rule allows, over XDP: "
                            f"{dns.rcode.to_text(reply.rcode())}, expected REFUSED")
        query = dns.message.make_query(f"host.{ZONE}.", "A")
        query.id = client.query_id()
        if exchange(client, query, 4).rcode() != dns.rcode.NXDOMAIN:
            raise x.Failure("the REFUSED update changed the zone")
        print(f"{NAME}: an UPDATE no rule allows, over XDP, is REFUSED")

        after = tern.metrics()
        received = ((x.metric(after, x.METRIC_XDP_RECEIVED) or 0.0)
                    - (x.metric(before, x.METRIC_XDP_RECEIVED) or 0.0))
        # Three UPDATEs and three queries since `before`, each once at least.
        if received < 6:
            raise x.Failure(f"{x.METRIC_XDP_RECEIVED} rose by {received:.0f}, fewer than the "
                            "6 messages sent: they did not all come through XDP")
        tern.stop()
        tern = None
    except x.Failure as failure:
        print(f"{NAME}: FAIL: {failure}")
        if tern is not None:
            print(f"--- tern log:\n{tern.log_tail(40)}")
        return 1
    finally:
        if client is not None:
            client.close()
        cleanup.run()
    print(f"{NAME}: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
