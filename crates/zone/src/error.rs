//! Located errors: every problem in a zone file is reported as
//! `file:line:col: what is wrong`.
//!
//! A zone file is operator input, not network input, so messages may carry
//! the offending text (an owned `String`) to name the fix. The scanner keeps
//! going after a record error (it skips to the next entry, as Knot and NSD
//! do) and collects up to [`MAX_ERRORS`] errors before it stops.

use core::fmt;

/// The most errors collected for one zone before scanning stops; a file
/// that is not a zone file at all should not produce a million lines.
pub const MAX_ERRORS: usize = 100;

//----------- Error ----------------------------------------------------------

/// One problem in a zone file, with its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The file, as it was named when opened or included.
    pub file: String,
    /// Line number, from 1.
    pub line: u32,
    /// Column number (byte offset in the line plus one), from 1.
    pub col: u32,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

impl std::error::Error for Error {}

//----------- Errors ---------------------------------------------------------

/// All errors found in a zone (at most [`MAX_ERRORS`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Errors {
    /// The errors, in the order found.
    pub errors: Vec<Error>,
    /// Whether scanning stopped early because [`MAX_ERRORS`] was reached.
    pub truncated: bool,
}

impl Errors {
    /// The first error, if any.
    pub fn first(&self) -> Option<&Error> {
        self.errors.first()
    }
}

impl fmt::Display for Errors {
    /// One error per line; a last line says if more were not reported.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        if self.truncated {
            write!(f, "\n(stopped after {MAX_ERRORS} errors)")?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_file_line_col_message() {
        let error = Error {
            file: "zones/example.com.zone".into(),
            line: 12,
            col: 7,
            message: "unknown record type \"AAA\"".into(),
        };
        assert_eq!(
            error.to_string(),
            "zones/example.com.zone:12:7: unknown record type \"AAA\""
        );
    }
}
