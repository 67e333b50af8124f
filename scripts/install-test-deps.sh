#!/usr/bin/env bash
# Install what the test suites (tests/differential, tests/service, tests/metrics, ...) need on
# a Debian machine: Knot DNS, NSD, dig/kdig, dnsperf, Prometheus and promtool, BIND's
# dnssec-keygen/dnssec-signzone/dnssec-verify (bind9-utils), ldns-verify-zone (ldnsutils, for
# crates/dnssec's signed zones), kzonecheck (knot-dnssecutils, for tests/dnssec), dnstap-read (bind9-dnsutils) and
# fstrm_capture (fstrm-bin) for the dnstap tests, clang (which builds the XDP program; tern
# builds without it, but then `--xdp` refuses to start), iproute2 and ethtool for the XDP
# test's namespaces and veth offloads (and kxdpgun, from knot-dnsutils, for
# scripts/bench-xdp.sh), Unbound (the validating resolver of tests/dnssec/rollover.py and
# validate.py; the package's own service is not used), dnsdist (the PROXY protocol v2 sender
# of tests/proxy), openssl (s_client and the certificates of tests/tls, the throwaway CA
# and certificates of tests/xot), kzonesign (knot-dnssecutils) and /usr/bin/time (time) for
# scripts/bench-sign.sh, and
# Python's dnspython with its DNSSEC extra (the `cryptography` package, for the validator
# check). Idempotent: does nothing when everything is already there; runs `apt-get update`
# only when a package is missing.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
PKGS=(knot knot-dnsutils knot-dnssecutils time nsd bind9-utils bind9-dnsutils ldnsutils dnsperf prometheus fstrm-bin clang iproute2 ethtool unbound dnsdist openssl)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

apt_updated=0
apt_install() {
    if [ "$apt_updated" -eq 0 ]; then
        $SUDO apt-get update
        apt_updated=1
    fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

# Installs the packages given that are not installed yet.
install_missing() {
    local pkg missing=()
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$pkg")
        fi
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "install-test-deps: missing Debian packages: ${missing[*]}"
        apt_install "${missing[@]}"
    fi
}

install_missing "${PKGS[@]}"

if ! "$PYTHON" -c 'import dns.message' 2>/dev/null; then
    echo "install-test-deps: installing dnspython for $PYTHON"
    if "$PYTHON" -m pip --version >/dev/null 2>&1; then
        # Debian's system Python refuses plain pip installs (PEP 668); retry past that guard.
        "$PYTHON" -m pip install dnspython \
            || "$PYTHON" -m pip install --break-system-packages dnspython
    else
        apt_install python3-dnspython
    fi
    "$PYTHON" -c 'import dns.message'
fi

# dnspython's DNSSEC validation needs a recent `cryptography` (dnspython 2.9 asks for >= 50);
# `dnspython[dnssec]` pulls the version this dnspython wants.
if ! "$PYTHON" -c 'import dns._features, sys; sys.exit(0 if dns._features.have("dnssec") else 1)' 2>/dev/null; then
    echo "install-test-deps: installing dnspython[dnssec] (cryptography) for $PYTHON"
    if "$PYTHON" -m pip --version >/dev/null 2>&1; then
        "$PYTHON" -m pip install 'dnspython[dnssec]' \
            || "$PYTHON" -m pip install --break-system-packages 'dnspython[dnssec]'
    else
        apt_install python3-cryptography
    fi
    "$PYTHON" -c 'import dns._features, sys; sys.exit(0 if dns._features.have("dnssec") else 1)'
fi

echo "install-test-deps: knotd $(knotd --version 2>&1 | head -1 | awk '{print $NF}'), \
nsd $(nsd -v 2>&1 | head -1 | awk '{print $NF}'), \
dnspython $("$PYTHON" -c 'import dns.version; print(dns.version.version)'), \
cryptography $("$PYTHON" -c 'import cryptography; print(cryptography.__version__)')"

# BIND 9's named: the reference server of the EDNS compliance checks (tests/compliance),
# started by the scripts themselves on 127.0.0.1 (the package's own service is not needed).
if ! dpkg-query -W -f='${Status}' bind9 2>/dev/null | grep -q "install ok installed"; then
    echo "install-test-deps: missing Debian package: bind9"
    apt_install bind9
fi
echo "install-test-deps: named $(named -v 2>&1 | head -1 | awk '{print $2}')"

# The service and packaging tests (tests/service, `make deb`): dpkg-deb and
# dpkg-shlibdeps (dpkg-dev), strip (binutils), lintian, systemd-analyze
# (systemd), man (man-db); useradd (passwd) for the `user:` test.
SERVICE_PKGS=(dpkg-dev binutils lintian systemd man-db passwd)
install_missing "${SERVICE_PKGS[@]}"

# The AF_XDP test (tests/xdp): `ip netns` and veth pairs (iproute2), and ethtool to turn
# off TX checksum offload on the client's end of the veth.
XDP_PKGS=(iproute2 ethtool)
install_missing "${XDP_PKGS[@]}"
echo "install-test-deps: $(lintian --version), $(systemd-analyze --version | head -1)"

# The dynamic update checks against peers (tests/update/differential.py, acme.py;
# scripts/bench-update.sh): nsupdate (bind9-utils) and knsupdate (knot-dnsutils) as clients,
# and for ACME end to end, offline: Debian's pebble (an ACME test server), certbot with its
# RFC 2136 plugin and lego (its rfc2136 provider), all pointed at loopback only; openssl makes
# the throwaway CA of pebble's HTTPS certificate.
UPDATE_PKGS=(bind9-utils knot-dnsutils pebble certbot python3-certbot-dns-rfc2136 lego openssl)
install_missing "${UPDATE_PKGS[@]}"
