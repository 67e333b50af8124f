//! The tokenizer: bytes of one file to tokens of one entry at a time.
//!
//! An *entry* is a logical line of RFC 1035 section 5.1: a physical line, or
//! several joined by parentheses. Tokens are borrowed slices of the input,
//! with escapes still in place (the consumer decodes them, because what an
//! escape means depends on the field: a name, a character-string, a list).
//!
//! Rules:
//! - blanks are space, tab and carriage return; a newline ends the entry
//!   unless a `(` is open;
//! - `;` starts a comment that runs to the end of the physical line;
//! - `(` and `)` join lines; nesting them is an error (as in Knot);
//! - `"` starts a quoted token that may span lines and ends at the next
//!   unescaped `"`;
//! - any other byte starts a word that ends at a blank, newline, `;`, `(` or
//!   `)`; a backslash escapes the byte after it (so `\ ` and `\;` stay in the
//!   word), and a `"` right after `=` opens a quoted part inside the word
//!   (SvcParams: `alpn="h2,h3"`).
//!
//! Bound: every byte is examined a constant number of times, so a file is
//! tokenized in time linear in its length, however long its lines are.

use memchr::memchr;

//----------- Token ----------------------------------------------------------

/// One token: its raw bytes (between the quotes for a quoted token) and its
/// position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token<'a> {
    /// The bytes, escapes not decoded.
    pub(crate) text: &'a [u8],
    /// Whether the token was written in double quotes.
    pub(crate) quoted: bool,
    /// Line of the first byte, from 1.
    pub(crate) line: u32,
    /// Column of the first byte, from 1.
    pub(crate) col: u32,
}

impl Token<'_> {
    /// Whether this is the unquoted RFC 3597 marker `\#`.
    pub(crate) fn is_generic_marker(&self) -> bool {
        !self.quoted && self.text == b"\\#"
    }

    /// The text for messages, lossily decoded and shortened.
    pub(crate) fn display(&self) -> String {
        /// Longest token text quoted back in a message.
        const MAX_SHOWN: usize = 64;
        let shown = &self.text[..self.text.len().min(MAX_SHOWN)];
        let mut text = String::from_utf8_lossy(shown).into_owned();
        if self.text.len() > MAX_SHOWN {
            text.push_str("...");
        }
        text
    }
}

//----------- LexError -------------------------------------------------------

/// A structural error (parentheses, quotes). The scanner stops the file on
/// these, as Knot does: what follows cannot be split into entries reliably.
#[derive(Clone, Debug)]
pub(crate) struct LexError {
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) message: &'static str,
    /// Whether the file cannot be read further (parentheses, an unclosed
    /// quote); otherwise only the current entry is lost.
    pub(crate) fatal: bool,
}

//----------- EntryStart -----------------------------------------------------

/// How an entry begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryStart {
    /// The entry starts in column 1: its first token is an owner or a
    /// directive.
    Owner,
    /// The entry starts with a blank: the owner is omitted.
    Blank,
    /// No more entries.
    End,
}

//----------- Lexer ----------------------------------------------------------

/// Byte classes for the word scanner.
const CLASS_WORD: u8 = 0;
const CLASS_END: u8 = 1; // blank, newline, ';', '(' or ')'
const CLASS_BACKSLASH: u8 = 2;
const CLASS_QUOTE: u8 = 3;

/// For each byte, what it does inside an unquoted word.
static WORD_CLASS: [u8; 256] = {
    let mut table = [CLASS_WORD; 256];
    table[b' ' as usize] = CLASS_END;
    table[b'\t' as usize] = CLASS_END;
    table[b'\r' as usize] = CLASS_END;
    table[b'\n' as usize] = CLASS_END;
    table[b';' as usize] = CLASS_END;
    table[b'(' as usize] = CLASS_END;
    table[b')' as usize] = CLASS_END;
    table[b'\\' as usize] = CLASS_BACKSLASH;
    table[b'"' as usize] = CLASS_QUOTE;
    table
};

/// The tokenizer over one file's bytes.
pub(crate) struct Lexer<'a> {
    data: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
    /// Where the open parenthesis is, if one is open.
    open_paren: Option<(u32, u32)>,
    /// Whether the current entry has ended (newline outside parentheses).
    entry_done: bool,
    /// Where the last entry ended (before its newline), for "missing ..."
    /// errors.
    entry_end: (u32, u32),
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `data`, counting lines from `first_line`.
    pub(crate) fn new(data: &'a [u8], first_line: u32) -> Self {
        Lexer {
            data,
            pos: 0,
            line: first_line,
            line_start: 0,
            open_paren: None,
            entry_done: true,
            entry_end: (first_line, 1),
        }
    }

    /// The current position (line, column).
    pub(crate) fn here(&self) -> (u32, u32) {
        (self.line, self.col_at(self.pos))
    }

    /// Where a missing field would have been: the end of the entry if it
    /// has ended, else the current position.
    pub(crate) fn end_of_entry(&self) -> (u32, u32) {
        if self.entry_done {
            self.entry_end
        } else {
            self.here()
        }
    }

    /// The first token of an entry that starts in column 1. A quote there
    /// is part of a (bad) owner name, not the start of a quoted string, so
    /// that one stray quote costs one entry and not the rest of the file.
    pub(crate) fn first_token(&mut self) -> Result<Option<Token<'a>>, LexError> {
        if self.data.get(self.pos) == Some(&b'"') {
            return self.word().map(Some);
        }
        self.next_token()
    }

    fn col_at(&self, pos: usize) -> u32 {
        // Columns beyond u32 are clamped: a 4 GB line is not a zone.
        u32::try_from(pos.saturating_sub(self.line_start) + 1).unwrap_or(u32::MAX)
    }

    fn newline(&mut self) {
        self.line = self.line.saturating_add(1);
        self.line_start = self.pos;
    }

    /// Skips blank lines and comment lines, and says how the next entry
    /// starts. Call only between entries.
    pub(crate) fn begin_entry(&mut self) -> EntryStart {
        loop {
            let Some(&byte) = self.data.get(self.pos) else {
                return EntryStart::End;
            };
            match byte {
                b'\n' => {
                    self.pos += 1;
                    self.newline();
                }
                b';' => self.skip_comment(),
                b' ' | b'\t' | b'\r' => {
                    let start = self.pos;
                    while matches!(self.data.get(self.pos), Some(b' ' | b'\t' | b'\r')) {
                        self.pos += 1;
                    }
                    match self.data.get(self.pos) {
                        None | Some(b'\n' | b';') => continue,
                        Some(_) => {
                            let _ = start;
                            self.entry_done = false;
                            return EntryStart::Blank;
                        }
                    }
                }
                _ => {
                    self.entry_done = false;
                    return EntryStart::Owner;
                }
            }
        }
    }

    fn skip_comment(&mut self) {
        match memchr(b'\n', &self.data[self.pos..]) {
            Some(offset) => self.pos += offset,
            None => self.pos = self.data.len(),
        }
    }

    /// The next token of the current entry, or `None` at its end.
    pub(crate) fn next_token(&mut self) -> Result<Option<Token<'a>>, LexError> {
        if self.entry_done {
            return Ok(None);
        }
        loop {
            let Some(&byte) = self.data.get(self.pos) else {
                self.entry_end = self.here();
                self.entry_done = true;
                if let Some((line, col)) = self.open_paren.take() {
                    return Err(LexError {
                        line,
                        col,
                        message: "unclosed parenthesis",
                        fatal: true,
                    });
                }
                return Ok(None);
            };
            match byte {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => {
                    if self.open_paren.is_none() {
                        self.entry_end = self.here();
                        self.entry_done = true;
                        self.pos += 1;
                        self.newline();
                        return Ok(None);
                    }
                    self.pos += 1;
                    self.newline();
                }
                b';' => self.skip_comment(),
                b'(' => {
                    if self.open_paren.is_some() {
                        let (line, col) = self.here();
                        return Err(LexError {
                            line,
                            col,
                            message: "nested parentheses",
                            fatal: true,
                        });
                    }
                    self.open_paren = Some(self.here());
                    self.pos += 1;
                }
                b')' => {
                    if self.open_paren.is_none() {
                        let (line, col) = self.here();
                        return Err(LexError {
                            line,
                            col,
                            message: "closing parenthesis without an opening one",
                            fatal: true,
                        });
                    }
                    self.open_paren = None;
                    self.pos += 1;
                }
                b'"' => return self.quoted().map(Some),
                _ => return self.word().map(Some),
            }
        }
    }

    /// A quoted token; `pos` is at the opening quote.
    fn quoted(&mut self) -> Result<Token<'a>, LexError> {
        let (line, col) = self.here();
        self.pos += 1;
        let start = self.pos;
        let end = self.skip_quoted().ok_or(LexError {
            line,
            col,
            message: "unterminated quoted string",
            fatal: true,
        })?;
        if self
            .data
            .get(self.pos)
            .is_some_and(|&byte| WORD_CLASS[byte as usize] != CLASS_END)
        {
            let (line, col) = self.here();
            return Err(LexError {
                line,
                col,
                message: "missing blank after quoted string",
                fatal: false,
            });
        }
        Ok(Token {
            text: &self.data[start..end],
            quoted: true,
            line,
            col,
        })
    }

    /// Skips to the closing quote (counting newlines on the way) and returns
    /// the position of the quote; `pos` ends after it.
    fn skip_quoted(&mut self) -> Option<usize> {
        loop {
            let rest = &self.data[self.pos..];
            let offset = memchr::memchr3(b'"', b'\\', b'\n', rest)?;
            self.pos += offset;
            match self.data[self.pos] {
                b'"' => {
                    let end = self.pos;
                    self.pos += 1;
                    return Some(end);
                }
                b'\\' => {
                    self.pos += 1;
                    if self.data.get(self.pos) == Some(&b'\n') {
                        self.pos += 1;
                        self.newline();
                    } else if self.pos < self.data.len() {
                        self.pos += 1;
                    }
                }
                _ => {
                    self.pos += 1;
                    self.newline();
                }
            }
        }
    }

    /// An unquoted word; `pos` is at its first byte.
    fn word(&mut self) -> Result<Token<'a>, LexError> {
        let (line, col) = self.here();
        let start = self.pos;
        while let Some(&byte) = self.data.get(self.pos) {
            match WORD_CLASS[byte as usize] {
                CLASS_WORD => self.pos += 1,
                CLASS_END => break,
                CLASS_BACKSLASH => {
                    // A backslash before a newline escapes nothing: the
                    // word ends there, and the dangling backslash is an
                    // error for whoever decodes the word.
                    self.pos += 1;
                    if self.data.get(self.pos).is_some_and(|&byte| byte != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => {
                    // A quote right after '=' opens a quoted value; anywhere
                    // else it is an ordinary (and later rejected) byte.
                    let after_equals = self.pos > start && self.data[self.pos - 1] == b'=';
                    self.pos += 1;
                    if after_equals {
                        let (qline, qcol) = (self.line, self.col_at(self.pos - 1));
                        self.skip_quoted().ok_or(LexError {
                            line: qline,
                            col: qcol,
                            message: "unterminated quoted string",
                            fatal: true,
                        })?;
                    }
                }
            }
        }
        Ok(Token {
            text: &self.data[start..self.pos],
            quoted: false,
            line,
            col,
        })
    }

    /// Consumes the rest of the current entry. Fatal errors met on the way
    /// are returned (the caller stops the file on them); others are part of
    /// the entry being thrown away.
    pub(crate) fn skip_entry(&mut self) -> Result<(), LexError> {
        loop {
            match self.next_token() {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(()),
                Err(error) if !error.fatal => {}
                Err(error) => return Err(error),
            }
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(lexer: &mut Lexer<'_>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(token) = lexer.next_token().unwrap() {
            let text = String::from_utf8_lossy(token.text).into_owned();
            out.push(if token.quoted {
                format!("\"{text}\"")
            } else {
                text
            });
        }
        out
    }

    #[test]
    fn entries_parentheses_comments_quotes() {
        let data = b"a 1 IN TXT ( \"x y\" ; c\n  z\\ w ) ; end\n\n  ; only comment\n\tA 1.2.3.4\n";
        let mut lexer = Lexer::new(data, 1);
        assert_eq!(lexer.begin_entry(), EntryStart::Owner);
        assert_eq!(
            entry(&mut lexer),
            ["a", "1", "IN", "TXT", "\"x y\"", "z\\ w"]
        );
        assert_eq!(lexer.begin_entry(), EntryStart::Blank);
        let (line, _) = lexer.here();
        assert_eq!(line, 5);
        assert_eq!(entry(&mut lexer), ["A", "1.2.3.4"]);
        assert_eq!(lexer.begin_entry(), EntryStart::End);
    }

    #[test]
    fn quoted_value_inside_word() {
        let mut lexer = Lexer::new(b"x alpn=\"h2 h3\" key=\"a\\\"b\"\n", 1);
        lexer.begin_entry();
        assert_eq!(entry(&mut lexer), ["x", "alpn=\"h2 h3\"", "key=\"a\\\"b\""]);
    }

    #[test]
    fn structural_errors() {
        let mut lexer = Lexer::new(b"a ((b))\n", 1);
        lexer.begin_entry();
        lexer.next_token().unwrap();
        let error = lexer.next_token().unwrap_err();
        assert_eq!(
            (error.line, error.col, error.message),
            (1, 4, "nested parentheses")
        );
        let mut lexer = Lexer::new(b"a (\nb\n", 1);
        lexer.begin_entry();
        assert!(lexer.skip_entry().is_err());
        let mut lexer = Lexer::new(b"a \"b\n", 1);
        lexer.begin_entry();
        lexer.next_token().unwrap();
        assert_eq!(
            lexer.next_token().unwrap_err().message,
            "unterminated quoted string"
        );
    }
}
