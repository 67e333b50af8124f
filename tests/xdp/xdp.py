#!/usr/bin/env python3
"""tern's AF_XDP path (issue 12), against its own socket path, between two network namespaces.

What it proves, in order (each step's checks are listed in its function):

1. Set-up. Two network namespaces of its own, `tern-xdp-srv-PID` and `tern-xdp-cli-PID`,
   joined by one veth pair (`txsPID` in the server namespace, `txcPID` in the client one),
   created directly inside them (the machine's own namespace gains no interface). Addresses
   come only from 198.51.100.0/24 and 2001:db8::/32: the server end is 198.51.100.1/24 and
   2001:db8::1/64, the client end .2 and ::2, both IPv6 addresses `nodad`. TX checksum
   offload is turned off on the client end (`ethtool -K txcPID tx off`): on a veth the
   kernel otherwise leaves UDP checksums partial (the pseudo-header sum only, to be finished
   by a NIC that does not exist); real NICs deliver full checksums, and the crafted frames
   need checksums that are exactly right or exactly wrong. A datagram per family to the
   discard port, caught on the server end, proves the checksums are complete. (Step 4 turns
   offload on for a moment: tern accepts partial checksums, docs/decisions/0012.)
   Before tern starts, a two-instruction XDP_PASS program is attached to the server end
   (native mode) and detached again, so that the "is a program attached" check used by
   step 6 is known to see one; and the answer comparison of step 3 is run on made-up
   messages (a server cookie of the next second equal, anything else not). The
   namespaces, the processes and the temporary directory go on exit (try/finally, atexit,
   SIGINT/SIGTERM/SIGHUP); a namespace that cannot be created FAILS the test, never skips it.
   VLAN stripping (issue 22): the veth can take VLAN tags out of received frames, as a NIC
   does with `rxvlan` (and has it on by default); tern must then refuse to start with
   `--xdp`, naming the feature and the `ethtool -K` that turns it off, with no program left
   attached: once with `rx-vlan-hw-parse` on, once with `rx-vlan-stag-hw-parse` on. Both
   are then turned off for the rest of the run.
2. In the server namespace, tern A with `--xdp txsPID` on 198.51.100.1:53 and
   [2001:db8::1]:53, and tern B, the socket path, on the same addresses at port 5300 (the
   XDP program takes only A's listen port, so B's traffic goes through the kernel). Same
   zones and configuration otherwise: `cookies.secret`, `nsid`, `udp-size` left at its
   default; A's metrics on 198.51.100.1:9100, B's on :9101. Zones: every zone in the
   repository's zones/ (read in place), the differential suite's generated zones renamed
   from example.com to example.org (wildcards, CNAME chains, DNAME, delegations, large
   RRsets), and `big.test`, whose RRsets do not fit 512 or 1232 octets. A's log must say
   its AF_XDP socket runs in copy mode: a veth has no zero-copy, so the kernel fell back
   from it within tern's one bind (issue 22: no second bind after a refused zero-copy one).
3. A generated query list (`QUERY_COUNT` queries plus fixed cases; seed `SEED`, or
   TERN_XDP_TEST_SEED): existing names, NXDOMAIN, NODATA, wildcards, CNAMEs, referrals,
   ANY, DS, unknown types, CH class, names of no zone, over IPv4 and IPv6, without EDNS
   and with sizes 512..4096, DO, NSID, client cookies, full cookies (a server cookie that
   A gave), bogus server cookies and malformed cookies, EDNS version 1, an unknown option,
   RD, 0x20 mixed case, and a cookie-only query (no question). Each is sent with the same
   bytes to A:53 and to B:5300 and the two answers must be equal octet for octet, except
   the server cookie (see `Comparison.answers`): its timestamp may differ when the two
   answers straddle a second, so the client cookie is compared exactly, the server
   cookie's length (16), version (1) and reserved octets (0) are checked, the timestamps
   must be within `COOKIE_CLOCK_SLACK` seconds, and when they are equal the whole server
   cookie must be equal too (same secret, same client address: RFC 9018's hash is then
   the same). A few queries are also made with dig and kdig and their printed answers
   compared, less the lines that carry times and the server's port. Each answer that A
   truncated (TC=1) is asked again over TCP at A:53 (the kernel path) and must come
   whole and equal to B's TCP answer. With XDP, `tern_xdp_answered_total` must have risen
   by at least the number of UDP answers A gave (proof they did not come through A's
   kernel sockets).
4. While XDP is attached: TCP to 198.51.100.1:53 and [2001:db8::1]:53 answers, and
   ICMP and ICMPv6 echo (sent from a raw socket; no `ping` needed) get their replies.
5. Hostile frames (`hostile_cases`), built by hand (Ethernet, 802.1Q, IPv4, IPv6,
   extension headers, UDP, checksums) and sent from an AF_PACKET socket on the client
   end, addressed to the server end's MAC address. Each goes to A:53 and, rebuilt for
   port 5300, to B, and the replies are caught by a second AF_PACKET socket on the client
   end (which also sees replies the client's kernel would drop, such as VLAN-tagged
   ones: proven first by frames sent raw from the server end, one tagged). After each
   frame a normal query must be answered (the core still serves). Each case says what
   must happen: `answer` (A and B answer, equally), `none` (neither answers), `same` (A
   does what B does) or `record` (printed, not judged). With XDP, A's metrics are read
   before each frame and after its normal query: a case marked as an XDP drop must raise
   `tern_xdp_dropped_total`, and the counter of its reason where it names one (each
   case's rise is printed); at the end the sum over the reasons must have risen by at
   least the number of drop cases, and each reason named by at least its count.
6. Detach: after SIGTERM of A, `ip -d link show txsPID` shows no XDP program; a new A is
   killed with SIGKILL, and the next A starts, shows exactly one program, and answers
   (through XDP: its answered counter rises).

TERN_XDP_TEST_NO_XDP=1 runs A without `--xdp` (a second socket path): for developing this
script before the XDP path exists. Every check then runs against the kernel, except those
that read the XDP counters or expect a program attached, which are reported as skipped;
the Makefile target never sets it.

Every wait is for an event (a log line, an answer, a process's exit) and bounded by a
deadline; the whole run by `TIME_LIMIT` (SIGALRM).

Usage (root: namespaces, raw sockets, BPF):

    TERN_BIN=target/release/tern python3 tests/xdp/xdp.py
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import ipaddress
import json
import os
import pathlib
import platform
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "differential"))

import dns.edns  # noqa: E402
import dns.flags  # noqa: E402
import dns.message  # noqa: E402
import dns.name  # noqa: E402
import dns.rdatatype  # noqa: E402
import dns.zone  # noqa: E402

import zones as differential_zones  # noqa: E402  (tests/differential/zones.py)

#----------- Constants ---------------------------------------------------------

SCRIPT = "xdp/xdp.py"

# The XDP counters of the metrics endpoint (issue 12; rename here if the names shift).
METRIC_XDP_RECEIVED = "tern_xdp_received_total"
METRIC_XDP_ANSWERED = "tern_xdp_answered_total"
METRIC_XDP_DROPPED = "tern_xdp_dropped_total"  # label `reason`, one of DROP_REASONS
DROP_REASON_LABEL = "reason"
DROP_REASONS = (
    "short", "link", "ip_header", "ip_length", "udp_length", "checksum", "source", "destination",
)

# The cold-cache allocation step: names flooded, and the answer cache's size (both terns),
# small so that most of the flood's inserts evict.
FLOOD_NAMES = 3000
CACHE_ENTRIES = 1024

# The rate-limiting step: identical queries sent at once (5 answers a second allowed).
RRL_BURST = 60

# Environment: the development switch (never set by the Makefile), the seed, the binary.
ENV_NO_XDP = "TERN_XDP_TEST_NO_XDP"
ENV_SEED = "TERN_XDP_TEST_SEED"
USE_XDP = os.environ.get(ENV_NO_XDP, "") in ("", "0")
# Optional: `cores:` for both terns (`all`, `0,1`; default: one unpinned core), and the
# veth's active queues (`ethtool -L`; default: the veth's own, 1 RX queue of 2 possible).
CORES = os.environ.get("TERN_XDP_TEST_CORES", "")
QUEUES = os.environ.get("TERN_XDP_TEST_QUEUES", "")

# Addresses: documentation prefixes only (RFC 5737, RFC 3849).
SERVER_V4 = "198.51.100.1"
CLIENT_V4 = "198.51.100.2"
SERVER_V6 = "2001:db8::1"
CLIENT_V6 = "2001:db8::2"
PORT_A = 53  # tern A: XDP
PORT_B = 5300  # tern B: the socket path
PORT_SELF_CHECK = 9  # discard: the harness's own checks send there, nothing listens
METRICS_PORT_A = 9100
METRICS_PORT_B = 9101

COOKIE_SECRET = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
NSID = "tern-xdp-test"
CLIENT_COOKIE = bytes.fromhex("a1b2c3d4e5f60718")
COOKIE_CLOCK_SLACK = 3  # seconds two server cookies' timestamps may differ by

SEED = int(os.environ.get(ENV_SEED, "12"))
QUERY_COUNT = 320  # generated queries, on top of the fixed ones
MIN_TRUNCATED = 10  # the list must make A truncate at least this many answers

TIME_LIMIT = 900  # seconds for the whole run
START_WAIT = 30.0  # seconds for tern to serve
STOP_WAIT = 10.0  # seconds for tern to exit after SIGTERM (it promises 2 s)
ANSWER_WAIT = 2.0  # seconds one UDP attempt waits for its answer
ANSWER_ATTEMPTS = 3
EVENT_WAIT = 10.0  # seconds for other events (a link up, a reply to a crafted frame)

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 1 << 4

CLONE_NEWNET = 0x40000000

LIBC = ctypes.CDLL(None, use_errno=True)


class Failure(Exception):
    """A check failed in a way that ends the run."""


class Interrupted(BaseException):
    """A signal asked us to stop (SIGINT, SIGTERM, SIGHUP) or the time limit passed."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(what)
        self.code = code


def say(message: str) -> None:
    print(f"{SCRIPT}: {message}", flush=True)


def run(argv: list[str], timeout: float = 30.0, check: bool = True) -> subprocess.CompletedProcess:
    """Runs a command to completion (bounded by `timeout`), capturing its output."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Failure(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s")
    except OSError as e:
        raise Failure(f"cannot run `{' '.join(argv)}`: {e}")
    if check and done.returncode != 0:
        raise Failure(f"`{' '.join(argv)}` exited with {done.returncode}: "
                      f"{(done.stderr or done.stdout).strip()}")
    return done


def wait_for(what: str, condition, timeout: float = EVENT_WAIT, interval: float = 0.05):
    """Polls `condition` until it returns something true; fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


#----------- Clean-up ----------------------------------------------------------

class Cleanup:
    """What this run made, undone once: processes (by their own process group), then
    namespaces (deleting the server one takes the veth pair with it), then the directory."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen] = []
        self.namespaces: list[Namespace] = []
        self.directory: pathlib.Path | None = None
        self.done = False

    def run(self) -> None:
        if self.done:
            return
        self.done = True
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        signal.alarm(0)
        for proc in self.processes:
            stop_process(proc)
        for namespace in reversed(self.namespaces):
            done = subprocess.run(["ip", "netns", "delete", namespace.name], capture_output=True,
                                  text=True, timeout=30, stdin=subprocess.DEVNULL)
            if done.returncode != 0 and os.path.exists(f"/run/netns/{namespace.name}"):
                print(f"{SCRIPT}: could not delete namespace {namespace.name}: "
                      f"{done.stderr.strip()}", file=sys.stderr)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the process group this script started (start_new_session)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, STOP_WAIT), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class Deferral:
    """While `held()`, a stop signal is remembered instead of raised, and raised at the end,
    so that nothing is made (a namespace, a process) without being registered for clean-up.
    (Not the signal mask: a child would inherit it, and tern would never see SIGTERM.)"""

    depth = 0
    pending: Interrupted | None = None

    @classmethod
    @contextlib.contextmanager
    def held(cls):
        cls.depth += 1
        try:
            yield
        finally:
            cls.depth -= 1
        if cls.depth == 0 and cls.pending is not None:
            pending, cls.pending = cls.pending, None
            raise pending

    @classmethod
    def stop(cls, interruption: Interrupted) -> None:
        if cls.depth:
            cls.pending = cls.pending or interruption
        else:
            raise interruption


def install_signal_handlers() -> None:
    def interrupted(signum, _frame):
        Deferral.stop(Interrupted(f"stopped by {signal.Signals(signum).name}", 128 + signum))

    def too_long(_signum, _frame):
        Deferral.stop(Interrupted(f"the run took more than its limit of {TIME_LIMIT} s", 1))

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(TIME_LIMIT)


#----------- Network namespaces ------------------------------------------------

def setns(fd: int) -> None:
    if LIBC.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


class Namespace:
    """A named network namespace (`ip netns`). `entered()` moves this thread into it for
    the duration of a `with` block: sockets made there stay in it afterwards."""

    def __init__(self, name: str) -> None:
        self.name = name

    def create(self, cleanup: Cleanup) -> None:
        with Deferral.held():
            done = run(["ip", "netns", "add", self.name], check=False)
            if done.returncode == 0:
                cleanup.namespaces.append(self)
        if done.returncode != 0:
            raise Failure(f"cannot create network namespace {self.name} (`ip netns add` "
                          f"exited with {done.returncode}: {done.stderr.strip()}); this test "
                          "needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and a kernel with network "
                          "namespaces")

    def ip(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(["ip", "-n", self.name, *args], check=check)

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace (`ip netns exec` also mounts its /sys)."""
        return ["ip", "netns", "exec", self.name, *argv]

    @contextlib.contextmanager
    def entered(self):
        # A stop signal waits for the way back (a signal raised between the two setns
        # would leave the rest of the run in this namespace).
        with Deferral.held():
            target = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
            home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            try:
                setns(target)
                try:
                    yield
                finally:
                    setns(home)
            finally:
                os.close(home)
                os.close(target)


@dataclasses.dataclass
class Network:
    server: Namespace
    client: Namespace
    server_link: str
    client_link: str
    server_mac: bytes
    client_mac: bytes


def link_json(namespace: Namespace, link: str, details: bool = False) -> dict:
    args = ["-j"] + (["-d"] if details else []) + ["link", "show", "dev", link]
    return json.loads(namespace.ip(*args).stdout)[0]


def set_up_network(cleanup: Cleanup) -> Network:
    """Step 1: the namespaces, the veth pair, addresses, links up, checksum offload off."""
    pid = os.getpid()
    server = Namespace(f"tern-xdp-srv-{pid}")
    client = Namespace(f"tern-xdp-cli-{pid}")
    server_link, client_link = f"txs{pid}", f"txc{pid}"
    for namespace in (server, client):
        if os.path.exists(f"/run/netns/{namespace.name}"):
            raise Failure(f"network namespace {namespace.name} exists already (left by a "
                          "killed run with this PID?); delete it with `ip netns delete "
                          f"{namespace.name}`")
        namespace.create(cleanup)
    # Both ends are made inside the namespaces: nothing appears in the machine's own.
    server.ip("link", "add", server_link, "type", "veth", "peer", "name", client_link,
              "netns", client.name)
    for namespace, link, v4, v6 in ((server, server_link, SERVER_V4, SERVER_V6),
                                    (client, client_link, CLIENT_V4, CLIENT_V6)):
        namespace.ip("link", "set", "lo", "up")
        namespace.ip("address", "add", f"{v4}/24", "dev", link)
        namespace.ip("-6", "address", "add", f"{v6}/64", "dev", link, "nodad")
        namespace.ip("link", "set", link, "up")
    run(client.command(["ethtool", "-K", client_link, "tx", "off"]))
    if QUEUES:
        for namespace, link in ((server, server_link), (client, client_link)):
            run(namespace.command(["ethtool", "-L", link, "rx", QUEUES, "tx", QUEUES]))

    def up(namespace: Namespace, link: str, v6: str) -> bool:
        info = link_json(namespace, link)
        if info.get("operstate") != "UP":
            return False
        addresses = json.loads(namespace.ip("-j", "address", "show", "dev", link).stdout)[0]
        for address in addresses.get("addr_info", []):
            if address.get("local") == v6:
                return not address.get("tentative") and not address.get("dadfailed")
        return False

    wait_for("both veth ends up with their addresses",
             lambda: up(server, server_link, SERVER_V6) and up(client, client_link, CLIENT_V6))
    server_mac = bytes.fromhex(link_json(server, server_link)["address"].replace(":", ""))
    client_mac = bytes.fromhex(link_json(client, client_link)["address"].replace(":", ""))
    network = Network(server, client, server_link, client_link, server_mac, client_mac)
    check_full_checksums(network)
    return network


def check_full_checksums(network: Network) -> None:
    """UDP from the client's sockets reaches the server end with complete checksums (the
    offload is off), as from a NIC: one datagram per family to the discard port, seen by
    an AF_PACKET socket on the server end."""
    with network.server.entered():
        tap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        tap.bind((network.server_link, ETH_P_ALL))
    with tap:
        for family, source, destination in ((4, CLIENT_V4, SERVER_V4), (6, CLIENT_V6, SERVER_V6)):
            with network.client.entered():
                sock = socket.socket(socket.AF_INET if family == 4 else socket.AF_INET6,
                                     socket.SOCK_DGRAM)
            with sock:
                sock.bind((source, 0))
                payload = b"tern-xdp-checksum-%d" % family
                sock.sendto(payload, (destination, PORT_SELF_CHECK))
                deadline = time.monotonic() + EVENT_WAIT
                while True:
                    if time.monotonic() >= deadline:
                        raise Failure(f"the UDP datagram over IPv{family} to the discard port "
                                      "never reached the server end")
                    tap.settimeout(max(0.01, deadline - time.monotonic()))
                    try:
                        frame = tap.recv(65535)
                    except socket.timeout:
                        continue
                    if frame.endswith(payload):
                        break
            header = 20 if family == 4 else 40
            datagram = frame[14 + header:]
            address_length = 4 if family == 4 else 16
            addresses = frame[14 + header - 2 * address_length: 14 + header]
            if family == 4:
                pseudo = addresses + struct.pack("!BBH", 0, 17, len(datagram))
            else:
                pseudo = addresses + struct.pack("!IxxxB", len(datagram), 17)
            if inet_checksum(pseudo + datagram) != 0:
                raise Failure(f"UDP over IPv{family} from the client reaches the server end with "
                              f"an incomplete checksum ({datagram[6:8].hex()}): is TX checksum "
                              f"offload still on for {network.client_link}?")


#----------- XDP programs on a link ----------------------------------------------

def xdp_programs(network: Network) -> list[dict]:
    """The XDP programs attached to the server end, from `ip -j -d link show` (cross-checked
    with the text of `ip -d link show`, which the issue names)."""
    info = link_json(network.server, network.server_link, details=True)
    xdp = info.get("xdp")
    programs: list[dict] = []
    if xdp:  # mode: 1 driver (native), 2 generic (skb), 3 offloaded, 4 several
        if "attached" in xdp:
            programs = [dict(entry.get("prog", entry), mode=entry.get("mode"))
                        for entry in xdp["attached"]]
        else:
            programs = [dict(xdp.get("prog", xdp), mode=xdp.get("mode"))]
    text = network.server.ip("-d", "link", "show", "dev", network.server_link).stdout
    text_count = len(re.findall(r"prog/xdp", text))
    if text_count != len(programs):
        raise Failure(f"`ip -d link show` and `ip -j -d link show` disagree on the XDP "
                      f"programs of {network.server_link}:\n{text}\n{json.dumps(xdp)}")
    return programs


def bpf_load_pass_program() -> int:
    """Loads `r0 = XDP_PASS; exit` as an XDP program with bpf(BPF_PROG_LOAD); its fd."""
    instructions = bytes.fromhex("b700000002000000") + bytes.fromhex("9500000000000000")
    insns = ctypes.create_string_buffer(instructions, len(instructions))
    license_text = ctypes.create_string_buffer(b"GPL")
    attr = struct.pack("<IIQQIIQII16sII", 6, 2, ctypes.addressof(insns),
                       ctypes.addressof(license_text), 0, 0, 0, 0, 0, b"tern_xdp_probe", 0, 0)
    buffer = ctypes.create_string_buffer(attr.ljust(128, b"\0"), 128)
    number = {"x86_64": 321, "aarch64": 280}.get(platform.machine())  # bpf(2)
    if number is None:
        raise Failure(f"the bpf system call's number on {platform.machine()} is not known here")
    syscall = LIBC.syscall
    syscall.restype = ctypes.c_long
    fd = syscall(ctypes.c_long(number), ctypes.c_int(5), buffer, ctypes.c_uint(128))
    if fd < 0:
        errno = ctypes.get_errno()
        raise Failure(f"cannot load an XDP program (bpf BPF_PROG_LOAD): {os.strerror(errno)}")
    return fd


def netlink_set_xdp(ifindex: int, fd: int) -> None:
    """RTM_SETLINK with IFLA_XDP {FD, FLAGS=DRV_MODE}; fd -1 detaches. In the current ns."""
    def attribute(kind: int, data: bytes) -> bytes:
        raw = struct.pack("=HH", 4 + len(data), kind) + data
        return raw + b"\0" * (-len(raw) % 4)

    xdp = attribute(1, struct.pack("=i", fd)) + attribute(3, struct.pack("=I", 4))
    body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, ifindex, 0, 0) + attribute(43 | 0x8000, xdp)
    message = struct.pack("=IHHII", 16 + len(body), 19, 0x1 | 0x4, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        sock.settimeout(5)
        sock.send(message)
        reply = sock.recv(65536)
    error = struct.unpack("=i", reply[16:20])[0]
    if error != 0:
        raise Failure(f"RTM_SETLINK IFLA_XDP failed: {os.strerror(-error)}")


def check_program_detection(network: Network) -> None:
    """Attaches an XDP_PASS program and detaches it: `xdp_programs` must see one, then none
    (so step 6's "no program" means something). Also shows native XDP works on this veth."""
    if xdp_programs(network):
        raise Failure("an XDP program is attached to the new veth before anything attached one")
    fd = bpf_load_pass_program()
    try:
        with network.server.entered():
            ifindex = socket.if_nametoindex(network.server_link)
            netlink_set_xdp(ifindex, fd)
        try:
            programs = xdp_programs(network)
            if len(programs) != 1:
                raise Failure(f"attached one XDP program, `ip link` shows {len(programs)}")
        finally:
            with network.server.entered():
                netlink_set_xdp(ifindex, -1)
    finally:
        os.close(fd)
    if xdp_programs(network):
        raise Failure("the probe XDP program is still shown after detaching it")
    say("program detection: a probe XDP_PASS program was seen attached (native mode), "
        "then gone")


#----------- Zones and tern ------------------------------------------------------

BIG_TEST = """$ORIGIN big.test.
$TTL 300
@        SOA   ns hostmaster 1 7200 3600 1209600 300
@        NS    ns
ns       A     198.51.100.1
ns       AAAA  2001:db8::1
""" + "".join(f'txt600   TXT   "{i:02d} {"m" * 100}"\n' for i in range(5)) \
    + "".join(f'txt1800  TXT   "{i:02d} {"h" * 220}"\n' for i in range(8)) \
    + "".join(f"a-many   A     198.51.100.{i + 10}\n" for i in range(70)) \
    + "".join(f"aaaa-many AAAA 2001:db8::{i + 16:x}\n" for i in range(45))


def generated_zones() -> dict[str, str]:
    """The differential suite's zones with example.com renamed example.org (the repository's
    zones/ has example.com), plus big.test."""
    renamed = {}
    for origin, text in differential_zones.GENERATED_ZONES.items():
        renamed[re.sub(r"(?i)example\.com", "example.org", origin)] = \
            re.sub(r"(?i)example\.com", "example.org", text).lstrip()
    renamed["big.test"] = BIG_TEST
    return renamed


@dataclasses.dataclass
class ZoneData:
    origin: dns.name.Name
    nodes: dict[dns.name.Name, set[int]]


def load_zones(directory: pathlib.Path) -> tuple[list[tuple[str, pathlib.Path]], list[ZoneData]]:
    """Writes the generated zones to `directory`; returns (origin, file) for `zones.list`
    and every zone's names and types (the repository's zones/ too) for the query list."""
    entries = []
    data = []
    for origin, text in generated_zones().items():
        path = directory / f"{origin}.zone"
        path.write_text(text)
        entries.append((origin + ".", path))
    sources = [(origin, path) for origin, path in entries]
    for path in sorted((REPO / "zones").glob("*.zone")):
        sources.append((path.name[: -len(".zone")] + ".", path))
    for origin, path in sources:
        zone = dns.zone.from_file(str(path), origin=origin, relativize=False, check_origin=False)
        nodes = {name: {rdataset.rdtype for rdataset in node} for name, node in zone.nodes.items()}
        data.append(ZoneData(dns.name.from_text(origin), nodes))
    return entries, data


def tern_binary() -> pathlib.Path:
    """The tern under test: TERN_BIN, or the release build of this tree."""
    return pathlib.Path(os.environ.get("TERN_BIN", REPO / "target/release/tern")).resolve()


def tern_config(name: str, workdir: pathlib.Path, port: int, metrics_port: int,
                zone_list: list[tuple[str, pathlib.Path]]) -> str:
    lines = [
        f"# tern {name}: the same configuration as the other but for the ports",
        f"listen: ['{SERVER_V4}:{port}', '[{SERVER_V6}]:{port}']",
        "zones:",
        f"  directory: '{REPO / 'zones'}'",
        "  list:",
    ] + [f"    - {{origin: '{origin}', file: '{path}'}}" for origin, path in zone_list] + [
        f"control-socket: '{workdir / 'tern.sock'}'",
        "cookies:",
        f"  secret: '{COOKIE_SECRET}'",
        f"nsid: '{NSID}'",
        # Small, so that the allocation step's flood of new names evicts.
        "cache:",
        f"  entries: {CACHE_ENTRIES}",
        "metrics:",
        f"  listen: '{SERVER_V4}:{metrics_port}'",
        "log-level: info",
    ] + ([f"cores: '{CORES}'"] if CORES else [])
    return "\n".join(lines) + "\n"


class Tern:
    """One `tern serve` in the server namespace, its own process group, its log in a file."""

    def __init__(self, label: str, network: Network, workdir: pathlib.Path, port: int,
                 metrics_port: int, config: str, xdp: bool, cleanup: Cleanup) -> None:
        self.label = label
        self.network = network
        self.port = port
        self.metrics_port = metrics_port
        self.xdp = xdp
        self.cleanup = cleanup
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "tern.yaml"
        self.config_path.write_text(config)
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.log = workdir / "tern-1.log"

    def start(self) -> None:
        self.starts += 1
        self.log = self.workdir / f"tern-{self.starts}.log"
        tern_bin = tern_binary()
        argv = [str(tern_bin), "serve", "--config", str(self.config_path)]
        if self.xdp:
            argv += ["--xdp", self.network.server_link]
        with open(self.log, "wb") as log, Deferral.held():
            self.proc = subprocess.Popen(self.network.server.command(argv),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
            self.cleanup.processes.append(self.proc)
        wait_for(f"tern {self.label} to log that it serves",
                 lambda: " info: serving " in self.log_text() or self.proc.poll() is not None,
                 timeout=START_WAIT)
        if self.proc.poll() is not None:
            raise Failure(f"tern {self.label} exited with {self.proc.returncode} at start:\n"
                          f"{self.log_tail()}")

    def start_refused(self) -> str:
        """Starts and expects tern to exit non-zero before serving; returns its log."""
        self.starts += 1
        self.log = self.workdir / f"tern-{self.starts}.log"
        argv = [str(tern_binary()), "serve", "--config", str(self.config_path)]
        if self.xdp:
            argv += ["--xdp", self.network.server_link]
        with open(self.log, "wb") as log, Deferral.held():
            self.proc = subprocess.Popen(self.network.server.command(argv),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
            self.cleanup.processes.append(self.proc)
        wait_for(f"tern {self.label} to exit or serve",
                 lambda: self.proc.poll() is not None or " info: serving " in self.log_text(),
                 timeout=START_WAIT)
        if self.proc.poll() is None:
            self.stop()
            raise Failure(f"tern {self.label} started although it should have refused:\n"
                          f"{self.log_tail()}")
        if self.proc.returncode == 0:
            raise Failure(f"tern {self.label} exited 0 instead of refusing:\n{self.log_tail()}")
        return self.log_text()

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 25) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:]) or "(empty log)"

    def stop(self) -> None:
        """SIGTERM; it must exit 0 within STOP_WAIT."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            raise Failure(f"tern {self.label} did not stop within {STOP_WAIT} s of SIGTERM:\n"
                          f"{self.log_tail()}")
        if self.proc.returncode != 0:
            raise Failure(f"tern {self.label} exited with {self.proc.returncode} after SIGTERM:\n"
                          f"{self.log_tail()}")

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            raise Failure(f"tern {self.label} did not die of SIGKILL within {STOP_WAIT} s")

    def metrics(self) -> dict[str, float]:
        """The metrics endpoint's samples as {'name{labels}': value}, read inside the
        server namespace."""
        url = f"http://{SERVER_V4}:{self.metrics_port}/metrics"
        with self.network.server.entered():
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    text = reply.read().decode()
            except OSError as e:
                raise Failure(f"cannot read tern {self.label}'s metrics at {url}: {e}")
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                samples[key] = float(value)
        return samples


def metric(samples: dict[str, float], name: str, **labels: str) -> float | None:
    """The sum of the samples of `name` whose labels include `labels`; None if none exist."""
    total = None
    for key, value in samples.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
        if all(found.get(k) == v for k, v in labels.items()):
            total = (total or 0.0) + value
    return total


#----------- Exchanging messages from the client namespace ---------------------------

class Client:
    """UDP sockets bound to the client's addresses, made in the client namespace."""

    def __init__(self, network: Network) -> None:
        self.network = network
        with network.client.entered():
            self.udp4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp4.bind((CLIENT_V4, 0))
            self.udp6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            self.udp6.bind((CLIENT_V6, 0))
        self.next_id = random.Random(SEED).randrange(0x10000)

    def query_id(self) -> int:
        self.next_id = (self.next_id + 1) & 0xFFFF
        return self.next_id

    def udp(self, wire: bytes, family: int, port: int,
            attempts: int = ANSWER_ATTEMPTS) -> bytes | None:
        """Sends `wire` to the server over UDP; the answer with its ID, or None."""
        sock = self.udp4 if family == 4 else self.udp6
        server = SERVER_V4 if family == 4 else SERVER_V6
        for _ in range(attempts):
            sock.sendto(wire, (server, port))
            deadline = time.monotonic() + ANSWER_WAIT
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                try:
                    data, peer = sock.recvfrom(65535)
                except socket.timeout:
                    break
                if peer[0] == server and peer[1] == port and data[:2] == wire[:2]:
                    return data
        return None

    def tcp(self, wire: bytes, family: int, port: int) -> bytes:
        server = SERVER_V4 if family == 4 else SERVER_V6
        with self.network.client.entered():
            sock = socket.socket(socket.AF_INET if family == 4 else socket.AF_INET6,
                                 socket.SOCK_STREAM)
        with sock:
            sock.settimeout(5)
            sock.connect((server, port))
            sock.sendall(struct.pack("!H", len(wire)) + wire)
            length = struct.unpack("!H", receive_exactly(sock, 2))[0]
            return receive_exactly(sock, length)

    def close(self) -> None:
        self.udp4.close()
        self.udp6.close()


def receive_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise OSError(f"connection closed after {len(data)} of {count} octets")
        data += chunk
    return data


def simple_query(client: Client, name: str = "www.example.com.", rdtype: str = "A") -> bytes:
    query = dns.message.make_query(name, rdtype, use_edns=False)
    query.id = client.query_id()
    query.flags = 0
    return query.to_wire()


def wait_answering(client: Client, tern: Tern) -> None:
    """Until tern answers over UDP on both families (each attempt bounded)."""
    for family in (4, 6):
        def answered() -> bool:
            if tern.proc.poll() is not None:
                raise Failure(f"tern {tern.label} exited:\n{tern.log_tail()}")
            return client.udp(simple_query(client), family, tern.port, attempts=1) is not None
        wait_for(f"tern {tern.label} to answer over IPv{family}", answered, timeout=START_WAIT)


#----------- Comparing answers ---------------------------------------------------

def skip_name(wire: bytes, offset: int) -> int:
    """The offset after the name at `offset` (labels, then a zero or a pointer)."""
    for _ in range(128):
        if offset >= len(wire):
            raise ValueError("name past the end")
        length = wire[offset]
        if length == 0:
            return offset + 1
        if length & 0xC0 == 0xC0:
            return offset + 2
        if length & 0xC0:
            raise ValueError("bad label type")
        offset += 1 + length
    raise ValueError("name too long")


def cookie_span(wire: bytes) -> tuple[int, int] | None:
    """(offset, length) of the COOKIE option's data in the OPT record, or None."""
    try:
        qd, an, ns, ar = struct.unpack("!4H", wire[4:12])
        offset = 12
        for _ in range(qd):
            offset = skip_name(wire, offset) + 4
        for index in range(an + ns + ar):
            offset = skip_name(wire, offset)
            rtype, _, _, rdlength = struct.unpack("!HHIH", wire[offset: offset + 10])
            offset += 10
            if rtype == 41 and index >= an + ns:
                position, end = offset, offset + rdlength
                while position + 4 <= end:
                    code, length = struct.unpack("!HH", wire[position: position + 4])
                    if code == 10:
                        return position + 4, length
                    position += 4 + length
            offset += rdlength
    except (ValueError, struct.error):
        return None
    return None


def describe(wire: bytes | None) -> str:
    if wire is None:
        return "(no answer)"
    try:
        return dns.message.from_wire(wire).to_text()
    except Exception as e:  # noqa: BLE001 - any parse error is shown as such
        return f"(unparsable, {e}): {wire.hex()}"


class Comparison:
    """Counts how the server cookies compared, for the report."""

    def __init__(self) -> None:
        self.cookies_equal = 0
        self.cookies_other_second = 0

    def answers(self, a: bytes, b: bytes) -> str | None:
        """None when `a` (XDP) and `b` (sockets) are equal by the rule of the docstring:
        every octet, except a server cookie's timestamp and the hash that depends on it."""
        span_a, span_b = cookie_span(a), cookie_span(b)
        if (span_a is None) != (span_b is None):
            return "a COOKIE option in one answer only"
        if span_a is not None:
            cookie_a = a[span_a[0]: span_a[0] + span_a[1]]
            cookie_b = b[span_b[0]: span_b[0] + span_b[1]]
            if cookie_a[:8] != cookie_b[:8]:
                return f"client cookies differ: {cookie_a[:8].hex()} / {cookie_b[:8].hex()}"
            server_a, server_b = cookie_a[8:], cookie_b[8:]
            if server_a != server_b:
                for server in (server_a, server_b):
                    if len(server) != 16 or server[0] != 1 or server[1:4] != b"\0\0\0":
                        return f"server cookie not RFC 9018 shaped: {server.hex()}"
                stamp_a = struct.unpack("!I", server_a[4:8])[0]
                stamp_b = struct.unpack("!I", server_b[4:8])[0]
                if stamp_a == stamp_b:
                    return (f"server cookies differ with the same timestamp: {server_a.hex()} / "
                            f"{server_b.hex()}")
                if abs(stamp_a - stamp_b) > COOKIE_CLOCK_SLACK:
                    return f"server cookie timestamps {stamp_a} and {stamp_b} too far apart"
                self.cookies_other_second += 1
                a = a[: span_a[0] + 8] + b"\0" * 16 + a[span_a[0] + 24:]
                b = b[: span_b[0] + 8] + b"\0" * 16 + b[span_b[0] + 24:]
            elif server_a:
                self.cookies_equal += 1
        if a == b:
            return None
        if len(a) != len(b):
            return f"answers of {len(a)} and {len(b)} octets"
        first = next(i for i in range(len(a)) if a[i] != b[i])
        return f"answers differ from octet {first}"


def check_comparison_rule() -> None:
    """`Comparison.answers` on made-up messages: a server cookie from the next second is
    equal, anything else that differs is not."""
    def message(cookie: bytes, ttl_octet: int = 0) -> bytes:
        query = dns.message.make_query("www.example.com.", "A", use_edns=0,
                                       options=[dns.edns.GenericOption(dns.edns.COOKIE, cookie)])
        query.id = 4711
        return query.to_wire() + bytes([ttl_octet])

    def cookie(stamp: int, hash_octets: bytes = b"12345678", client: bytes = CLIENT_COOKIE,
               version: int = 1) -> bytes:
        return client + bytes([version, 0, 0, 0]) + struct.pack("!I", stamp) + hash_octets

    base = message(cookie(1000))
    cases = [
        ("the same", message(cookie(1000)), True),
        ("the next second", message(cookie(1001, b"87654321")), True),
        ("another hash, same second", message(cookie(1000, b"87654321")), False),
        ("another client cookie", message(cookie(1000, client=b"ABCDEFGH")), False),
        ("version 2", message(cookie(1001, version=2)), False),
        ("10 s later", message(cookie(1010)), False),
        ("another octet elsewhere", message(cookie(1001), ttl_octet=1), False),
    ]
    for what, other, equal in cases:
        if (Comparison().answers(other, base) is None) != equal:
            raise Failure(f"the comparison rule is broken: a server cookie with {what} "
                          f"compares {'unequal' if equal else 'equal'}")


#----------- Step 3: the query list --------------------------------------------------

@dataclasses.dataclass
class Query:
    name: str
    rdtype: str
    rdclass: str = "IN"
    family: int = 4
    edns: int | None = None  # EDNS version, None: no OPT
    payload: int = 1232
    do: bool = False
    nsid: bool = False
    cookie: str = "none"  # none, client, full, bad-server, malformed
    rd: bool = False
    unknown_option: bool = False
    no_question: bool = False

    def label(self) -> str:
        parts = [self.name, self.rdtype]
        if self.rdclass != "IN":
            parts.append(self.rdclass)
        parts.append(f"v{self.family}")
        if self.edns is None:
            parts.append("noedns")
        else:
            parts.append(f"edns{self.edns}/{self.payload}")
            parts += [flag for flag, on in (("do", self.do), ("nsid", self.nsid),
                                            ("opt65001", self.unknown_option)) if on]
            if self.cookie != "none":
                parts.append(f"cookie={self.cookie}")
        if self.rd:
            parts.append("rd")
        if self.no_question:
            parts.append("no-question")
        return " ".join(parts)


def mixed_case(name: str, rng: random.Random) -> str:
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in name)


def question_pool(zones: list[ZoneData], rng: random.Random) -> list[tuple[str, str, str]]:
    """(name, type, class) to ask: every name and type in the zones, NODATA, NXDOMAIN,
    wildcard, referral, ANY, DS at cuts, unknown types, CH and names of no zone."""
    pool = []
    for zone in zones:
        origin = zone.origin.to_text()
        cuts = [n for n, types in zone.nodes.items()
                if dns.rdatatype.NS in types and n != zone.origin]
        for name, types in sorted(zone.nodes.items()):
            text = name.to_text()
            if text.startswith("*."):
                parent = text[2:]
                for rdtype in sorted(types):
                    pool.append((f"w{rng.randrange(1000)}.{parent}",
                                 dns.rdatatype.to_text(rdtype), "IN"))
                pool.append((f"a.b.w{rng.randrange(1000)}.{parent}", "A", "IN"))
                pool.append((f"w{rng.randrange(1000)}.{parent}", "NAPTR", "IN"))
                continue
            for rdtype in sorted(types):
                pool.append((text, dns.rdatatype.to_text(rdtype), "IN"))
            missing = [t for t in ("AAAA", "MX", "TXT", "SRV", "CAA", "NAPTR")
                       if dns.rdatatype.from_text(t) not in types]
            if missing:
                pool.append((text, rng.choice(missing), "IN"))
            pool.append((text, "ANY", "IN"))
        for cut in cuts:
            pool.append((f"host{rng.randrange(1000)}.{cut.to_text()}", "A", "IN"))
            pool.append((cut.to_text(), "DS", "IN"))
            pool.append((cut.to_text(), "NS", "IN"))
        for index in range(4):
            pool.append((f"nx{rng.randrange(100000)}.{origin}",
                         rng.choice(["A", "AAAA", "TXT"]), "IN"))
        pool.append((f"deep.nx{rng.randrange(1000)}.{origin}", "A", "IN"))
        pool.append((origin, "TYPE65280", "IN"))
        pool.append((origin, "DNSKEY", "IN"))
    pool += [
        ("www.example.invalid.", "A", "IN"),
        ("version.bind.", "TXT", "CH"),
        ("id.server.", "TXT", "CH"),
        (".", "NS", "IN"),
    ]
    return pool


def fixed_queries() -> list[Query]:
    """Cases that must be in every run, on both families: truncation with and without
    EDNS, NSID on a large answer, BADVERS, a malformed cookie, a cookie-only query."""
    cases = []
    for family in (4, 6):
        cases += [
            Query("txt1800.big.test.", "TXT", family=family),
            Query("txt1800.big.test.", "TXT", family=family, edns=0, payload=1232),
            Query("txt1800.big.test.", "TXT", family=family, edns=0, payload=4096, nsid=True),
            Query("txt600.big.test.", "TXT", family=family),
            Query("txt600.big.test.", "TXT", family=family, edns=0, payload=512, nsid=True,
                  cookie="client"),
            Query("txt600.big.test.", "TXT", family=family, edns=0, payload=1232, nsid=True,
                  cookie="full"),
            Query("a-many.big.test.", "A", family=family),
            Query("aaaa-many.big.test.", "AAAA", family=family, edns=0, payload=1232, do=True),
            Query("big.test.", "ANY", family=family, edns=0, payload=512),
            Query("huge.example.org.", "TXT", family=family, edns=0, payload=600),
            Query("www.bigdeleg.example.org.", "A", family=family),
            Query("mx-many.example.org.", "MX", family=family),
            Query("www.example.org.", "A", family=family, edns=1),
            Query("www.example.org.", "A", family=family, edns=0, cookie="malformed"),
            Query("www.example.org.", "A", family=family, edns=0, cookie="bad-server"),
            Query("www.example.org.", "A", family=family, edns=0, nsid=True, cookie="full"),
            Query("", "A", family=family, edns=0, cookie="client", no_question=True),
            Query("WwW.ExAmPlE.CoM.", "AAAA", family=family, edns=0, payload=1232, rd=True),
            Query("x.Users.Example.Com.", "A", family=family),
            Query("web.example.com.", "A", family=family, edns=0, do=True),
            Query("a.b.lab.example.com.", "A", family=family),
        ]
    return cases


def generate_queries(zones: list[ZoneData]) -> list[Query]:
    rng = random.Random(SEED)
    pool = question_pool(zones, rng)
    queries = fixed_queries()
    for _ in range(QUERY_COUNT):
        name, rdtype, rdclass = rng.choice(pool)
        query = Query(mixed_case(name, rng) if rng.random() < 0.5 else name, rdtype, rdclass,
                      family=rng.choice((4, 6)), rd=rng.random() < 0.3)
        if rng.random() < 0.7:
            query.edns = 0
            query.payload = rng.choice((512, 512, 600, 1232, 1232, 1400, 4096))
            query.do = rng.random() < 0.25
            query.nsid = rng.random() < 0.3
            query.cookie = rng.choices(("none", "client", "full", "bad-server"),
                                       weights=(4, 3, 2, 1))[0]
            query.unknown_option = rng.random() < 0.1
        queries.append(query)
    return queries


def query_wire(query: Query, query_id: int, server_cookies: dict[int, bytes]) -> bytes:
    options: list[dns.edns.Option] = []
    if query.nsid:
        options.append(dns.edns.GenericOption(dns.edns.NSID, b""))
    cookie = {
        "none": None,
        "client": CLIENT_COOKIE,
        "full": CLIENT_COOKIE + server_cookies.get(query.family, b""),
        "bad-server": CLIENT_COOKIE + bytes.fromhex("01000000") + bytes(range(12)),
        "malformed": CLIENT_COOKIE[:5],
    }[query.cookie]
    if cookie is not None:
        options.append(dns.edns.GenericOption(dns.edns.COOKIE, cookie))
    if query.unknown_option:
        options.append(dns.edns.GenericOption(65001, b"tern"))
    if query.no_question:
        message = dns.message.Message(id=query_id)
        message.flags = 0
        message.use_edns(query.edns, 0, query.payload, options=options)
        return message.to_wire()
    message = dns.message.make_query(query.name, query.rdtype, query.rdclass,
                                     use_edns=query.edns if query.edns is not None else False,
                                     payload=query.payload, want_dnssec=query.do, options=options)
    message.id = query_id
    message.flags = dns.flags.RD if query.rd else 0
    return message.to_wire()


def learn_server_cookies(client: Client) -> dict[int, bytes]:
    """A server cookie of A for each family (valid at B too: the same secret)."""
    cookies = {}
    for family in (4, 6):
        probe = Query("www.example.com.", "A", family=family, edns=0, cookie="client")
        answer = client.udp(query_wire(probe, client.query_id(), {}), family, PORT_A)
        span = cookie_span(answer) if answer else None
        if span is None or span[1] != 24:
            raise Failure(f"tern A gave no 24-octet COOKIE over IPv{family}: {describe(answer)}")
        cookies[family] = answer[span[0] + 8: span[0] + span[1]]
    return cookies


def compare_query_list(client: Client, a: Tern, b: Tern, zones: list[ZoneData],
                       failures: list[str], comparison: Comparison) -> int:
    """Step 3: every query to A:53 and B:5300 over UDP, TCP for the truncated ones.
    Returns how many UDP answers A gave."""
    queries = generate_queries(zones)
    server_cookies = learn_server_cookies(client)
    answered = truncated = 0
    rcodes: dict[str, int] = {}
    for query in queries:
        wire = query_wire(query, client.query_id(), server_cookies)
        answer_a = client.udp(wire, query.family, PORT_A)
        answer_b = client.udp(wire, query.family, PORT_B)
        if answer_a is None or answer_b is None:
            failures.append(f"{query.label()}: no answer from "
                            f"{'A' if answer_a is None else 'B'} in {ANSWER_ATTEMPTS} attempts")
            continue
        answered += 1
        difference = comparison.answers(answer_a, answer_b)
        if difference:
            failures.append(f"{query.label()}: {difference}\n--- A (XDP, port {PORT_A}):\n"
                            f"{describe(answer_a)}\n--- B (sockets, port {PORT_B}):\n"
                            f"{describe(answer_b)}")
            continue
        rcode = answer_a[3] & 0x0F
        rcodes[str(rcode)] = rcodes.get(str(rcode), 0) + 1
        if answer_a[2] & 0x02:  # TC
            truncated += 1
            check_tcp_retry(client, query, wire, failures, comparison)
    say(f"query list: {len(queries)} queries (seed {SEED}), {answered} answered by both, "
        f"{truncated} truncated and asked again over TCP; rcodes {dict(sorted(rcodes.items()))}; "
        f"server cookies equal {comparison.cookies_equal}, from different seconds "
        f"{comparison.cookies_other_second}")
    if truncated < MIN_TRUNCATED:
        failures.append(f"only {truncated} answers were truncated (at least {MIN_TRUNCATED} "
                        "expected): the list does not exercise TC")
    return answered


def check_tcp_retry(client: Client, query: Query, wire: bytes, failures: list[str],
                    comparison: Comparison) -> None:
    """A truncated answer, asked again over TCP at A:53 (kernel path): whole, and equal to
    B's TCP answer."""
    try:
        tcp_a = client.tcp(wire, query.family, PORT_A)
        tcp_b = client.tcp(wire, query.family, PORT_B)
    except OSError as e:
        failures.append(f"{query.label()}: truncated over UDP, and TCP failed: {e}")
        return
    if tcp_a[2] & 0x02:
        failures.append(f"{query.label()}: A's TCP answer is truncated too:\n{describe(tcp_a)}")
    difference = comparison.answers(tcp_a, tcp_b)
    if difference:
        failures.append(f"{query.label()} over TCP: {difference}\n--- A:\n{describe(tcp_a)}\n"
                        f"--- B:\n{describe(tcp_b)}")


#----------- Step 3: dig and kdig ---------------------------------------------------

DIG_CASES = [
    ["dig", "+nsid", "+cookie=" + CLIENT_COOKIE.hex(), "www.example.com", "A"],
    ["dig", "+noedns", "+ignore", "txt1800.big.test", "TXT"],
    ["dig", "+bufsize=512", "+dnssec", "+ignore", "+cookie=" + CLIENT_COOKIE.hex(),
     "example.org", "ANY"],
    ["dig", "+norec", "+nocookie", "nothing.example.org", "AAAA"],
    ["dig", "-6", "+nsid", "+nocookie", "WwW.WiLd.ExAmPlE.oRg", "MX"],
    ["dig", "-6", "+bufsize=1232", "+ignore", "+nocookie", "a-many.big.test", "A"],
    ["dig", "+tcp", "+nocookie", "txt1800.big.test", "TXT"],
    ["kdig", "+nsid", "+cookie=" + CLIENT_COOKIE.hex(), "c1.example.org", "A"],
    ["kdig", "+noedns", "+ignore", "mx-many.example.org", "MX"],
    ["kdig", "-6", "+bufsize=600", "+ignore", "+nocookie", "huge.example.org", "TXT"],
    ["kdig", "+nocookie", "www.deleg.example.org", "A"],
]


def normalize_dig(text: str) -> str:
    """dig's or kdig's printed answer without what differs between two runs: query times,
    dates, the server's address and port, the ID, the command line, a server cookie's bytes
    (its length and version stay)."""
    kept = []
    for line in text.splitlines():
        if re.match(r";; (Query time|SERVER|WHEN|Time |From |Received)", line) or \
                line.startswith("; <<>> DiG") or line.startswith(";; global options"):
            if line.startswith(";; Received"):  # kdig: size kept, source dropped
                kept.append(re.sub(r" from .*", "", line))
            continue
        line = re.sub(r"\bid: \d+", "id: ID", line)

        def cookie(match: re.Match) -> str:
            server = match.group(2)
            return f"{match.group(1)} <server cookie of {len(server) // 2} octets, " \
                   f"version {server[:2]}>"
        if "COOKIE" in line:
            line = re.sub(r"([0-9A-Fa-f]{16})([0-9A-Fa-f]{16,64})", cookie, line)
        kept.append(line)
    return "\n".join(kept).strip()


def compare_dig(network: Network, failures: list[str]) -> None:
    for case in DIG_CASES:
        outputs = []
        for port in (PORT_A, PORT_B):
            server = SERVER_V6 if "-6" in case else SERVER_V4
            argv = [case[0], f"@{server}", "-p", str(port)] + case[1:]
            argv += ["+time=2", "+tries=2"] if case[0] == "dig" else ["+time=2", "+retry=1"]
            done = run(network.client.command(argv), check=False, timeout=30)
            outputs.append(normalize_dig(done.stdout))
            if done.returncode != 0 or not outputs[-1]:
                failures.append(f"`{' '.join(argv)}` exited with {done.returncode}: "
                                f"{done.stdout}{done.stderr}")
        if outputs[0] != outputs[1]:
            failures.append(f"{' '.join(case)}: A and B print different answers:\n--- A:\n"
                            f"{outputs[0]}\n--- B:\n{outputs[1]}")
    say(f"dig/kdig: {len(DIG_CASES)} commands compared")


#----------- Step 4: TCP and ICMP ---------------------------------------------------

def core_allocations(tern) -> int:
    """The heap allocations of tern's cores so far (`tern stats`, the "all cores" line)."""
    tern_bin = tern_binary()
    out = subprocess.run([str(tern_bin), "stats", "--socket", str(tern.workdir / "tern.sock")],
                         capture_output=True, text=True, timeout=10)
    match = re.search(r"^all cores: .* allocations (\d+)", out.stdout, re.M)
    if out.returncode != 0 or not match:
        raise Failure(f"tern stats for {tern.label} failed: {out.stdout}{out.stderr}")
    return int(match.group(1))


def check_cold_cache_allocations(client: Client, a, failures: list[str]) -> None:
    """A random-subdomain flood over XDP allocates nothing on the core: FLOOD_NAMES new names
    (every one a cache miss and an insert, CACHE_ENTRIES in the cache, so most inserts evict),
    asked one after the other and each answered (NXDOMAIN, and wildcard answers). The
    allocations a `tern stats` snapshot itself makes are measured first (two snapshots in a
    row) and taken off (issue 12: the answer cache takes its entries from a per-core slab)."""
    rng = random.Random(SEED + 1)
    # Warm-up: the first queries of each kind fill what is made once (pools, the cache's
    # slab touching its pages is not an allocation).
    names = [f"{rng.getrandbits(48):012x}.{zone}" for zone in ("example.com.", "example.org.")
             for _ in range(FLOOD_NAMES // 2)]
    warm = [f"warm{i}.{zone}" for i, zone in enumerate(("example.com.", "example.org.") * 50)]
    for name in warm:
        client.udp(simple_query(client, name, "A"), 4, PORT_A)
    first = core_allocations(a)
    second = core_allocations(a)
    unanswered = 0
    for name in names:
        if client.udp(simple_query(client, name, "A"), 4, PORT_A) is None:
            unanswered += 1
    third = core_allocations(a)
    snapshot = second - first
    flood = (third - second) - snapshot
    if unanswered:
        failures.append(f"allocation flood: {unanswered} of {len(names)} queries unanswered")
    if flood != 0:
        failures.append(f"a flood of {len(names)} new names over XDP made {flood} heap "
                        f"allocations on the core (a snapshot makes {snapshot}): the answer path "
                        "allocates with a cold cache")
    say(f"cold cache: {len(names)} new names over XDP, {flood} allocations on the core "
        f"(a stats snapshot makes {snapshot})")


def check_offloaded_checksums(network: Network, client: Client, a, failures: list[str]) -> None:
    """With TX checksum offload back on at the client end (the veth default: the UDP checksum
    holds only the pseudo-header's sum, for a device to finish), A still answers over XDP
    (docs/decisions/0012: such checksums are accepted, as the kernel accepts them), and the
    answers came through XDP (tern_xdp_answered_total rose by at least as many)."""
    link = network.client_link
    run(network.client.command(["ethtool", "-K", link, "tx", "on"]))
    try:
        before = metric(a.metrics(), METRIC_XDP_ANSWERED) or 0.0
        answered = 0
        for family in (4, 6):
            wire = simple_query(client, "www.example.com.", "A")
            if client.udp(wire, family, PORT_A) is None:
                failures.append(f"with checksum offload on, A did not answer over IPv{family}")
            else:
                answered += 1
        rose = (metric(a.metrics(), METRIC_XDP_ANSWERED) or 0.0) - before
        if USE_XDP and rose < answered:
            failures.append(f"with checksum offload on, {METRIC_XDP_ANSWERED} rose by "
                            f"{rose:.0f} for {answered} answers: not through XDP")
    finally:
        run(network.client.command(["ethtool", "-K", link, "tx", "off"]))
    say("partial (offloaded) UDP checksums over IPv4 and IPv6: answered")


def check_tcp_and_icmp(client: Client, failures: list[str]) -> None:
    for family in (4, 6):
        wire = simple_query(client, "www.example.com.", "MX")
        try:
            answer = client.tcp(wire, family, PORT_A)
            if answer[:2] != wire[:2] or answer[3] & 0x0F != 0:
                failures.append(f"TCP to A over IPv{family}: unexpected answer {describe(answer)}")
        except OSError as e:
            failures.append(f"TCP to A:{PORT_A} over IPv{family} failed: {e}")
        try:
            echo(client.network, family)
        except (OSError, Failure) as e:
            failures.append(f"ICMP echo to the server over IPv{family}: {e}")
    say("TCP to port 53 and ICMP echo over IPv4 and IPv6: checked")


def echo(network: Network, family: int) -> None:
    """An ICMP (or ICMPv6) echo request from a raw socket in the client namespace; waits
    for the reply with its identifier and sequence."""
    identifier, sequence = os.getpid() & 0xFFFF, 7
    payload = b"tern-xdp-echo"
    with network.client.entered():
        if family == 4:
            sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        else:
            sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    with sock:
        if family == 4:
            header = struct.pack("!BBHHH", 8, 0, 0, identifier, sequence)
            header = struct.pack("!BBHHH", 8, 0, inet_checksum(header + payload), identifier,
                                 sequence)
            sock.sendto(header + payload, (SERVER_V4, 0))
        else:  # the kernel fills in an ICMPv6 checksum
            sock.sendto(struct.pack("!BBHHH", 128, 0, 0, identifier, sequence) + payload,
                        (SERVER_V6, 0))
        deadline = time.monotonic() + EVENT_WAIT
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data, peer = sock.recvfrom(2048)
            except socket.timeout:
                break
            if family == 4:
                data = data[(data[0] & 0x0F) * 4:]
                wanted = 0
            else:
                wanted = 129
            if peer[0] in (SERVER_V4, SERVER_V6) and len(data) >= 8 and data[0] == wanted and \
                    struct.unpack("!HH", data[4:8]) == (identifier, sequence):
                return
    raise Failure(f"no echo reply within {EVENT_WAIT:.0f} s")


#----------- Step 5: crafted frames -------------------------------------------------

def inet_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_datagram(source: str, destination: str, source_port: int, destination_port: int,
                 payload: bytes, length: int | None = None, checksum: str = "good") -> bytes:
    """A UDP header and payload; `length` overrides the header's length field; `checksum`
    is good (over the pseudo-header, with the length field as written), bad, or zero."""
    length_field = 8 + len(payload) if length is None else length
    header = struct.pack("!HHHH", source_port, destination_port, length_field, 0)
    src, dst = ipaddress.ip_address(source).packed, ipaddress.ip_address(destination).packed
    if len(src) == 4:
        pseudo = src + dst + struct.pack("!BBH", 0, 17, length_field)
    else:
        pseudo = src + dst + struct.pack("!IxxxB", length_field, 17)
    value = inet_checksum(pseudo + header + payload) or 0xFFFF
    if checksum == "bad":
        value ^= 0x5A5A
    elif checksum == "zero":
        value = 0
    return struct.pack("!HHHH", source_port, destination_port, length_field, value) + payload


def ipv4_packet(source: str, destination: str, payload: bytes, protocol: int = 17,
                options: bytes = b"", ihl: int | None = None, total_length: int | None = None,
                identification: int = 0x7E57, fragment: int = 0, checksum: str = "good",
                version: int = 4) -> bytes:
    """An IPv4 header (20 octets plus `options`) and payload; `ihl` and `total_length`
    override the fields, `fragment` is flags<<13 | offset (in 8-octet units)."""
    header_length = ihl if ihl is not None else (20 + len(options)) // 4
    total = total_length if total_length is not None else 20 + len(options) + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", version << 4 | header_length, 0, total, identification,
                         fragment, 64, protocol, 0, ipaddress.ip_address(source).packed,
                         ipaddress.ip_address(destination).packed) + options
    value = inet_checksum(header)
    if checksum == "bad":
        value ^= 0x5A5A
    header = header[:10] + struct.pack("!H", value) + header[12:]
    return header + payload


def ipv6_packet(source: str, destination: str, payload: bytes, next_header: int = 17,
                payload_length: int | None = None, version: int = 6) -> bytes:
    length = len(payload) if payload_length is None else payload_length
    return struct.pack("!IHBB16s16s", version << 28, length, next_header, 64,
                       ipaddress.ip_address(source).packed,
                       ipaddress.ip_address(destination).packed) + payload


def ethernet(destination: bytes, source: bytes, ethertype: int, payload: bytes,
             vlan: int | None = None) -> bytes:
    tag = struct.pack("!HH", ETH_P_8021Q, vlan) if vlan is not None else b""
    return destination + source + tag + struct.pack("!H", ethertype) + payload


@dataclasses.dataclass
class Frames:
    """What a case's builder gets: the network, the client's source ports for crafted
    frames, and the DNS payload to carry."""

    network: Network
    port4: int
    port6: int

    def query(self, query_id: int) -> bytes:
        message = dns.message.make_query("www.example.com.", "A", use_edns=False)
        message.id = query_id
        message.flags = 0
        return message.to_wire()

    def eth(self, ethertype: int, payload: bytes, vlan: int | None = None,
            destination: bytes | None = None) -> bytes:
        return ethernet(destination or self.network.server_mac, self.network.client_mac,
                        ethertype, payload, vlan)

    def v4(self, port: int, query_id: int, source: str = CLIENT_V4, source_port: int | None = None,
           destination: str = SERVER_V4, payload: bytes | None = None,
           udp_length: int | None = None, udp_checksum: str = "good", **ip) -> bytes:
        """An IPv4/UDP frame carrying a query, with the given fields overridden."""
        datagram = udp_datagram(source, destination,
                                self.port4 if source_port is None else source_port, port,
                                self.query(query_id) if payload is None else payload,
                                udp_length, udp_checksum)
        return self.eth(ETH_P_IP, ipv4_packet(source, destination, datagram, **ip))

    def v6(self, port: int, query_id: int, source: str = CLIENT_V6, source_port: int | None = None,
           destination: str = SERVER_V6, payload: bytes | None = None,
           udp_length: int | None = None, udp_checksum: str = "good", **ip) -> bytes:
        """An IPv6/UDP frame carrying a query, with the given fields overridden."""
        datagram = udp_datagram(source, destination,
                                self.port6 if source_port is None else source_port, port,
                                self.query(query_id) if payload is None else payload,
                                udp_length, udp_checksum)
        return self.eth(ETH_P_IPV6, ipv6_packet(source, destination, datagram, **ip))


@dataclasses.dataclass
class Case:
    """A crafted frame (or frames): what A and B must do with it (`expect`: answer, none,
    same, record) and what the XDP path does (`xdp`: drop, counted in
    tern_xdp_dropped_total, with `reason` when the reason is clear; pass, handed to the
    kernel; answer, answered by XDP; dns, a DNS-level drop or error like the socket path's;
    maybe, not certain which of these)."""

    name: str
    family: int
    build: object  # (Frames, port, query id) -> list[bytes]
    expect: str
    xdp: str
    reason: str | None = None


def fragments_v4(f: Frames, port: int, query_id: int) -> list[bytes]:
    """A valid query in two IPv4 fragments (16 octets, then the rest at offset 2)."""
    datagram = udp_datagram(CLIENT_V4, SERVER_V4, f.port4, port, f.query(query_id))
    first = ipv4_packet(CLIENT_V4, SERVER_V4, datagram[:16], fragment=0x2000,
                        identification=query_id)
    second = ipv4_packet(CLIENT_V4, SERVER_V4, datagram[16:], fragment=2, identification=query_id)
    return [f.eth(ETH_P_IP, first), f.eth(ETH_P_IP, second)]


def fragment_header(next_header: int, offset_units: int, more: bool, identification: int) -> bytes:
    return struct.pack("!BBHI", next_header, 0, offset_units << 3 | int(more), identification)


def fragments_v6(f: Frames, port: int, query_id: int) -> list[bytes]:
    datagram = udp_datagram(CLIENT_V6, SERVER_V6, f.port6, port, f.query(query_id))
    first = fragment_header(17, 0, True, query_id) + datagram[:16]
    second = fragment_header(17, 2, False, query_id) + datagram[16:]
    return [f.eth(ETH_P_IPV6, ipv6_packet(CLIENT_V6, SERVER_V6, first, next_header=44)),
            f.eth(ETH_P_IPV6, ipv6_packet(CLIENT_V6, SERVER_V6, second, next_header=44))]


def extension_v6(kind: int) -> object:
    """A query behind one extension header (hop-by-hop 0, destination options 60, or an
    atomic fragment 44), each 8 octets (PadN for the options)."""
    def build(f: Frames, port: int, query_id: int) -> list[bytes]:
        datagram = udp_datagram(CLIENT_V6, SERVER_V6, f.port6, port, f.query(query_id))
        if kind == 44:
            header = fragment_header(17, 0, False, query_id)
        else:
            header = struct.pack("!BB", 17, 0) + bytes([1, 4, 0, 0, 0, 0])
        return [f.eth(ETH_P_IPV6, ipv6_packet(CLIENT_V6, SERVER_V6, header + datagram,
                                              next_header=kind))]
    return build


def cut(frame: bytes, keep: int) -> bytes:
    return frame[:keep]


def hostile_cases() -> list[Case]:
    """The crafted frames. Offsets: Ethernet 14, IPv4 20, IPv6 40, UDP 8; the query's DNS
    message is 33 octets (`www.example.com A`, no EDNS), so an IPv4 frame is 75 octets."""
    q = Frames.query
    other_mac = bytes.fromhex("020000000099")
    return [
        # IPv4, the frame too short for its headers.
        Case("v4 Ethernet header only", 4, lambda f, p, i: [f.eth(ETH_P_IP, b"")], "none", "maybe"),
        Case("v4 frame ends inside the IP header", 4,
             lambda f, p, i: [cut(f.v4(p, i), 14 + 12)], "none", "maybe"),
        Case("v4 frame ends inside the UDP header", 4,
             lambda f, p, i: [cut(f.v4(p, i), 14 + 20 + 4)], "none", "maybe"),
        # IPv4 header fields that lie.
        Case("v4 IHL 15 on a 40-octet packet", 4,
             lambda f, p, i: [f.v4(p, i, payload=q(f, i)[:12], ihl=15)], "none", "maybe"),
        Case("v4 IHL 4", 4, lambda f, p, i: [f.v4(p, i, ihl=4)], "none", "maybe"),
        Case("v4 version 6 in an IPv4 frame", 4, lambda f, p, i: [f.v4(p, i, version=6)],
             "none", "maybe"),
        Case("v4 total length beyond the frame", 4,
             lambda f, p, i: [f.v4(p, i, total_length=20 + 8 + 33 + 64)], "none", "drop",
             "ip_length"),
        Case("v4 total length below IP+UDP headers", 4,
             lambda f, p, i: [f.v4(p, i, total_length=24)], "none", "drop"),
        Case("v4 total length below the IP header", 4,
             lambda f, p, i: [f.v4(p, i, total_length=16)], "none", "drop"),
        Case("v4 UDP length beyond the datagram", 4,
             lambda f, p, i: [f.v4(p, i, udp_length=8 + 33 + 40)], "none", "drop", "udp_length"),
        Case("v4 UDP length 7", 4, lambda f, p, i: [f.v4(p, i, udp_length=7)], "none", "drop",
             "udp_length"),
        Case("v4 bad IP header checksum", 4, lambda f, p, i: [f.v4(p, i, checksum="bad")],
             "none", "drop", "checksum"),
        Case("v4 bad UDP checksum", 4, lambda f, p, i: [f.v4(p, i, udp_checksum="bad")],
             "none", "drop", "checksum"),
        # IPv4 that is valid and must be answered.
        Case("v4 UDP checksum zero (none, RFC 768)", 4,
             lambda f, p, i: [f.v4(p, i, udp_checksum="zero")], "answer", "answer"),
        Case("v4 Ethernet padding after the packet", 4,
             lambda f, p, i: [f.v4(p, i) + b"\0" * 18], "answer", "answer"),
        Case("v4 options (IHL 6, NOPs)", 4,
             lambda f, p, i: [f.v4(p, i, options=b"\x01\x01\x01\x00")], "answer", "pass"),
        Case("v4 options (IHL 15, NOPs)", 4,
             lambda f, p, i: [f.v4(p, i, options=b"\x01" * 39 + b"\x00")], "answer", "pass"),
        Case("v4 query in two fragments", 4, fragments_v4, "answer", "pass"),
        Case("v4 first fragment alone (MF)", 4,
             lambda f, p, i: [fragments_v4(f, p, i)[0]], "none", "pass"),
        Case("v4 last fragment alone (offset 2)", 4,
             lambda f, p, i: [fragments_v4(f, p, i)[1]], "none", "pass"),
        # IPv4 sources and destinations that must not be answered.
        Case("v4 multicast source 224.0.0.251", 4,
             lambda f, p, i: [f.v4(p, i, source="224.0.0.251")], "none", "drop", "source"),
        Case("v4 broadcast source 255.255.255.255", 4,
             lambda f, p, i: [f.v4(p, i, source="255.255.255.255")], "none", "drop", "source"),
        Case("v4 subnet broadcast source 198.51.100.255", 4,
             lambda f, p, i: [f.v4(p, i, source="198.51.100.255")], "none", "maybe"),
        Case("v4 source 0.0.0.0", 4, lambda f, p, i: [f.v4(p, i, source="0.0.0.0")],
             "none", "maybe"),
        Case("v4 loopback source 127.0.0.1", 4, lambda f, p, i: [f.v4(p, i, source="127.0.0.1")],
             "none", "maybe"),
        Case("v4 source is the server's address", 4, lambda f, p, i: [f.v4(p, i, source=SERVER_V4)],
             "none", "drop", "source"),
        Case("v4 source port 0", 4, lambda f, p, i: [f.v4(p, i, source_port=0)], "none", "drop",
             "source"),
        Case("v4 destination another address of the subnet", 4,
             lambda f, p, i: [f.v4(p, i, destination="198.51.100.7")], "none", "pass"),
        Case("v4 destination MAC of another host", 4,
             lambda f, p, i: [ethernet(other_mac, f.network.client_mac, ETH_P_IP, f.v4(p, i)[14:])],
             "none", "maybe"),
        Case("v4 destination MAC broadcast", 4,
             lambda f, p, i: [ethernet(b"\xff" * 6, f.network.client_mac, ETH_P_IP,
                                       f.v4(p, i)[14:])],
             "record", "maybe"),
        Case("v4 802.1Q tag VID 100 (no VLAN device)", 4,
             lambda f, p, i: [f.eth(ETH_P_IP, f.v4(p, i)[14:], vlan=100)], "record", "maybe"),
        Case("v4 802.1Q priority tag (VID 0)", 4,
             lambda f, p, i: [f.eth(ETH_P_IP, f.v4(p, i)[14:], vlan=0)], "answer", "maybe"),
        # DNS payloads that are cut: tern's own rules, the same on both paths.
        Case("v4 DNS message of 5 octets", 4, lambda f, p, i: [f.v4(p, i, payload=q(f, i)[:5])],
             "same", "dns"),
        Case("v4 DNS header only, QDCOUNT 1", 4, lambda f, p, i: [f.v4(p, i, payload=q(f, i)[:12])],
             "same", "dns"),
        Case("v4 DNS question cut", 4, lambda f, p, i: [f.v4(p, i, payload=q(f, i)[:20])],
             "same", "dns"),
        # IPv6.
        Case("v6 frame ends inside the IPv6 header", 6,
             lambda f, p, i: [cut(f.v6(p, i), 14 + 20)], "none", "maybe"),
        Case("v6 frame ends inside the UDP header", 6,
             lambda f, p, i: [cut(f.v6(p, i), 14 + 40 + 4)], "none", "maybe"),
        Case("v6 version 4 in an IPv6 frame", 6, lambda f, p, i: [f.v6(p, i, version=4)],
             "none", "maybe"),
        Case("v6 payload length beyond the frame", 6,
             lambda f, p, i: [f.v6(p, i, payload_length=8 + 33 + 64)], "none", "drop", "ip_length"),
        Case("v6 payload length below the UDP header", 6,
             lambda f, p, i: [f.v6(p, i, payload_length=4)], "none", "drop"),
        Case("v6 UDP length beyond the datagram", 6,
             lambda f, p, i: [f.v6(p, i, udp_length=8 + 33 + 40)], "none", "drop", "udp_length"),
        Case("v6 UDP length 7", 6, lambda f, p, i: [f.v6(p, i, udp_length=7)], "none", "drop",
             "udp_length"),
        Case("v6 bad UDP checksum", 6, lambda f, p, i: [f.v6(p, i, udp_checksum="bad")],
             "none", "drop", "checksum"),
        Case("v6 UDP checksum zero (invalid over IPv6)", 6,
             lambda f, p, i: [f.v6(p, i, udp_checksum="zero")], "none", "drop", "checksum"),
        Case("v6 Ethernet padding after the packet", 6,
             lambda f, p, i: [f.v6(p, i) + b"\0" * 18], "answer", "answer"),
        Case("v6 hop-by-hop header before UDP", 6, extension_v6(0), "answer", "pass"),
        Case("v6 destination options header before UDP", 6, extension_v6(60), "answer", "pass"),
        Case("v6 atomic fragment header before UDP", 6, extension_v6(44), "answer", "pass"),
        Case("v6 query in two fragments", 6, fragments_v6, "answer", "pass"),
        Case("v6 multicast source ff02::1", 6, lambda f, p, i: [f.v6(p, i, source="ff02::1")],
             "none", "drop", "source"),
        Case("v6 source is the server's address", 6, lambda f, p, i: [f.v6(p, i, source=SERVER_V6)],
             "none", "drop", "source"),
        Case("v6 loopback source ::1", 6, lambda f, p, i: [f.v6(p, i, source="::1")],
             "none", "maybe"),
        Case("v6 unspecified source ::", 6, lambda f, p, i: [f.v6(p, i, source="::")],
             "none", "maybe"),
        Case("v6 source port 0", 6, lambda f, p, i: [f.v6(p, i, source_port=0)], "none", "drop",
             "source"),
        Case("v6 802.1Q tag VID 100 (no VLAN device)", 6,
             lambda f, p, i: [f.eth(ETH_P_IPV6, f.v6(p, i)[14:], vlan=100)], "record", "maybe"),
        Case("v6 DNS message of 5 octets", 6, lambda f, p, i: [f.v6(p, i, payload=q(f, i)[:5])],
             "same", "dns"),
    ]


@dataclasses.dataclass
class Reply:
    message: bytes
    vlan: int | None  # the 802.1Q tag the reply came with, None for none


class Capture:
    """An AF_PACKET socket on the client end that keeps the DNS replies sent to the crafted
    frames' source ports, by query ID (with the VLAN tag, from PACKET_AUXDATA)."""

    def __init__(self, network: Network, ports: set[int]) -> None:
        with network.client.entered():
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self.sock.bind((network.client_link, ETH_P_ALL))
        self.sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        self.sock.setblocking(False)
        self.ports = ports
        self.replies: dict[int, list[Reply]] = {}

    def drain(self) -> None:
        for _ in range(100000):
            try:
                frame, ancillary, _, address = self.sock.recvmsg(65535, socket.CMSG_SPACE(20))
            except BlockingIOError:
                return
            if address[2] == PACKET_OUTGOING:
                continue
            vlan = None
            for level, kind, data in ancillary:
                if level == SOL_PACKET and kind == PACKET_AUXDATA and len(data) >= 18:
                    status, _, _, _, _, tci = struct.unpack("=IIIHHH", data[:18])
                    if status & TP_STATUS_VLAN_VALID:
                        vlan = tci & 0x0FFF
            self.keep(frame, vlan)

    def keep(self, frame: bytes, vlan: int | None) -> None:
        ethertype = struct.unpack("!H", frame[12:14])[0]
        offset = 14
        if ethertype == ETH_P_8021Q and len(frame) >= 18:  # a tag left in the frame
            vlan = struct.unpack("!H", frame[14:16])[0] & 0x0FFF
            ethertype = struct.unpack("!H", frame[16:18])[0]
            offset = 18
        if ethertype == ETH_P_IP and len(frame) >= offset + 20 and frame[offset + 9] == 17:
            offset += (frame[offset] & 0x0F) * 4
        elif ethertype == ETH_P_IPV6 and len(frame) >= offset + 40 and frame[offset + 6] == 17:
            offset += 40
        else:
            return
        if len(frame) < offset + 8 + 12:
            return
        source_port, destination_port = struct.unpack("!HH", frame[offset: offset + 4])
        if source_port not in (PORT_A, PORT_B) or destination_port not in self.ports:
            return
        message = frame[offset + 8:]
        query_id = struct.unpack("!H", message[:2])[0]
        self.replies.setdefault(query_id, []).append(Reply(message, vlan))

    def close(self) -> None:
        self.sock.close()


def check_capture(network: Network, capture: Capture) -> None:
    """The capture sees a reply whatever the client's kernel makes of it: a UDP frame from
    the server's port 53, sent raw from the server end, untagged and with an 802.1Q tag
    (VID 100, which the client's kernel drops: no VLAN device) must both be caught, the
    second with its tag."""
    with network.server.entered():
        sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        sender.bind((network.server_link, 0))
    with sender:
        for query_id, vlan in ((0xFFF1, None), (0xFFF2, 100)):
            message = struct.pack("!6H", query_id, 0x8400, 0, 0, 0, 0)
            packet = ipv4_packet(SERVER_V4, CLIENT_V4, udp_datagram(SERVER_V4, CLIENT_V4, PORT_A,
                                                                     PORT_SELF_CHECK, message))
            sender.send(ethernet(network.client_mac, network.server_mac, ETH_P_IP, packet, vlan))
    wait_for("the capture to see both frames sent from the server end",
             lambda: capture.drain() or (0xFFF1 in capture.replies and 0xFFF2 in capture.replies))
    seen = (capture.replies.pop(0xFFF1)[0].vlan, capture.replies.pop(0xFFF2)[0].vlan)
    if seen != (None, 100):
        raise Failure(f"the capture saw VLAN tags {seen}, (None, 100) expected")


def send_crafted(network: Network, cases: list[Case], client: Client, a: Tern, b: Tern,
                 failures: list[str], comparison: Comparison) -> dict[str, int]:
    """Step 5. Returns, for the XDP drop check, how many cases of each reason were sent
    ('' for drops of no clear reason). With XDP, each case's rise of the dropped counters
    is also read (a scrape before the frame and after the normal query that follows it,
    which the same core answers after the frame) and printed; a drop case must raise the
    sum, and its reason's counter when it names one."""
    with network.client.entered():
        sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        sender.bind((network.client_link, 0))
    frames = Frames(network, client.udp4.getsockname()[1], client.udp6.getsockname()[1])
    capture = Capture(network, {frames.port4, frames.port6, PORT_SELF_CHECK})
    sent: list[tuple[Case, int, int]] = []
    drops: dict[str, int] = {}
    table = []
    try:
        check_capture(network, capture)
        for case in cases:
            ids = {}
            for tern in (a, b):
                query_id = client.query_id()
                ids[tern.label] = query_id
                counted = USE_XDP and tern is a
                before = dropped_by_reason(a.metrics()) if counted else {}
                for frame in case.build(frames, tern.port, query_id):
                    sender.send(frame)
                # The server must still answer, on the same family (and core: one queue).
                if client.udp(simple_query(client), case.family, tern.port) is None:
                    raise Failure(f"crafted frame `{case.name}`: tern {tern.label} did not "
                                  f"answer a normal query after it:\n{tern.log_tail()}")
                if counted:
                    after = dropped_by_reason(a.metrics())
                    rose = {reason: after[reason] - before.get(reason, 0.0) for reason in after
                            if after[reason] != before.get(reason, 0.0)}
                    counts = ", ".join(f"{r or '(no reason)'} +{v:.0f}" for r, v in rose.items())
                    kind = case.xdp + (f":{case.reason}" if case.reason else "")
                    table.append(f"{case.name} [{kind}]: {counts or 'no drop counted'}")
                    if case.xdp == "drop" and not rose:
                        failures.append(f"crafted `{case.name}`: A's {METRIC_XDP_DROPPED} did not "
                                        "rise")
                    elif case.xdp == "drop" and case.reason and not rose.get(case.reason):
                        failures.append(f"crafted `{case.name}`: {METRIC_XDP_DROPPED} rose for "
                                        f"{sorted(rose)}, not for reason {case.reason}")
            if case.expect == "answer":
                deadline = time.monotonic() + EVENT_WAIT
                while time.monotonic() < deadline and \
                        not all(ids[t] in capture.replies for t in "AB"):
                    time.sleep(0.01)
                    capture.drain()
            capture.drain()
            sent.append((case, ids["A"], ids["B"]))
            if case.xdp == "drop":
                drops[case.reason or ""] = drops.get(case.reason or "", 0) + 1
        # Late replies count too: one more normal query on each family, then the last look.
        for family in (4, 6):
            for tern in (a, b):
                if client.udp(simple_query(client), family, tern.port) is None:
                    failures.append(f"tern {tern.label} did not answer after the crafted frames")
        capture.drain()
        judge_crafted(sent, capture, failures, comparison)
    finally:
        capture.close()
        sender.close()
    for line in table:
        say(f"  xdp drops: {line}")
    return drops


def dropped_by_reason(samples: dict[str, float]) -> dict[str, float]:
    """tern_xdp_dropped_total by its reason label ('' for a sample without one)."""
    found: dict[str, float] = {}
    for key, value in samples.items():
        base, _, rest = key.partition("{")
        if base == METRIC_XDP_DROPPED:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
            reason = labels.get(DROP_REASON_LABEL, "")
            found[reason] = found.get(reason, 0.0) + value
    return found


def judge_crafted(sent: list[tuple[Case, int, int]], capture: Capture, failures: list[str],
                  comparison: Comparison) -> None:
    recorded = []
    for case, id_a, id_b in sent:
        replies_a, replies_b = capture.replies.get(id_a, []), capture.replies.get(id_b, [])
        outcome = {"A": replies_a, "B": replies_b}
        shown = ", ".join(
            f"{label}: " + ("none" if not replies else
                            f"{len(replies)} repl{'y' if len(replies) == 1 else 'ies'}"
                            + (f" tagged VID {replies[0].vlan}"
                               if replies[0].vlan is not None else ""))
            for label, replies in outcome.items())
        if case.expect in ("record", "same"):
            recorded.append(f"{case.name} ({case.expect}): {shown}")
        if case.expect == "record":
            continue
        if len(replies_a) > 1 or len(replies_b) > 1:
            failures.append(f"crafted `{case.name}`: more than one reply ({shown})")
            continue
        if case.expect == "none" and (replies_a or replies_b):
            failures.append(f"crafted `{case.name}`: answered, must not be ({shown}):\n"
                            f"{describe((replies_a or replies_b)[0].message)}")
        elif case.expect == "answer" and not (replies_a and replies_b):
            failures.append(f"crafted `{case.name}`: must be answered by A and B ({shown})")
        elif case.expect == "same" and bool(replies_a) != bool(replies_b):
            failures.append(f"crafted `{case.name}`: A and B differ ({shown})")
        elif replies_a and replies_b:
            # Each was sent with an ID of its own (the capture tells them apart by it).
            difference = comparison.answers(replies_b[0].message[:2] + replies_a[0].message[2:],
                                            replies_b[0].message)
            if difference:
                failures.append(f"crafted `{case.name}`: {difference}\n--- A:\n"
                                f"{describe(replies_a[0].message)}\n--- B:\n"
                                f"{describe(replies_b[0].message)}")
    say(f"crafted frames: {len(sent)} cases sent to A and B, each followed by an answered query")
    for line in recorded:
        say(f"  {line}")


def check_xdp_drops(before: dict[str, float], after: dict[str, float], drops: dict[str, int],
                    failures: list[str]) -> None:
    """The dropped counters rose: in sum by at least the number of drop cases, and each
    reason named by a case by at least its count."""
    def value(samples: dict[str, float], **labels: str) -> float:
        return metric(samples, METRIC_XDP_DROPPED, **labels) or 0.0

    if metric(after, METRIC_XDP_DROPPED) is None:
        failures.append(f"{METRIC_XDP_DROPPED} is missing from A's metrics")

    expected_total = sum(drops.values())
    rose = value(after) - value(before)
    per_reason = {reason: value(after, **{DROP_REASON_LABEL: reason}) -
                  value(before, **{DROP_REASON_LABEL: reason}) for reason in DROP_REASONS}
    say(f"{METRIC_XDP_DROPPED} rose by {rose:.0f} ({expected_total} drop cases sent); by reason: "
        + ", ".join(f"{reason} +{count:.0f}" for reason, count in per_reason.items()))
    if rose < expected_total:
        failures.append(f"{METRIC_XDP_DROPPED} rose by {rose:.0f}, fewer than the {expected_total} "
                        "crafted frames the XDP path must drop")
    for reason, count in drops.items():
        if reason and per_reason.get(reason, 0.0) < count:
            failures.append(f'{METRIC_XDP_DROPPED}{{{DROP_REASON_LABEL}="{reason}"}} rose by '
                            f"{per_reason.get(reason, 0.0):.0f}, expected at least {count}")


#----------- Step 1: VLAN stripping ------------------------------------------------

def check_vlan_stripping_refused(network: Network, a: Tern, failures: list[str]) -> None:
    """Step 1's last part: with rx-vlan-hw-parse or rx-vlan-stag-hw-parse on at the server
    end, tern A refuses to start with --xdp, says why and how to turn it off, and leaves
    no program attached; then both go off for the rest of the run."""
    link = network.server_link
    cases = (("rx-vlan-hw-parse", ["rxvlan", "on", "rx-vlan-stag-hw-parse", "off"],
              f"ethtool -K {link} rxvlan off"),
             ("rx-vlan-stag-hw-parse", ["rxvlan", "off", "rx-vlan-stag-hw-parse", "on"],
              f"ethtool -K {link} rx-vlan-stag-hw-parse off"))
    for feature, settings, remedy in cases:
        run(network.server.command(["ethtool", "-K", link] + settings))
        shown = run(network.server.command(["ethtool", "-k", link])).stdout
        state = "; ".join(line.strip() for line in shown.splitlines()
                          if line.strip().startswith(("rx-vlan-offload", "rx-vlan-stag-hw-parse")))
        log = a.start_refused()
        if f"({feature} on)" not in log or remedy not in log:
            failures.append(f"with {feature} on ({state}), tern A's refusal does not name it "
                            f"and `{remedy}`:\n{a.log_tail()}")
            continue
        programs = xdp_programs(network)
        if programs:
            failures.append(f"tern A refused with {feature} on but left XDP program(s) on "
                            f"{link}: {programs}")
            continue
        say(f"{state}: tern A refused to start with --xdp, naming {feature} and `{remedy}`, "
            "no program left")
    run(network.server.command(["ethtool", "-K", link, "rxvlan", "off",
                                "rx-vlan-stag-hw-parse", "off"]))


def check_copy_mode(a: Tern, failures: list[str]) -> None:
    """A veth has no zero-copy: the kernel chose copy mode at tern's one bind."""
    log = a.log_text()
    if "AF_XDP socket in copy mode" not in log or "zero-copy mode" in log:
        failures.append(f"tern A's log does not say its AF_XDP socket runs in copy mode:\n"
                        f"{a.log_tail()}")
    else:
        say("tern A's AF_XDP socket runs in copy mode (a veth has no zero-copy)")


#----------- Step 6: detaching ------------------------------------------------------

def check_detach(network: Network, a: Tern, client: Client, failures: list[str]) -> None:
    expected = 1 if USE_XDP else 0
    a.stop()
    programs = xdp_programs(network)
    if programs:
        failures.append(f"after SIGTERM of tern A, {network.server_link} still has XDP "
                        f"program(s): {programs}")
    say(f"SIGTERM: tern A exited 0 and {network.server_link} has {len(programs)} XDP programs")

    a.start()
    wait_answering(client, a)
    programs = xdp_programs(network)
    if len(programs) != expected:
        failures.append(f"tern A restarted: {len(programs)} XDP programs attached, {expected} "
                        "expected")
    a.kill()
    left = xdp_programs(network)
    say(f"SIGKILL: tern A killed, {len(left)} XDP program(s) left on {network.server_link}")

    a.start()
    wait_answering(client, a)
    programs = xdp_programs(network)
    if len(programs) != expected:
        failures.append(f"tern A started after SIGKILL: {len(programs)} XDP programs attached, "
                        f"{expected} expected (no stacking)")
    before = a.metrics()
    count = 20
    for index in range(count):
        if client.udp(simple_query(client), 4 if index % 2 else 6, PORT_A) is None:
            failures.append("tern A started after SIGKILL does not answer")
            break
    if USE_XDP:
        answered = (metric(a.metrics(), METRIC_XDP_ANSWERED) or 0.0) - \
            (metric(before, METRIC_XDP_ANSWERED) or 0.0)
        if answered < count:
            failures.append(f"tern A started after SIGKILL answered {answered:.0f} of {count} "
                            "queries through XDP")
    a.stop()
    programs = xdp_programs(network)
    if programs:
        failures.append(f"after SIGTERM of the restarted tern A, {network.server_link} still has "
                        f"XDP program(s): {programs}")
    say(f"restart after SIGKILL: tern A started, had {expected} program(s), answered, and "
        "detached at SIGTERM")


def check_rate_limiting(a: Tern, client: Client, failures: list[str]) -> None:
    """Response rate limiting applies on the XDP path (issue 12): tern A restarted with
    `rate-limit` (5 answers a second, slip 2) and sent a burst of RRL_BURST identical queries
    over XDP. Once its XDP counter shows every one received, and the client has every
    answer A sent, some were limited (tern_rrl_limited_total rose), slips went out as
    truncated answers (TC=1) and fewer answers than queries arrived."""
    original = a.config_path.read_text()
    a.config_path.write_text(original + "rate-limit:\n  responses-per-second: 5\n"
                             "  slip: 2\n")
    try:
        a.start()
        wait_answering(client, a)
        before = a.metrics()
        name = "ratelimited.example.com."
        sock = client.udp4
        sent_ids = set()
        for _ in range(RRL_BURST):
            wire = simple_query(client, name, "A")
            sent_ids.add(wire[:2])
            sock.sendto(wire, (SERVER_V4, PORT_A))

        def delta(samples: dict[str, float], metric_name: str) -> float:
            return (metric(samples, metric_name) or 0.0) - (metric(before, metric_name) or 0.0)

        after = {}

        def processed() -> bool:
            after.update(a.metrics())
            return delta(after, METRIC_XDP_RECEIVED) >= RRL_BURST

        wait_for("tern A to receive the burst over XDP", processed)
        sent_answers = int(delta(after, METRIC_XDP_ANSWERED))
        answers = []

        def collected() -> bool:
            sock.settimeout(0.05)
            try:
                data, _ = sock.recvfrom(65535)
            except socket.timeout:
                return False
            if data[:2] in sent_ids:
                answers.append(data)
            return len(answers) >= sent_answers

        if sent_answers:
            wait_for(f"the {sent_answers} answers A sent to arrive", collected)
        limited = delta(after, "tern_rrl_limited_total")
        slipped = sum(1 for data in answers if data[2] & 0x02)
        if limited < 1 or slipped < 1 or len(answers) >= RRL_BURST:
            failures.append(f"rate limiting over XDP: {RRL_BURST} queries, {len(answers)} answers "
                            f"({slipped} truncated slips), tern_rrl_limited_total rose by "
                            f"{limited:.0f}: expected some limited and slipped")
        say(f"rate limiting over XDP: {RRL_BURST} queries, {len(answers)} answered, {slipped} "
            f"of them truncated slips, {limited:.0f} limited")
        a.stop()
    finally:
        a.config_path.write_text(original)


#----------- Main -----------------------------------------------------------------

def main() -> int:
    if os.geteuid() != 0:
        print(f"{SCRIPT}: FAIL: must run as root (network namespaces, raw sockets, BPF)",
              file=sys.stderr)
        return 1
    tern_bin = tern_binary()
    if not tern_bin.is_file():
        print(f"{SCRIPT}: FAIL: tern binary not found at {tern_bin} (set TERN_BIN)",
              file=sys.stderr)
        return 1
    say("XDP path under test (tern A --xdp)" if USE_XDP else
        f"{ENV_NO_XDP} set: tern A runs WITHOUT --xdp; the XDP counters and programs are not "
        "checked")
    cleanup = Cleanup()
    atexit.register(cleanup.run)
    install_signal_handlers()
    failures: list[str] = []
    terns: list[Tern] = []
    client = None
    try:
        cleanup.directory = pathlib.Path(tempfile.mkdtemp(prefix="tern-xdp-"))
        network = set_up_network(cleanup)
        say(f"namespaces {network.server.name} and {network.client.name}, veth "
            f"{network.server_link} ({network.server_mac.hex(':')}) <-> {network.client_link} "
            f"({network.client_mac.hex(':')})")
        check_program_detection(network)
        check_comparison_rule()

        zone_directory = cleanup.directory / "zones"
        zone_directory.mkdir()
        zone_list, zones = load_zones(zone_directory)
        a = Tern("A", network, cleanup.directory / "a", PORT_A, METRICS_PORT_A,
                 tern_config("A", cleanup.directory / "a", PORT_A, METRICS_PORT_A, zone_list),
                 USE_XDP, cleanup)
        b = Tern("B", network, cleanup.directory / "b", PORT_B, METRICS_PORT_B,
                 tern_config("B", cleanup.directory / "b", PORT_B, METRICS_PORT_B, zone_list),
                 False, cleanup)
        terns = [a, b]
        if USE_XDP:
            check_vlan_stripping_refused(network, a, failures)
        else:
            run(network.server.command(["ethtool", "-K", network.server_link, "rxvlan", "off",
                                        "rx-vlan-stag-hw-parse", "off"]))
        client = Client(network)
        for tern in terns:
            tern.start()
            wait_answering(client, tern)
        if USE_XDP:
            check_copy_mode(a, failures)
        programs = xdp_programs(network)
        if len(programs) != (1 if USE_XDP else 0):
            raise Failure(f"tern A serves with {len(programs)} XDP programs attached to "
                          f"{network.server_link}, {1 if USE_XDP else 0} expected")
        say(f"tern A and B serve {len(zones)} zones; {len(programs)} XDP program(s) attached"
            + "".join(f" (id {p.get('id')}, name {p.get('name')}, mode {p.get('mode')})"
                      for p in programs))

        comparison = Comparison()
        before = a.metrics()
        answered = compare_query_list(client, a, b, zones, failures, comparison)
        compare_dig(network, failures)
        after = a.metrics()
        if USE_XDP:
            for name, least in ((METRIC_XDP_RECEIVED, answered), (METRIC_XDP_ANSWERED, answered)):
                rose = (metric(after, name) or 0.0) - (metric(before, name) or 0.0)
                if metric(after, name) is None:
                    failures.append(f"{name} is missing from A's metrics")
                elif rose < least:
                    failures.append(f"{name} rose by {rose:.0f}, fewer than the {least} UDP "
                                    "answers A gave: they did not all come through XDP")
                say(f"{name} rose by {rose:.0f} ({least} UDP answers from A)")

        check_tcp_and_icmp(client, failures)
        check_offloaded_checksums(network, client, a, failures)
        check_cold_cache_allocations(client, a, failures)

        before = a.metrics()
        drops = send_crafted(network, hostile_cases(), client, a, b, failures, comparison)
        after = a.metrics()
        if USE_XDP:
            check_xdp_drops(before, after, drops, failures)
        else:
            say(f"XDP drop counters not checked (no XDP); {sum(drops.values())} cases are drops")

        check_detach(network, a, client, failures)
        if USE_XDP:
            check_rate_limiting(a, client, failures)
        b.stop()
    except Failure as e:
        failures.append(str(e))
        for tern in terns:
            if tern.starts:
                say(f"--- tern {tern.label} log (last lines) ---\n{tern.log_tail()}")
    except Interrupted as e:
        print(f"{SCRIPT}: FAIL: {e}", file=sys.stderr)
        return e.code
    finally:
        if client is not None:
            client.close()
        cleanup.run()
    if failures:
        for failure in failures[:30]:
            print(f"{SCRIPT}: FAIL: {failure}", file=sys.stderr)
        if len(failures) > 30:
            print(f"{SCRIPT}: ... and {len(failures) - 30} more failures", file=sys.stderr)
        return 1
    say("PASS" + ("" if USE_XDP else f" (without XDP: {ENV_NO_XDP} set)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
