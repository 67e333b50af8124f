//! The tern(8) manual page, generated from the command-line definition
//! (`tern manpage`, hidden; `make deb` installs its output): clap_mangen
//! renders the name, synopsis and options, then each subcommand's synopsis
//! and options as a subsection of COMMANDS (one page for the whole tool,
//! not one per subcommand), then the signals and files a service
//! administrator needs.

use std::io::{self, Write};

use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;

/// The manual section: system administration commands (daemons).
const SECTION: &str = "8";

/// Writes the page as roff to `out`.
pub(crate) fn render(command: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    let mut command = command;
    command.build();
    let man = Man::new(command.clone())
        .section(SECTION)
        .manual("System Administration");
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;

    let mut commands = Roff::new();
    commands.control("SH", ["COMMANDS"]);
    commands.to_writer(out)?;
    for sub in command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
    {
        let name = format!("tern {}", sub.get_name());
        let mut heading = Roff::new();
        heading.control("SS", [name.as_str()]);
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            heading.text([roman(about.to_string())]);
        }
        heading.to_writer(out)?;
        let sub_man = Man::new(sub.clone().bin_name(name));
        // clap_mangen writes each part as a section (`.SH`); here they are
        // paragraphs of this command's subsection.
        let mut part = Vec::new();
        sub_man.render_synopsis_section(&mut part)?;
        if sub.get_arguments().any(|arg| !arg.is_hide_set()) {
            sub_man.render_options_section(&mut part)?;
        }
        let part = String::from_utf8_lossy(&part)
            .replace(".SH SYNOPSIS\n", ".PP\n")
            .replace(".SH OPTIONS\n", ".PP\n");
        out.write_all(part.as_bytes())?;
    }

    let mut extra = Roff::new();
    extra.control("SH", ["SIGNALS"]);
    for (signal, what) in [
        ("SIGHUP", "re-read the configuration and every zone; a zone that fails to load keeps its previous version"),
        ("SIGTERM, SIGINT", "stop: the cores finish the queries in flight, within two seconds"),
        ("SIGUSR1", "log the per-core counters"),
    ] {
        extra.control("TP", []).text([bold(signal)]).text([roman(what)]);
    }
    extra.control("SH", ["FILES"]);
    for (file, what) in [
        ("/etc/tern/tern.yaml", "the configuration the packaged service reads (every key: /usr/share/doc/tern/config.md)"),
        ("/etc/tern/zones", "its zone files, NAME.zone for the zone NAME"),
        ("/var/lib/tern", "received zones, their timers and IXFR histories (state-directory)"),
        ("/run/tern/tern.sock", "the control socket that tern stats reads"),
    ] {
        extra.control("TP", []).text([bold(file)]).text([roman(what)]);
    }
    extra.control("SH", ["SEE ALSO"]);
    extra.text([roman("systemctl(1), systemd.service(5), dig(1)")]);
    extra.to_writer(out)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_page_lists_every_command_and_its_options() {
        let mut out = Vec::new();
        render(crate::Cli::command(), &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(page.contains(".TH tern 8"), "{page}");
        for needle in [
            "tern serve",
            "tern check",
            "tern stats",
            "\\-\\-listen",
            "\\-\\-config",
            "SIGHUP",
            "/etc/tern/tern.yaml",
        ] {
            assert!(page.contains(needle), "{needle} missing from\n{page}");
        }
        assert!(!page.contains("manpage"), "the hidden command is listed");
    }
}
