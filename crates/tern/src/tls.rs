//! DNS over TLS in the binary: the certificate read at start (or the
//! self-signed one made in the state directory), its pin logged, and the
//! certificate and the client certificates' trust anchors (`tls.client-ca`,
//! mutual TLS on zone transfers) read again on `tern reload`. The TLS configuration itself
//! is `tern_server::tls::config`'s.

use std::sync::Arc;

use anyhow::Context;
use tern_server::tls::config::{self, Certificates, ClientRoots, Identity, Source};

use crate::config::{Config, TlsSection};

/// The identity `section` names: its PEM files, or the self-signed pair
/// of the state directory (made there the first time).
fn identity(section: &TlsSection, config: &Config) -> anyhow::Result<Identity> {
    match &section.files {
        Some((certificate, key)) => {
            Identity::from_files(certificate, key).context("tls.certificate, tls.key")
        }
        None => Identity::self_signed(config.state_directory.as_deref(), &host_name())
            .context("tls: the self-signed certificate"),
    }
}

/// The server's TLS configuration for `config`'s `tls:` section, and the
/// certificates a reload replaces; `None` without the section.
pub(crate) fn start(
    config: &Config,
) -> anyhow::Result<Option<(tern_server::TlsConfig, Arc<Certificates>)>> {
    let Some(section) = &config.tls else {
        return Ok(None);
    };
    // Mutual TLS is for zone transfers: queries are answered without a
    // client certificate (docs/decisions/0018).
    let roots = section
        .client_ca
        .as_deref()
        .map(config::client_roots)
        .transpose()
        .context("tls.client-ca")?;
    if let Some(path) = &section.client_ca {
        log::info!(
            "tls: zone transfers over TLS need a client certificate from {}",
            path.display()
        );
    }
    let clients = ClientRoots::new(roots).context("tls.client-ca")?;
    let identity = identity(section, config)?;
    match &identity.source {
        Source::Ephemeral => log::warn!(
            "tls: no certificate and no state-directory: a self-signed key for this run only, \
             its pin changes at each start"
        ),
        Source::SelfSigned(path) => log::info!("tls: self-signed certificate {}", path.display()),
        Source::Files { certificate, .. } => {
            log::info!("tls: certificate {}", certificate.display())
        }
    }
    log::info!(
        "tls: pin-sha256 {} (DNS over TLS on {})",
        identity.pin,
        section
            .listen
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let certificates = Certificates::new(identity);
    let server = config::server_config(
        Arc::clone(&certificates),
        &[config::ALPN_DOT],
        Arc::clone(&clients),
    )
    .context("tls")?;
    let tls = tern_server::TlsConfig {
        listen: section.listen.clone(),
        server,
        clients,
    };
    Ok(Some((tls, certificates)))
}

/// On reload: reads the certificate and the `client-ca` file `next`
/// names again and serves them to new handshakes. A failure keeps the
/// ones served.
pub(crate) fn reload(certificates: &Certificates, clients: &ClientRoots, next: &Config) {
    let Some(section) = &next.tls else {
        return;
    };
    let roots = section
        .client_ca
        .as_deref()
        .map(config::client_roots)
        .transpose()
        .and_then(|roots| clients.replace(roots));
    match roots {
        Ok(()) => match &section.client_ca {
            Some(path) => log::info!("tls: client certificates verified with {}", path.display()),
            None => log::info!("tls: no tls.client-ca, no client certificate asked"),
        },
        Err(err) => {
            log::error!("tls.client-ca: {err}; the client certificates' trust anchors are kept")
        }
    }
    match identity(section, next) {
        Ok(identity) => {
            let pin = identity.pin.clone();
            if pin != certificates.pin() || identity.source != certificates.current().source {
                log::info!("tls: new certificate served, pin-sha256 {pin}");
            }
            certificates.replace(identity);
        }
        Err(err) => log::error!("{err:#}; the certificate served is kept"),
    }
}

/// This host's name, for the self-signed certificate.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty() && name.len() < 254)
        .unwrap_or_else(|| "localhost".to_string())
}
