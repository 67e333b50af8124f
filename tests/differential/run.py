#!/usr/bin/env python3
"""Differential test: tern's answers against Knot DNS and NSD on the same zones.

Usage: python3 tests/differential/run.py [--peers-only] [options]    (see README.md)

Knot, NSD and tern are started on their own 127.0.0.1 ports on one directory of zone files
(generated here, plus the `flags.` zone from shared/corpora), each query is sent to all three,
and the answers are compared section by section. Pass criterion, per query and per section:
tern's section equals Knot's or NSD's (ideally the same server for the whole message; the
report counts both). Where Knot and NSD disagree with each other the query is listed in a
summary, so the behaviour tern picks can be documented.

Behaviours pinned (zones in zones.py, queries in queries.py):
  * positive answers, NODATA, NXDOMAIN (SOA in authority, its TTL), REFUSED outside our zones
    (incl. suffix look-alikes such as xexample.com. and example.com.evil.)
  * AA/TC/RD/RA/AD/CD flags: RD copied from the query, AA only for authoritative data
  * the question is echoed byte for byte: the client's qname case (0x20) is preserved
  * wildcards: plain, wildcard below an existing name, wildcard CNAME (in zone and leaving our
    zones), wildcard with children, an empty non-terminal blocking a wildcard, the literal `*`
  * empty non-terminals (NODATA, not NXDOMAIN)
  * CNAME chains: in zone, into another loaded zone, into the loaded child zone, leaving our
    zones, into a wildcard, to NXDOMAIN, to an ENT, below a delegation, through a DNAME,
    12 long (> 8), a 3-loop and a self-loop
  * DNAME: queries at and below it, synthesized CNAME, target in zone, in another loaded zone,
    in the loaded child zone, outside our zones
  * delegations: with glue (+ DS at the parent side), without glue (out-of-zone NS targets),
    glue that does not fit in 512 bytes, names below a cut, DS at a cut (answered by the parent),
    a child zone loaded as its own zone under its parent's delegation
  * additional-section A/AAAA for NS, MX and SRV targets (in zone, in another zone)
  * mixed-case owner and RDATA names (compared case-insensitively), TXT case kept
  * TC: RRsets over 512 bytes without EDNS, over 1232 bytes with EDNS; the same over TCP
  * EDNS: OPT presence, version and DO echoed; no OPT in the answer to a query without one
  * ANY, CNAME, DS, SOA, NS and an absent type at every owner name
  * the corpora list knot__query-test__flags.zone.queries on the `flags.` zone (CNAME/DNAME
    loops, nested wildcards, wildcard DNAME/delegation, SVCB additionals, 512/1220-byte edges)
  * DNSSEC (groups corpus-nsec*, signed-*): RRSIGs with every RRset in every section, NSEC and
    NSEC3 proofs for NXDOMAIN, NODATA, empty non-terminals, wildcard answers and wildcard NODATA,
    referrals with DS or the no-DS proof, opt-out, DNAME with its RRSIG, CNAME chains through
    wildcards, the DNSSEC types asked for directly, TC instead of unsigned RRsets (512-octet
    payloads), and every RRSIG tern sends validated against the zone's DNSKEY

TTLs are explicit everywhere, so TTL defaulting is never a difference; TTLs compare exactly.
Sections compare as multisets of RRs (order ignored); names compare case-insensitively except
in the question.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import pathlib
import random
import re
import shutil
import signal
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

try:
    import dns.rdatatype  # noqa: E402
except ImportError:
    sys.exit("dnspython is missing: run scripts/install-test-deps.sh (or pip install dnspython)")

import queries as qmod  # noqa: E402
import servers as smod  # noqa: E402
import signed as signmod  # noqa: E402
import wire  # noqa: E402
import zones as zmod  # noqa: E402

import validate as vmod  # noqa: E402

import dns._features  # noqa: E402

if not dns._features.have("dnssec"):
    sys.exit("dnspython's DNSSEC support is missing: run scripts/install-test-deps.sh (dnspython[dnssec])")

CORPUS_ZONE = "knot/tests-extra__data__flags.zone"
CORPUS_QUERIES = "derived/knot__query-test__flags.zone.queries"
CORPUS_ORIGIN = "flags"
# The pre-signed RFC 4035 example zone (origin `example.`) with NSEC and with NSEC3, and their
# query lists (run with DO=1 among other variants). Each is a group of its own: same origin.
SIGNED_CORPORA = {
    "corpus-nsec": (
        "knot/tests-extra__tests__basic__nsec__data__example.zone.nsec",
        "derived/knot__nsec-test__example.zone.nsec.queries",
    ),
    "corpus-nsec3": (
        "knot/tests-extra__tests__basic__nsec3__data__example.zone.nsec3",
        "derived/knot__nsec3-test__example.zone.nsec3.queries",
    ),
}
SIGNED_CORPUS_ORIGIN = "example"
MAX_SILENT_QUERIES = 10
MAX_MIXED_SHOWN = 30


class Stop(Exception):
    """The run was asked to stop: global time limit (SIGALRM), Ctrl-C or SIGTERM."""

    def __init__(self, reason: str, code: int):
        super().__init__(reason)
        self.code = code


class StopFlag:
    """Signal handlers only record the request; the query loop checks it between queries, so a
    signal never lands in the middle of parsing. A second signal stops at once."""

    def __init__(self):
        self.pending: Stop | None = None

    def request(self, reason: str, code: int) -> None:
        if self.pending is not None:
            raise Stop(reason, code)
        self.pending = Stop(reason, code)

    def check(self) -> None:
        if self.pending is not None:
            raise self.pending


@dataclasses.dataclass
class Result:
    query: qmod.Query
    responses: dict[str, wire.Response]

    def differing(self, a: str, b: str) -> list[str]:
        ra, rb = self.responses[a], self.responses[b]
        return [s for s in wire.SECTIONS if ra.section(s) != rb.section(s)]


@dataclasses.dataclass
class Group:
    """One set of zones served by one Knot, one NSD and one tern, and the queries asked."""

    name: str
    zone_dir: pathlib.Path
    zone_names: list[str]
    queries: list[qmod.Query]
    # signed zone files by origin, for the validator check (empty: unsigned group)
    signed_files: dict[str, pathlib.Path] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Verdict:
    """How tern's answer relates to the peers' answers for one query."""

    failing: list[str]  # sections equal to neither peer
    whole: str  # "knot+nsd", "knot", "nsd", "mixed" (per-section matches from both) or "fail"


def judge(result: Result) -> Verdict:
    r = result.responses
    t, k, n = r["tern"], r["knot"], r["nsd"]
    failing = [s for s in wire.SECTIONS if t.section(s) not in (k.section(s), n.section(s))]
    if failing and truncated_signed(result):
        failing = [s for s in failing if s not in wire.RR_SECTIONS or not tc_section_ok(result, s)]
        return Verdict(failing, "fail" if failing else "tc")
    eq_k = not result.differing("tern", "knot")
    eq_n = not result.differing("tern", "nsd")
    if failing:
        whole = "fail"
    elif eq_k and eq_n:
        whole = "knot+nsd"
    elif eq_k:
        whole = "knot"
    elif eq_n:
        whole = "nsd"
    else:
        whole = "mixed"
    return Verdict(failing, whole)


def truncated_signed(result: Result) -> bool:
    """A DO=1 query over UDP that tern answered with TC=1."""
    t = result.responses["tern"]
    return result.query.do and not result.query.tcp and t.ok and "tc" in t.flags.split()


def tc_section_ok(result: Result, section: str) -> bool:
    """The rule for a section of a truncated signed answer (docs/decisions/0004).

    Knot fills a truncated answer with RRsets first and their RRSIGs after, as far as they fit
    (dropping signatures); NSD writes each RRset with its RRSIGs, in its own order, and stops at
    the first that does not fit. tern writes whole RRsets with their RRSIGs, never one without
    the other, so its truncated sections can equal neither. Such a section passes when it is
    made of whole RRsets and whole RRSIG sets of the full answer (Knot's, over TCP), and every
    RRset in it that is signed in the full answer carries its RRSIGs (the validator checks each
    RRSIG)."""
    full = result.responses.get("full")
    if full is None or not full.ok:
        return False
    def groups(rrs) -> collections.Counter:
        return collections.Counter(
            (rr.key[0], rr.key[1], covered(rr) if rr.key[1] == dns.rdatatype.RRSIG else 0) for rr in rrs
        )
    mine, whole = groups(result.responses["tern"].section(section)), groups(full.section(section))
    if not collections.Counter(result.responses["tern"].section(section)) <= collections.Counter(full.section(section)):
        return False
    rrsig = dns.rdatatype.RRSIG
    for (owner, rtype, cover), count in mine.items():
        if whole[(owner, rtype, cover)] != count:
            return False  # part of an RRset, or part of its signatures
        if rtype != rrsig and whole[(owner, rrsig, rtype)] and not mine[(owner, rrsig, rtype)]:
            return False  # a signed RRset without its RRSIGs
    return True


def covered(rr: wire.RR) -> int:
    """The type covered by an RRSIG (first two octets of its canonical RDATA)."""
    return int.from_bytes(rr.key[4][:2], "big")


# ---------------------------------------------------------------------------- reporting


def rr_type(rr: wire.RR) -> str:
    return dns.rdatatype.to_text(rr.key[1])


def rr_diff(a: tuple, b: tuple) -> tuple[list[wire.RR], list[wire.RR]]:
    ca, cb = collections.Counter(a), collections.Counter(b)
    return sorted((ca - cb).elements()), sorted((cb - ca).elements())


def disagreement(result: Result, a: str = "knot", b: str = "nsd") -> tuple[str, str]:
    """(signature for grouping, one-line detail) of how server a's answer differs from b's."""
    ra, rb = result.responses[a], result.responses[b]
    sig, detail = [], []
    for sec in result.differing(a, b):
        if sec in wire.RR_SECTIONS and ra.ok and rb.ok:
            only_a, only_b = rr_diff(ra.section(sec), rb.section(sec))
            ta = ",".join(sorted({rr_type(rr) for rr in only_a})) or "-"
            tb = ",".join(sorted({rr_type(rr) for rr in only_b})) or "-"
            sig.append(f"{sec}: {a} +{ta} / {b} +{tb}")
            for who, rrs in ((a, only_a), (b, only_b)):
                if rrs:
                    shown = " | ".join(rr.text for rr in rrs[:3])
                    more = f" (+{len(rrs) - 3} more)" if len(rrs) > 3 else ""
                    detail.append(f"{sec} only {who}: {shown}{more}")
        elif sec == "question":
            sig.append("question bytes")
            detail.append(f"question {a}={wire.question_text(ra.question)} {b}={wire.question_text(rb.question)}")
        else:
            va, vb = ra.section(sec), rb.section(sec)
            sig.append(f"{sec}: {a}={va} / {b}={vb}")
    return "; ".join(sig), "; ".join(detail)


def print_disagreements(results: list[Result], limit: int) -> int:
    groups: dict[str, list[tuple[Result, str]]] = collections.defaultdict(list)
    for res in results:
        if res.differing("knot", "nsd"):
            sig, detail = disagreement(res)
            groups[sig].append((res, detail))
    total = sum(len(v) for v in groups.values())
    print(f"\n=== Knot vs NSD: {total} queries answered differently, {len(groups)} kinds ===")
    for sig, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(items)}x] {sig}")
        for res, detail in items[: limit if limit > 0 else None]:
            q = res.query
            print(f"  {q.describe()}  ({q.set_name}: {q.note})")
            if detail:
                print(f"      {detail}")
        if 0 < limit < len(items):
            print(f"  ... and {len(items) - limit} more (--all-disagreements lists them)")
    return total


def print_failure(res: Result, verdict: Verdict, peers: list[str]) -> None:
    q = res.query
    print(f"\n--- FAIL {q.describe()}  ({q.set_name}: {q.note})")
    print(f"    sections equal to neither Knot nor NSD: {', '.join(verdict.failing)}")
    for peer in peers:
        sig, detail = disagreement(res, "tern", peer)
        print(f"    tern vs {peer}: {sig}")
        if detail:
            print(f"      {detail}")
    for name in ("tern", *peers):
        print(f"  >> {name}:")
        print("\n".join("     " + line for line in res.responses[name].to_text().splitlines()))


def write_json(path: pathlib.Path, results: list[Result], servers: list[str]) -> None:
    out = []
    for res in results:
        entry = {"query": dataclasses.asdict(res.query)}
        for s in servers:
            entry[s] = res.responses[s].to_text()
        entry["knot_vs_nsd"] = res.differing("knot", "nsd")
        out.append(entry)
    path.write_text(json.dumps(out, indent=1))


# ---------------------------------------------------------------------------- running


def shared_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("SHARED_DIR") or REPO.parent / "shared").resolve()


def tern_binary() -> pathlib.Path:
    env = os.environ.get("TERN_BIN")
    return pathlib.Path(env) if env else REPO / "target" / "release" / "tern"


def run_queries(
    query_list: list[qmod.Query], servers: list[smod.Server], timeout: float, seed: int, stop: StopFlag
) -> list[Result]:
    """Ask every server every query. A server that dies, or stops answering for
    MAX_SILENT_QUERIES queries in a row, ends the run at once (rather than timing out on each
    of the remaining queries)."""
    rng = random.Random(seed)
    results = []
    silent = collections.Counter()
    for q in query_list:
        stop.check()
        qid = rng.randrange(65536)
        data = q.to_wire(qid)
        responses = {s.name: wire.exchange(data, s.addr, tcp=q.tcp, timeout=timeout) for s in servers}
        tern = responses.get("tern")
        if q.do and not q.tcp and tern is not None and tern.ok and "tc" in tern.flags.split():
            # the full answer, for the truncated-signed-answer rule (tc_section_ok)
            responses["full"] = wire.exchange(data, servers[0].addr, tcp=True, timeout=timeout)
        results.append(Result(q, responses))
        for s in servers:
            if responses[s.name].wire is not None:
                silent[s.name] = 0
                continue
            silent[s.name] += 1
            if not s.alive():
                raise smod.ServerError(f"{s.name} died at query {q.describe()}; log tail:\n{s.log_tail()}")
            if silent[s.name] >= MAX_SILENT_QUERIES:
                raise smod.ServerError(
                    f"{s.name} did not answer the last {MAX_SILENT_QUERIES} queries (last: {q.describe()}: "
                    f"{responses[s.name].error}); log tail:\n{s.log_tail()}"
                )
    return results


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peers-only", action="store_true", help="compare Knot vs NSD only (no tern needed)")
    p.add_argument(
        "--stand-in",
        choices=("knot", "nsd"),
        help="run a second Knot or NSD in tern's place (checks the harness itself: expect 0 failures)",
    )
    p.add_argument("--seed", type=int, default=20240101, help="seed for case/RD/DO/qid choices")
    p.add_argument("--tcp-every", type=int, default=10, help="repeat every Nth generated query over TCP")
    p.add_argument("--timeout", type=float, default=2.0, help="per-query socket timeout (s)")
    p.add_argument("--time-limit", type=int, default=600, help="global time bound for the whole run (s)")
    p.add_argument("--filter", help="only run queries whose description matches this regex")
    p.add_argument("--skip-corpus", action="store_true", help="do not run the shared/corpora query lists")
    p.add_argument("--skip-signed", action="store_true", help="do not sign zones (no signed-* groups)")
    p.add_argument("--groups", help="only run the groups whose name matches this regex")
    p.add_argument("--max-failures", type=int, default=25, help="failures shown in full (0: all)")
    p.add_argument("--disagreement-examples", type=int, default=6, help="queries listed per Knot/NSD difference kind")
    p.add_argument("--all-disagreements", action="store_true", help="list every Knot/NSD disagreement")
    p.add_argument("--json", type=pathlib.Path, help="write every query and answer to this file")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (zones, configs, logs)")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    started = time.monotonic()

    tern_bin = None
    if not args.peers_only and not args.stand_in:
        tern_bin = tern_binary().resolve()
        if not (tern_bin.is_file() and os.access(tern_bin, os.X_OK)):
            print(
                f"FATAL: tern binary not found at {tern_bin} (set TERN_BIN, or build it with "
                "`cargo build --release`; --peers-only compares Knot vs NSD without tern)",
                file=sys.stderr,
            )
            return 2
    for tool in ("knotd", "nsd"):
        if shutil.which(tool) is None:
            print(f"FATAL: {tool} not found: run scripts/install-test-deps.sh", file=sys.stderr)
            return 2

    shared = shared_dir()
    if not args.skip_corpus:
        needed = [CORPUS_ZONE, CORPUS_QUERIES] + [f for pair in SIGNED_CORPORA.values() for f in pair]
        for rel in needed:
            if not (shared / "corpora" / rel).is_file():
                print(f"FATAL: corpus file {shared / 'corpora' / rel} missing (set SHARED_DIR, or --skip-corpus)", file=sys.stderr)
                return 2
    if not args.skip_signed and not signmod.have_tools():
        print("FATAL: dnssec-keygen/dnssec-signzone not found: run scripts/install-test-deps.sh", file=sys.stderr)
        return 2

    stop = StopFlag()
    signal.signal(signal.SIGALRM, lambda *_: stop.request(f"global time limit of {args.time_limit}s exceeded", 3))
    signal.signal(signal.SIGINT, lambda *_: stop.request("interrupted (SIGINT)", 130))
    signal.signal(signal.SIGTERM, lambda *_: stop.request("terminated (SIGTERM)", 143))
    signal.alarm(args.time_limit)

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tern-differential-"))
    running: list[smod.Server] = []
    try:
        groups = build_groups(args, tmp, shared)
        if args.groups:
            rx = re.compile(args.groups)
            groups = [g for g in groups if rx.search(g.name)]
        if args.filter:
            rx = re.compile(args.filter)
            for g in groups:
                g.queries = [q for q in g.queries if rx.search(q.describe())]

        results: list[Result] = []
        validation = Validation()
        elapsed = 0.0
        dead = False
        names: list[str] = []
        for group in groups:
            if not group.queries:
                continue
            servers = make_servers(args, tern_bin, tmp / group.name, group)
            names = [s.name for s in servers]
            for s in servers:
                s.start()
                running.append(s)
            for s in servers:
                s.wait_ready(timeout=20.0, check_stop=stop.check)
            print(
                f"[{group.name}] {len(group.zone_names)} zones; {len(group.queries)} queries against "
                + ", ".join(f"{s.name} (127.0.0.1:{s.port})" for s in servers)
            )
            t0 = time.monotonic()
            group_results = run_queries(group.queries, servers, args.timeout, args.seed, stop)
            elapsed += time.monotonic() - t0
            for s in servers:
                if not s.alive():
                    print(f"\nFATAL: {s.name} died during the run; log tail:\n{s.log_tail()}")
                    dead = True
                s.stop()
            running.clear()
            if group.signed_files and "tern" in names:
                validation.check_group(group, group_results)
            results += group_results

        if args.json:
            write_json(args.json, results, names)
        limit = 0 if args.all_disagreements else args.disagreement_examples
        n_disagree = print_disagreements(results, limit)
        return report(args, results, names, n_disagree, elapsed, started, dead, validation)
    except Stop as e:
        print(f"\nFATAL: {e}", file=sys.stderr)
        return e.code
    except (smod.ServerError, signmod.SignError) as e:
        print(f"\nFATAL: {e}", file=sys.stderr)
        return 2
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # let the clean-up finish
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for s in running:
            s.stop()
        if args.keep_tmp:
            print(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def build_groups(args, tmp: pathlib.Path, shared: pathlib.Path) -> list[Group]:
    """The base group (generated zones + the flags corpus), the pre-signed corpora, and the
    generated zones signed three ways."""
    groups = []
    base_dir = tmp / "zones"
    base_dir.mkdir()
    extra = {} if args.skip_corpus else {CORPUS_ORIGIN: shared / "corpora" / CORPUS_ZONE}
    infos = zmod.write_zones(base_dir, extra)
    generated = [z.name.to_text(omit_final_dot=True) for z in infos]
    base_queries = qmod.generated_queries(infos, args.seed, args.tcp_every)
    if not args.skip_corpus:
        base_queries += qmod.corpus_queries(shared / "corpora" / CORPUS_QUERIES, args.seed)
    groups.append(Group("base", base_dir, generated + list(extra), base_queries))

    if not args.skip_corpus:
        for name, (zone_rel, queries_rel) in SIGNED_CORPORA.items():
            zone_dir = tmp / f"zones-{name}"
            zone_dir.mkdir()
            zone_file = zone_dir / f"{SIGNED_CORPUS_ORIGIN}.zone"
            zone_file.write_bytes((shared / "corpora" / zone_rel).read_bytes())
            queries = qmod.corpus_queries(shared / "corpora" / queries_rel, args.seed)
            groups.append(
                Group(name, zone_dir, [SIGNED_CORPUS_ORIGIN], queries, {SIGNED_CORPUS_ORIGIN + ".": zone_file})
            )

    if not args.skip_signed:
        for mode in signmod.MODES:
            zone_dir = tmp / f"zones-signed-{mode}"
            signmod.sign_zones(base_dir, generated, zone_dir, mode, tmp / f"sign-{mode}")
            files = {z + ".": zone_dir / f"{z}.zone" for z in generated}
            queries = qmod.generated_queries(infos, args.seed, args.tcp_every, signed=mode)
            groups.append(Group(f"signed-{mode}", zone_dir, generated, queries, files))
    return groups


def make_servers(args, tern_bin, workdir: pathlib.Path, group: Group) -> list[smod.Server]:
    servers: list[smod.Server] = [
        smod.Knot(workdir / "knot", group.zone_dir, group.zone_names),
        smod.Nsd(workdir / "nsd", group.zone_dir, group.zone_names),
    ]
    if tern_bin is not None:
        servers.append(smod.Tern(tern_bin, workdir / "tern", group.zone_dir, group.zone_names))
    elif args.stand_in:
        peer_class = {"knot": smod.Knot, "nsd": smod.Nsd}[args.stand_in]
        stand_in = type(f"{peer_class.__name__}StandIn", (peer_class,), {"name": "tern"})
        servers.append(stand_in(workdir / "tern", group.zone_dir, group.zone_names))
    return servers


class Validation:
    """The validator check over tern's DO=1 answers of the signed groups."""

    def __init__(self):
        self.answers = 0
        self.verified = 0
        self.failures: list[tuple[Result, list[str]]] = []

    def check_group(self, group: Group, results: list[Result]) -> None:
        keys = vmod.zone_keys(group.signed_files)
        for res in results:
            answer = res.responses["tern"]
            if not (res.query.do and answer.ok):
                continue
            self.answers += 1
            verified, errors = vmod.check(answer.wire, keys, signmod.VALIDATION_TIME)
            self.verified += verified
            if errors:
                self.failures.append((res, errors))


def report(
    args,
    results: list[Result],
    names: list[str],
    n_disagree: int,
    elapsed: float,
    started: float,
    dead: bool,
    validation: Validation,
) -> int:
    total = len(results)
    peer_errors = [r for r in results if not (r.responses["knot"].ok and r.responses["nsd"].ok)]
    print("\n=== Summary ===")
    print(f"queries: {total} ({sum(r.query.tcp for r in results)} over TCP) in {elapsed:.1f}s")
    by_set = collections.Counter(r.query.set_name for r in results)
    for name, n in by_set.items():
        print(f"  set {name}: {n}")
    print(f"Knot and NSD agree on {total - n_disagree}, disagree on {n_disagree}")
    if peer_errors:
        print(f"WARNING: {len(peer_errors)} queries got no usable answer from Knot or NSD, e.g.:")
        for r in peer_errors[:5]:
            errs = {s: r.responses[s].error for s in ("knot", "nsd") if r.responses[s].error}
            print(f"  {r.query.describe()}: {errs}")

    if "tern" not in names:
        print(f"(--peers-only: tern not run; {time.monotonic() - started:.1f}s total)")
        return 1 if dead else 0

    verdicts = [(r, judge(r)) for r in results]
    whole = collections.Counter(v.whole for _, v in verdicts)
    failures = [(r, v) for r, v in verdicts if v.failing]
    print(f"tern equals Knot (whole answer): {whole['knot'] + whole['knot+nsd']}")
    print(f"tern equals NSD  (whole answer): {whole['nsd'] + whole['knot+nsd']}")
    print(
        f"  where Knot and NSD differ, tern took Knot's answer {whole['knot']}x, NSD's {whole['nsd']}x, "
        f"mixed per section {whole['mixed']}x"
    )
    if whole["tc"]:
        print(f"  truncated signed answers passed by the TC rule (decision 0004): {whole['tc']}")
    if whole["mixed"]:
        print("  mixed (each section equals a peer, but not the same peer throughout):")
        mixed = [(r, v) for r, v in verdicts if v.whole == "mixed"]
        for r, _ in mixed[:MAX_MIXED_SHOWN]:
            vs_knot, vs_nsd = r.differing("tern", "knot"), r.differing("tern", "nsd")
            print(f"    {r.query.describe()}: differs from knot in {vs_knot}, from nsd in {vs_nsd}")
        if len(mixed) > MAX_MIXED_SHOWN:
            print(f"    ... and {len(mixed) - MAX_MIXED_SHOWN} more")
    if failures:
        shown = failures if args.max_failures == 0 else failures[: args.max_failures]
        print(f"\n=== {len(failures)} FAILURES (tern equals neither Knot nor NSD) ===")
        for r, v in shown:
            print_failure(r, v, ["knot", "nsd"])
        if len(shown) < len(failures):
            print(f"\n... {len(failures) - len(shown)} more failures (--max-failures 0 shows all):")
            for r, v in failures[len(shown) :]:
                print(f"  {r.query.describe()}: {', '.join(v.failing)}")
    print(
        f"\nvalidator: {validation.verified} RRSIGs verified in {validation.answers} DO=1 answers of tern, "
        f"{len(validation.failures)} answers with a bad or orphaned RRSIG"
    )
    for res, errors in validation.failures[: max(args.max_failures, 1)]:
        print(f"  {res.query.describe()} ({res.query.set_name}): " + "; ".join(errors[:3]))
    print(f"\ndifferential: {total - len(failures)} passed, {len(failures)} failed")
    print(f"total time {time.monotonic() - started:.1f}s")
    return 1 if failures or dead or validation.failures else 0


if __name__ == "__main__":
    sys.exit(main())
