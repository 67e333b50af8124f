//! `tern keys import ZONE FILES...`: existing DNSSEC keys (BIND's
//! `K*.key`/`.private`/`.state`, PKCS#8 PEM) into a signed zone's key
//! directory under the configuration's state directory
//! (`tern_zones::import`). The running server signs with them from the
//! zone's next load (`tern reload ZONE`).

use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::config::Config;

/// `tern keys import`.
#[derive(clap::Args, Debug)]
pub(crate) struct ImportArgs {
    /// The configuration file: the zone's `dnssec-policy` and the
    /// `state-directory` the keys go into.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The role of every key imported: ksk, zsk or csk (default: from the
    /// BIND .state file, else the DNSKEY flags: 256 a ZSK, 257 a KSK when
    /// a ZSK is there too, else a CSK). Required for PEM files.
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// The algorithm of PEM keys: ecdsap256sha256, ed25519 or rsasha256
    /// (BIND's files name theirs).
    #[arg(long, value_name = "ALGORITHM")]
    algorithm: Option<String>,
    /// The zone, e.g. example.com.
    zone: String,
    /// BIND's `K<zone>+<alg>+<tag>.key`, .private and .state files (any of
    /// a key's files names it), and PKCS#8 PEM files (.pem).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Imports the keys; prints each one written and what to do next.
pub(crate) fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let config = Config::from_file(&args.config)?;
    let origin = tern_zones::load::parse_origin(&args.zone).map_err(anyhow::Error::msg)?;
    let role = args
        .role
        .as_deref()
        .map(|role| match role.to_ascii_lowercase().as_str() {
            "ksk" => Ok(tern_dnssec::KeyRole::Ksk),
            "zsk" => Ok(tern_dnssec::KeyRole::Zsk),
            "csk" => Ok(tern_dnssec::KeyRole::Csk),
            _ => Err(anyhow::anyhow!(
                "--role: unknown role {role:?}; expected ksk, zsk or csk"
            )),
        })
        .transpose()?;
    let algorithm = args
        .algorithm
        .as_deref()
        .map(|name| {
            crate::config::value::parse_dnssec_algorithm(name)
                .map_err(|err| anyhow::anyhow!("--algorithm: {err}"))
        })
        .transpose()?;
    let lower: Box<[u8]> = origin.as_name().as_bytes().to_ascii_lowercase().into();
    let signing = config.signing.as_ref();
    let Some(policy) = signing.and_then(|signing| signing.policy(&lower)) else {
        anyhow::bail!(
            "zone {}: no dnssec-policy in {}: keys are imported for signed zones only",
            origin.as_name(),
            args.config.display()
        );
    };
    // A policy implies a state directory (the configuration checks it).
    let state_directory = signing
        .map(|signing| signing.state_directory.clone())
        .context("no state-directory")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("the clock is before 1970")?
        .as_secs();
    let written = tern_zones::import::import(
        &state_directory,
        origin.as_name(),
        &args.files,
        tern_zones::import::ImportOptions { role, algorithm },
        Some(policy.algorithm),
        now,
    )
    .map_err(anyhow::Error::msg)
    .with_context(|| format!("importing keys of {}", origin.as_name()))?;
    let state_owner = std::fs::metadata(&state_directory)
        .map(|meta| meta.uid())
        .ok();
    for (meta, path) in &written {
        println!(
            "{}: imported {} {} ({}) key tag {}: {}",
            origin.as_name(),
            match meta.role {
                tern_dnssec::KeyRole::Csk => "CSK",
                tern_dnssec::KeyRole::Ksk => "KSK",
                tern_dnssec::KeyRole::Zsk => "ZSK",
            },
            tern_zones::keys::algorithm_name(meta.algorithm),
            meta.algorithm.number(),
            meta.key_tag,
            path.display()
        );
        let owner = std::fs::metadata(path).map(|meta| meta.uid()).ok();
        if owner.is_some() && state_owner.is_some() && owner != state_owner {
            eprintln!(
                "tern: warning: {} belongs to uid {}, the state directory to uid {}: run \
                 `tern keys import` as the user tern serves as, or give it the file",
                path.display(),
                owner.unwrap_or_default(),
                state_owner.unwrap_or_default()
            );
        }
    }
    println!(
        "{}: signed with these keys from its next load: tern reload {}",
        origin.as_name(),
        origin.as_name()
    );
    Ok(ExitCode::SUCCESS)
}
