//! `tern sign`: a zone file signed offline, as `tern serve` would sign
//! it, written as a zone file (issue 24).
//!
//! The zone must be in the configuration's `zones.list` with a
//! `dnssec-policy`; its keys are the server's (`STATE/keys/ORIGIN/`,
//! generated when the zone has none), used as the server's signing uses
//! them (`tern_zones::signing::sign_into`: the rollover steps due taken
//! and written, the rollover's key set, its CDS and CDNSKEY), and it is
//! signed on `dnssec.signing-threads` threads (`--threads` overrides). The zone file is read and checked as the server reads it;
//! the signed records are written as they are signed, in canonical order,
//! one per line, and are never held whole in memory. Knot's `kzonesign`
//! is the peer: it signs a configured zone with its KASP keys into a
//! file.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use tern_zone::check::Severity;
use tern_zone::{RecordRef, Records, Sink};

use crate::config::{Config, Overrides};

/// `tern sign`'s arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct SignArgs {
    /// YAML configuration file: the zone's `dnssec-policy`, the
    /// `state-directory` holding its keys, `dnssec.signing-threads`.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Threads that sign (default: `dnssec.signing-threads`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// Write the signed zone to FILE (through a temporary file renamed
    /// over it) instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Sign as at this Unix time (default: now).
    #[arg(long, value_name = "SECONDS")]
    time: Option<u64>,
    /// The zone's origin, as `zones.list` names it.
    origin: String,
    /// The zone file (default: the one `zones.list` names).
    file: Option<PathBuf>,
}

/// Signs the zone and writes it; a summary goes to standard error.
pub(crate) fn sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(&Overrides {
        config: Some(args.config.clone()),
        ..Overrides::default()
    })?;
    let origin = tern_zones::load::parse_origin(&args.origin).map_err(anyhow::Error::msg)?;
    let wire = origin.as_name().to_lower();
    let signing = config.signing.as_ref().with_context(|| {
        format!(
            "{}: no zone names a dnssec-policy (or no state-directory)",
            args.config.display()
        )
    })?;
    let policy = signing
        .policy(wire.as_bytes())
        .with_context(|| format!("zone {}: no dnssec-policy in zones.list", args.origin))?;
    let file = match &args.file {
        Some(file) => file.clone(),
        None => configured_file(&config, wire.as_bytes())
            .with_context(|| format!("zone {}: not in zones.list", args.origin))?,
    };
    let threads = args.threads.map_or(signing.threads, usize::from);
    let now = args.time.unwrap_or_else(tern_zones::unix_time);

    let started = Instant::now();
    let records = read_zone(origin.as_name(), &file, threads)?;
    let read = started.elapsed();
    let write = |out: &mut dyn std::io::Write| {
        write_signed(
            &records,
            &origin,
            policy,
            &signing.state_directory,
            now,
            threads,
            out,
        )
    };
    let (stats, written) = match &args.output {
        Some(path) => {
            let temporary = temporary_path(path);
            let mut file = std::fs::File::create(&temporary)
                .with_context(|| format!("creating {}", temporary.display()))?;
            let outcome = write(&mut file).and_then(|stats| {
                std::fs::rename(&temporary, path)
                    .with_context(|| format!("renaming to {}", path.display()))?;
                Ok(stats)
            });
            if outcome.is_err() {
                let _ = std::fs::remove_file(&temporary);
            }
            (outcome?, path.display().to_string())
        }
        None => (
            write(&mut std::io::stdout().lock())?,
            "standard output".to_string(),
        ),
    };
    eprintln!(
        "{}: {} records read in {:.2} s; {} records, {} signatures written to {} in {:.2} s \
         on {} thread(s)",
        origin.as_name(),
        tern_zone::RecordList::len(&records),
        read.as_secs_f64(),
        stats.records,
        stats.signatures,
        written,
        (started.elapsed() - read).as_secs_f64(),
        threads,
    );
    Ok(ExitCode::SUCCESS)
}

/// The file `zones.list` names for the zone `origin` (lowercased wire).
fn configured_file(config: &Config, origin: &[u8]) -> Option<PathBuf> {
    config
        .zone_sources()
        .listed
        .into_iter()
        .find(|(text, _)| {
            tern_zones::load::parse_origin(text)
                .is_ok_and(|name| name.as_name().to_lower().as_bytes() == origin)
        })
        .map(|(_, file)| file)
}

/// `path` with `.tmp` added to its file name.
fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// The zone file's records, read and checked as the server reads them
/// (its warnings on standard error), with each RRset's TTL settled. A
/// large file is read on the signing `threads`, as the server reads a
/// signed zone's file (`tern_zone::Options::threads`).
fn read_zone(
    origin: tern_wire::name::Name<'_>,
    path: &Path,
    threads: usize,
) -> anyhow::Result<Records> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut records = Records::new();
    let files = tern_zone::scan_bytes(
        &data,
        path,
        origin,
        &tern_zone::Options {
            threads,
            ..tern_zone::Options::default()
        },
        &mut tern_zone::FileInclude,
        &mut records,
    )
    .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    // The checks and the reading of the RRsets' TTLs, each a pass over
    // the whole zone before any signing, on two threads when there are.
    let check = || tern_zone::check::check_zone(origin, &records);
    let (diagnostics, ttls) = if threads > 1 {
        std::thread::scope(|scope| {
            let checking = std::thread::Builder::new()
                .name("tern-check".to_string())
                .spawn_scoped(scope, check);
            let ttls = tern_zone::ttl::RrsetTtls::of(&records);
            let diagnostics = match checking {
                Ok(checking) => checking
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => check(),
            };
            (diagnostics, ttls)
        })
    } else {
        (check(), tern_zone::ttl::RrsetTtls::of(&records))
    };
    let mut failed = 0;
    for diagnostic in diagnostics {
        let file = files
            .get(diagnostic.location.file as usize)
            .map_or(path, PathBuf::as_path);
        eprintln!("{}", diagnostic.render(&file.display().to_string()));
        if diagnostic.severity == Severity::Error {
            failed += 1;
        }
    }
    if failed > 0 {
        anyhow::bail!("{}: {failed} error(s)", path.display());
    }
    tern_zone::ttl::settle_ttls_with(&mut records, &ttls);
    Ok(records)
}

/// Signs `records` and writes the signed zone to `out`, buffered.
fn write_signed(
    records: &Records,
    origin: &tern_wire::name::NameBuf,
    policy: &tern_zones::signing::Policy,
    state_directory: &Path,
    now: u64,
    threads: usize,
    out: impl std::io::Write,
) -> anyhow::Result<tern_dnssec::SignStats> {
    let mut text = TextSink {
        out: std::io::BufWriter::with_capacity(1 << 16, out),
        line: String::new(),
        error: None,
    };
    let signed = tern_zones::signing::sign_into(
        origin.as_name(),
        records,
        policy,
        state_directory,
        now,
        None,
        threads,
        &mut text,
    );
    if let Some(error) = text.error.take() {
        return Err(error).context("writing the signed zone");
    }
    let stats = signed.map_err(anyhow::Error::msg)?.zone;
    text.out.flush().context("writing the signed zone")?;
    Ok(stats)
}

/// Writes each record handed to it as one line of a zone file:
/// `owner<TAB>TTL<TAB>CLASS<TAB>TYPE<TAB>RDATA`, as `tern dump` does.
struct TextSink<W: std::io::Write> {
    out: W,
    line: String,
    /// The first write error; the signing stops at it.
    error: Option<std::io::Error>,
}

impl<W: std::io::Write> Sink for TextSink<W> {
    fn record(&mut self, record: RecordRef<'_>) -> Result<(), &'static str> {
        self.line.clear();
        let _ = write!(
            self.line,
            "{}\t{}\t{}\t{}\t",
            record.owner, record.ttl, record.class, record.rtype
        );
        tern_zone::print::write_rdata(record.rtype, record.rdata, &mut self.line);
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes()).map_err(|error| {
            self.error = Some(error);
            "cannot write the signed zone"
        })
    }
}
