//! The `proxy:` section: the PROXY protocol v2 listeners and the proxies
//! allowed to send headers to them (docs/decisions/0016).
//!
//! ```yaml
//! proxy:
//!   allow: ["127.0.0.1/32"]        # proxies whose headers are accepted
//!   listen: ["127.0.0.1:5354"]     # addresses that expect a header, UDP and TCP
//! ```

use std::net::SocketAddr;

use anyhow::bail;

use super::raw::{RawProxy, MAX_LISTEN};

/// The `proxy:` section, checked on its own: `listen` needs `allow` (or
/// every datagram and connection would be dropped).
pub(super) fn proxy_config(raw: RawProxy) -> anyhow::Result<tern_server::ProxyConfig> {
    let allow: Vec<_> = raw
        .allow
        .unwrap_or_default()
        .into_iter()
        .map(|prefix| prefix.0)
        .collect();
    let listen = raw.listen.map(|listen| listen.0).unwrap_or_default();
    if !listen.is_empty() && allow.is_empty() {
        bail!(
            "proxy.allow: name the proxies allowed to send PROXY headers (like \
             [\"127.0.0.1/32\"]); without any, proxy.listen would drop everything"
        );
    }
    Ok(tern_server::ProxyConfig { allow, listen })
}

/// The checks that need the rest of the configuration (run after the
/// command line's `--listen` and `--xdp` too): a proxied address is not
/// also in `listen`, the two lists together stay within [`MAX_LISTEN`],
/// and AF_XDP, which takes UDP to the `listen` ports on its interfaces
/// before any socket and knows nothing of PROXY headers, shares no port
/// with a proxied listener.
pub(super) fn check(
    proxy: &tern_server::ProxyConfig,
    listen: &[SocketAddr],
    xdp: &[String],
) -> anyhow::Result<()> {
    if let Some(both) = proxy.listen.iter().find(|address| listen.contains(address)) {
        bail!("proxy.listen: {both} is also in listen; an address is proxied or not");
    }
    if proxy.listen.len() + listen.len() > MAX_LISTEN {
        bail!("proxy.listen: listen and proxy.listen name more than {MAX_LISTEN} addresses");
    }
    if !xdp.is_empty() {
        if let Some(shared) = proxy
            .listen
            .iter()
            .find(|proxied| listen.iter().any(|plain| plain.port() == proxied.port()))
        {
            bail!(
                "proxy.listen: {shared} shares its port with a listen address that AF_XDP \
                 (xdp.interfaces) serves, and AF_XDP does not take PROXY headers; use \
                 another port for the proxied listener"
            );
        }
    }
    Ok(())
}
