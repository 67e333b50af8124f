# tern: build, run and test. `make run` and `make test` are the two set-up
# commands of README.md; the other targets are for developers.

CARGO ?= cargo
RELEASE_BIN := target/release/tern

.PHONY: run build release test deps lint fmt unit test-repeat differential compliance transfer xot update dnssec metrics dnstap proxy tls xdp update-peers deb service clean bench bench-check bench-peers bench-zones bench-signed bench-xdp bench-forward bench-sign bench-tls dhat dhat-flood fuzz soak

## Build in release mode and serve zones/ on 127.0.0.1:5353 (no config needed).
run: release
	$(RELEASE_BIN) serve --zones zones --listen 127.0.0.1:5353

## The release binary. When a clang is installed it must carry its XDP program
## (scripts/check-xdp-program.py fails if the build left it out: issue 22);
## `make run` still needs nothing but Rust (no python3: not checked).
release:
	$(CARGO) build --release --bin tern
	@if command -v python3 >/dev/null 2>&1; then \
		python3 scripts/check-xdp-program.py $(RELEASE_BIN); \
	else echo "python3 not found: not checked that $(RELEASE_BIN) carries its XDP program"; fi

build:
	$(CARGO) build --workspace --all-targets

## Everything the project checks: formatting, lints, unit and integration
## tests (which compare with named-checkzone), the differential suite
## against Knot and NSD, the compliance checks against BIND and zone
## transfers with all three, zones tern signs checked by dnssec-verify and
## ldns-verify-zone, the metrics endpoint read by Prometheus, the
## dnstap output read by BIND's dnstap-read and fstrm_capture, the
## systemd service, the AF_XDP path against the socket path and the Debian
## package. Installs the reference tools it needs.
test: deps lint unit differential compliance transfer xot update dnssec update-peers metrics dnstap proxy tls xdp service

## Debian packages and Python modules the tests use (idempotent).
deps:
	bash scripts/install-test-deps.sh

## Formatting, clippy, the API docs without a broken link, and no import
## circle between a crate's files (scripts/import-graph.py; STYLE.md 1.5).
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	python3 scripts/import-graph.py

fmt:
	$(CARGO) fmt --all

unit:
	$(CARGO) test --workspace

## The Rust test suite RUNS times (default 10), every other run with every
## core kept busy; prints each failing test with its run.
test-repeat: deps
	bash scripts/test-repeat.sh $(or $(RUNS),10)

## tern against Knot and NSD on generated zones and the corpora's query lists.
differential: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/differential/run.py

## criterion benchmarks of the hot paths (figures go to docs/benchmarks.md).
bench:
	$(CARGO) bench -p tern-benches

## Each benchmark once, as a quick check that they still run.
bench-check:
	$(CARGO) bench -p tern-benches -- --test

## tern, Knot and NSD side by side (CPU 0 server, CPU 1 dnsperf), plus
## callgrind instruction counts and the 1M-record zone load. ~10 minutes.
bench-peers: release
	TERN_BIN=$(RELEASE_BIN) bash scripts/bench-peers.sh

## DNS over TLS and TCP, tern beside NSD and BIND (CPU 0 server, CPU 1 clients): dnsperf
## -m dot and -m tcp (50 connections, 2 and 20 in flight), new TLS connections with and
## without resumption (benches' dot-load), UDP during a handshake flood, 10,000 idle TLS
## connections' memory (scripts/bench-tls.sh; issue 26). ~9 minutes. Not part of `test`.
bench-tls: release
	$(CARGO) build --release -p tern-benches --bin dot-load
	TERN_BIN=$(RELEASE_BIN) DOT_LOAD=target/release/dot-load bash scripts/bench-tls.sh

## Full-zone signing, tern sign beside Knot's kzonesign: 1,000,000 A records, NSEC, one
## ECDSA P-256 CSK, on 1 and 2 threads, and tern serve loading it signed; wall, CPU, peak RSS
## (scripts/bench-sign.sh). ~10 minutes.
bench-sign: release
	TERN_BIN=$(RELEASE_BIN) bash scripts/bench-sign.sh

## tern, Knot and NSD serving 10,000, 100,000 and 1,000,000 small zones, one at a
## time on CPU 0: time until every zone answers, memory, a reload after one edit
## (SIGHUP / knotc reload / nsd-control reload) and a one-zone reload, 3 rounds.
## Needs ~4 GiB of disk under /tmp for the 1M zone files; about 40 minutes with the defaults.
## COUNTS="10000 100000" for a shorter run (see the script's header).
bench-zones: release
	TERN_BIN=$(RELEASE_BIN) bash scripts/bench-zones.sh

## Answers with DO from a zone tern signed and from the same zone signed by BIND's
## dnssec-signzone, each tern alone under callgrind (scripts/bench-signed.sh).
bench-signed: release
	TERN_BIN=$(RELEASE_BIN) bash scripts/bench-signed.sh

## tern and Knot, each with XDP and with sockets (CPU 0, one worker), loaded by
## kxdpgun (CPU 1) over a veth pair between two network namespaces; needs root.
## Answered queries/s at 100k-400k qps offered and at max, CPU per answer. ~16 minutes.
bench-xdp: release
	TERN_BIN=$(RELEASE_BIN) bash scripts/bench-xdp.sh

## tern forwarding against Unbound and dnsdist: cache hits, then cache misses; ~9 minutes.
bench-forward: release
	TERN_BIN=$(RELEASE_BIN) bash scripts/bench-peers.sh forward forward-miss

## Heap allocations per answered query under a fixed dnsperf workload.
dhat:
	bash scripts/dhat-report.sh

## The same under a random-subdomain flood (every query a new name: a cache
## miss and an insert into a full cache); must print 0.
dhat-flood:
	bash scripts/dhat-report.sh flood

## ISC genreport's EDNS checks, the malformed-message cases, cookies and
## rate limiting, tern against BIND 9; and off-path forgery of forwarded
## answers with BIND 9 as the upstream (tests/compliance; forgery.py needs
## root for its raw socket, as CI has); NSID, class ANY and RRset TTLs
## against Knot, NSD and BIND.
compliance: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/compliance/edns.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/compliance/malformed.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/compliance/cookies.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/compliance/rrl.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/compliance/forgery.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/compliance/protocol.py

## Dynamic updates (issue 25): nsupdate and knsupdate with TSIG (hmac-sha256,
## hmac-md5), the rules' refusals, Knot following by IXFR, kill -9 during a
## stream of updates and the zone file written at stop (tests/update); updates to
## zones tern signs, checked by dnssec-verify, ldns-verify-zone, a validating
## Unbound and a BIND secondary (signed.py); a secondary forwarding to Knot
## (forward.py); update-rate (refused updates spend no token), rules changed,
## added to a new zone and added to a server started without any, by tern reload
## (reload.py); UPDATEs over the AF_XDP path, between two network namespaces
## (xdp.py; needs root, as the xdp stage).
update: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/update/update.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/update/signed.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/update/forward.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/update/reload.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/update/xdp.py

## Zones tern signs (dnssec-policy): read back by AXFR and checked by BIND's
## dnssec-verify, ldns-verify-zone and kzonecheck, keys kept across restarts, a reload
## signed, a corrupt key file failing its zone alone, a zone signed again
## before its signatures expire without its file changing, an edit signed
## incrementally (only its RRsets' RRSIGs change, IXFR gives them), keys
## moved from BIND and PEM without a rollover and RSA signing, ZSK, KSK and
## CSK rollovers under a validating Unbound with no bogus answer, every kind
## of name validated by Unbound from a private root, Knot, NSD and BIND
## as secondaries, by AXFR then IXFR after an edit and after a signature
## refresh, bump in the wire (Knot, tern signing as its secondary, BIND),
## the members of a Knot catalog signed, a restart signing from the saved
## signed records (at most the SOA's signature with nothing changed),
## and `tern sign` on one and two threads (tests/dnssec).
dnssec: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/signing.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/resign.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/incremental.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/denial.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/import.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/rollover.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/algorithm_rollover.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/validate.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/secondaries.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/bump.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/bump_catalog.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/restart_signed.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/sign_offline.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnssec/status.py

## The Prometheus endpoint, scraped by a real Prometheus (tests/metrics).
metrics: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/metrics/prometheus.py

## dnstap to a file and to fstrm_capture's socket, read back with BIND's
## dnstap-read; a reader that never reads costs dropped messages, not
## answers (tests/dnstap).
dnstap: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/dnstap/dnstap.py

## The PROXY protocol v2 (issue 26): dnsdist with useProxyProtocol in front
## of tern over UDP and TCP, forward.allow, transfer.allow, RRL and dnstap
## seeing the client behind it, and raw headers (malformed, untrusted)
## dropped and counted (tests/proxy).
proxy: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/proxy/proxy.py

## DNS over TLS (issue 26): answers equal to TCP's (pipelined, kdig and dig
## +tls), the pin, openssl s_client (versions, ALPN, certificate), padding,
## certificate reload, hostile clients closed and counted while UDP answers,
## dnsperf -m dot; dnsdist as a DoT client in front of tern, validating its
## certificate (tests/tls); an idle TLS connection's memory bounded (idle_memory.py);
## one-octet records and TLS 1.2 renegotiation (hostile_records.py); allocations
## per query over an open TLS and TCP connection (allocations.py).
tls: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/tls/dot.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/tls/dnsdist_dot.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/tls/idle_memory.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/tls/allocations.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/tls/hostile_records.py

## The AF_XDP path (tern serve --xdp) between two network namespaces joined by
## a veth pair: its answers equal the socket path's for a generated query list
## (dnspython, dig, kdig), TCP and ICMP still reach the kernel, hostile frames
## sent raw are dropped and counted while the server keeps answering, and the
## program is detached at exit (tests/xdp; needs root, as CI has).
xdp: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/xdp/xdp.py

## Zone transfers with the reference servers, with TSIG (tests/transfer):
## tern as primary to Knot, NSD and BIND 9 secondaries, as secondary of each
## of them (IXFR after NOTIFY from Knot and BIND), of a hostile primary,
## tern's catalog zone consumed by Knot and BIND, and 1M-record transfers in
## and out while dnsperf loses no query.
transfer: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/transfer/primary.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/transfer/secondary.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/transfer/hostile.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/transfer/catalog.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/transfer/load.py

## Dynamic update against peers (tests/update; issue 25): the sequence of
## tests/update/sequence.txt sent with nsupdate and knsupdate to Knot, BIND
## and tern, RCODEs and zones compared (differential.py), and certificates
## issued offline by pebble to certbot and lego through DNS-01 updates
## (acme.py), tern required beside Knot and BIND (TERN_UPDATE=1).
update-peers: release
	TERN_UPDATE=1 TERN_BIN=$(RELEASE_BIN) python3 tests/update/differential.py
	TERN_UPDATE=1 TERN_BIN=$(RELEASE_BIN) python3 tests/update/acme.py

## Zone transfers in over TLS (RFC 9103): tern as secondary of BIND 9.18's
## XoT, authenticated by CA and name and by pin, IXFR after NOTIFY; a wrong
## pin, an expired certificate, a wrong name and a plain-DNS port refused and
## counted, the old zone kept; fallback: plain (tests/xot). Zones out over
## TLS: BIND 9.18 and NSD as tern's XoT secondaries (AXFR, IXFR after NOTIFY),
## transfer.tls-only refusing plain TCP and UDP, tls.client-ca (mutual TLS)
## turned on by reload.
xot: release
	TERN_BIN=$(RELEASE_BIN) python3 tests/xot/xot_in.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/xot/xot_out.py

## The Debian package, built with dpkg-deb from the release binary
## (scripts/build-deb.sh; docs/decisions/0010-packaging.md):
## target/debian/tern_VERSION-1_ARCH.deb.
deb: release
	bash scripts/build-deb.sh $(RELEASE_BIN)

## Running tern as a service (tests/service): systemd's notifications and
## watchdog, dropping root to `user:` (needs root, as CI has), and the
## Debian package (contents, lintian, systemd-analyze verify, serving from
## the extracted package).
service: deb
	TERN_BIN=$(RELEASE_BIN) python3 tests/service/notify.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/service/privileges.py
	TERN_BIN=$(RELEASE_BIN) python3 tests/service/package.py

## Every cargo-fuzz target for FUZZ_SECONDS each (default 60; the issue's
## runs use 1800). Installs cargo-fuzz; stable toolchain via RUSTC_BOOTSTRAP.
fuzz:
	bash scripts/fuzz-all.sh $(or $(FUZZ_SECONDS),60)

## Mixed valid, malformed and truncated traffic for SOAK_SECONDS (default
## 600): the server must keep answering on every core with flat memory.
soak: release
	bash scripts/soak.sh $(or $(SOAK_SECONDS),600)

clean:
	$(CARGO) clean
