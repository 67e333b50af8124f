//! What the zone-level checks ([`crate::check`]) and the RRset TTL rule
//! ([`crate::ttl`]) report: a located [`Diagnostic`] of some [`Severity`].
//! A module of its own, so that both report without importing each other.

use std::fmt;

use tern_wire::name::Name;

use crate::Location;

//----------- Severity -------------------------------------------------------

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The zone must not be loaded.
    Error,
    /// The zone loads; the operator is told.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

//----------- Diagnostic -----------------------------------------------------

/// One finding of [`crate::check::check_zone`], located at the record that shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The record the finding is reported at.
    pub location: Location,
    /// What is wrong, starting with the owner name it concerns, e.g.
    /// `email.example.com.: another record exists beside CNAME`.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn new(severity: Severity, location: Location, owner: Name<'_>, what: &str) -> Self {
        Diagnostic {
            severity,
            location,
            message: format!("{owner}: {what}"),
        }
    }

    /// The diagnostic as `FILE:LINE:COL: error: MESSAGE`, given the name of
    /// the file its location points into.
    pub fn render(&self, file: &str) -> String {
        format!(
            "{file}:{}:{}: {}: {}",
            self.location.line, self.location.col, self.severity, self.message
        )
    }
}

impl fmt::Display for Diagnostic {
    /// `LINE:COL: error: MESSAGE`; see [`Diagnostic::render`] for the form
    /// with the file name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.location.line, self.location.col, self.severity, self.message
        )
    }
}
