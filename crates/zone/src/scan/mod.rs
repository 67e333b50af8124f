//! The scanner: entries to records, directives, and defaults.
//!
//! For each entry the lexer yields, the scanner either runs a directive
//! (`$ORIGIN`, `$TTL`, `$INCLUDE`, `$GENERATE`) or reads a record, which
//! it hands to the caller's [`Sink`] as a borrowed [`RecordRef`]:
//! owner (or the previous owner when the line starts with a blank), TTL and
//! class in either order and both optional, the type, then the RDATA
//! through [`crate::rdata`].
//!
//! Defaults follow Knot and NSD: an omitted TTL is the `$TTL` value if one
//! was given, else [`Options::default_ttl`] (3600); an explicit TTL does not
//! become the default for later records (see the crate README).
//!
//! `$INCLUDE` recurses into the included file, at most
//! [`MAX_INCLUDE_DEPTH`] files deep; a file that is already being read
//! cannot be included again (a cycle). The included file starts with the
//! includer's origin (or the one given), owner and `$TTL`, and nothing it
//! changes leaks back.

pub(crate) mod generate;
pub(crate) mod lexer;
pub(crate) mod region;
pub(crate) mod split;

use std::path::PathBuf;

use tern_wire::name::NameBuf;
use tern_wire::types::{RClass, RType};

use crate::error::{Error, MAX_ERRORS};
use crate::rdata::{self, text, Fields, RdataError, MAX_RDATA_LEN};
use crate::{Include, Location, NoInclude, Options, RecordRef, Records, Sink};
use lexer::{EntryStart, Lexer, Token};

/// How many files deep `$INCLUDE` may nest (the top file is depth 1).
pub const MAX_INCLUDE_DEPTH: usize = 10;

/// Octets of text per record assumed when reserving room for records.
const MIN_RECORD_TEXT: usize = 16;

//----------- FileContext ----------------------------------------------------

/// The state of one file being read.
pub(crate) struct FileContext {
    /// Index into [`Scanner::files`].
    pub(crate) index: u32,
    /// The name used in messages.
    pub(crate) display: String,
    /// The path, for resolving `$INCLUDE`s.
    pub(crate) path: PathBuf,
    /// The identity, for cycle detection.
    pub(crate) identity: PathBuf,
    pub(crate) origin: NameBuf,
    pub(crate) last_owner: Option<NameBuf>,
    pub(crate) default_ttl: u32,
}

//----------- Scanner --------------------------------------------------------

/// Scans a zone and the files it includes.
pub(crate) struct Scanner<'s> {
    options: &'s Options,
    includer: &'s mut dyn Include,
    pub(crate) files: Vec<PathBuf>,
    sink: &'s mut dyn Sink,
    pub(crate) errors: Vec<Error>,
    pub(crate) truncated: bool,
    /// Identities of the files being read, outermost first.
    include_stack: Vec<PathBuf>,
    rdata: Vec<u8>,
    scratch: Vec<u8>,
}

/// An error while reading an entry, before it is given a file name.
type EntryResult = Result<(), RdataError>;

impl<'s> Scanner<'s> {
    pub(crate) fn new(
        options: &'s Options,
        includer: &'s mut dyn Include,
        sink: &'s mut dyn Sink,
    ) -> Self {
        Scanner {
            options,
            includer,
            files: Vec::new(),
            sink,
            errors: Vec::new(),
            truncated: false,
            include_stack: Vec::new(),
            rdata: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Registers a file and returns its index.
    pub(crate) fn add_file(&mut self, path: PathBuf) -> u32 {
        self.files.push(path);
        u32::try_from(self.files.len() - 1)
            .expect("fewer files than MAX_INCLUDE_DEPTH times entries")
    }

    /// How names are read in `context`.
    fn names<'c>(&self, context: &'c FileContext) -> text::NameRules<'c> {
        text::NameRules {
            origin: context.origin.as_name(),
            lenient: !self.options.strict_names,
        }
    }

    fn stopped(&self) -> bool {
        self.truncated
    }

    fn report(&mut self, context: &FileContext, line: u32, col: u32, message: String) {
        if self.errors.len() >= MAX_ERRORS {
            self.truncated = true;
            return;
        }
        self.errors.push(Error {
            file: context.display.clone(),
            line,
            col,
            message,
        });
    }

    /// Reads one file to its end (or until too many errors). The top file,
    /// when large, is read in parts on [`Options::threads`] threads where
    /// it can be cut ([`split`]); the records and errors are the same.
    pub(crate) fn scan_file(&mut self, data: &[u8], context: &mut FileContext) {
        self.include_stack.push(context.identity.clone());
        // At most one record per line (outside $GENERATE), and a record
        // takes at least a few octets of text: reserving spares the copies
        // of a growing vector; untouched capacity costs only address space.
        let lines = memchr::memchr_iter(b'\n', data).count();
        self.sink.reserve(lines.min(data.len() / MIN_RECORD_TEXT));
        let starts = if self.include_stack.len() == 1 {
            split::part_starts(data, self.options.threads)
        } else {
            Vec::new()
        };
        match starts.first() {
            Some(&head) => {
                self.scan_entries(&data[..head], 1, context);
                if !self.stopped() {
                    self.scan_parts(data, &starts, context);
                }
            }
            None => self.scan_entries(data, 1, context),
        }
        self.include_stack.pop();
    }

    /// Reads the entries of `data`, whose first line is `first_line`.
    fn scan_entries(&mut self, data: &[u8], first_line: u32, context: &mut FileContext) {
        let mut lexer = Lexer::new(data, first_line);
        while !self.stopped() {
            let start = lexer.begin_entry();
            if start == EntryStart::End {
                break;
            }
            if let Err(error) = self.entry(&mut lexer, start, context) {
                self.report(context, error.line, error.col, error.message);
                if error.structural {
                    break;
                }
                if let Err(error) = lexer.skip_entry() {
                    self.report(context, error.line, error.col, error.message.to_string());
                    break;
                }
            }
        }
    }

    /// Reads the parts of `data` starting at `starts` (see [`split`]), each
    /// on a thread of its own but the first, into lists of their own, then
    /// hands their records and errors on in file order.
    fn scan_parts(&mut self, data: &[u8], starts: &[usize], context: &FileContext) {
        // The line of each part's first byte.
        let mut first_lines = Vec::with_capacity(starts.len());
        let (mut line, mut counted) = (1u32, 0);
        for &start in starts {
            let newlines = memchr::memchr_iter(b'\n', &data[counted..start]).count();
            line = line.saturating_add(u32::try_from(newlines).unwrap_or(u32::MAX));
            counted = start;
            first_lines.push(line);
        }
        let options = self.options;
        let part = |index: usize| -> (Records, Vec<Error>, bool) {
            let end = starts.get(index + 1).copied().unwrap_or(data.len());
            let text = &data[starts[index]..end];
            let mut records = Records::new();
            let mut includer = NoInclude;
            let mut scanner = Scanner::new(options, &mut includer, &mut records);
            scanner.include_stack.push(context.identity.clone());
            let mut part_context = FileContext {
                index: context.index,
                display: context.display.clone(),
                path: context.path.clone(),
                identity: context.identity.clone(),
                origin: context.origin,
                last_owner: None,
                default_ttl: context.default_ttl,
            };
            scanner.scan_entries(text, first_lines[index], &mut part_context);
            let (errors, truncated) = (scanner.errors, scanner.truncated);
            (records, errors, truncated)
        };
        let results: Vec<(Records, Vec<Error>, bool)> = std::thread::scope(|scope| {
            let others: Vec<_> = (1..starts.len())
                .map(|index| scope.spawn(move || part(index)))
                .collect();
            let mut results = vec![part(0)];
            for other in others {
                // A part's reading does not panic on any input; if it did,
                // the panic is carried on here, as on one thread.
                match other.join() {
                    Ok(result) => results.push(result),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            results
        });
        for (records, errors, truncated) in results {
            if !self.sink.append(&records) {
                for record in records.iter() {
                    if let Err(message) = self.sink.record(record) {
                        let location = record.location;
                        self.report(context, location.line, location.col, message.to_string());
                    }
                }
            }
            for error in errors {
                if self.errors.len() >= MAX_ERRORS {
                    self.truncated = true;
                    break;
                }
                self.errors.push(error);
            }
            if truncated && self.errors.len() >= MAX_ERRORS {
                self.truncated = true;
            }
            if self.stopped() {
                break;
            }
        }
    }

    /// One entry: a directive or a record.
    fn entry(
        &mut self,
        lexer: &mut Lexer<'_>,
        start: EntryStart,
        context: &mut FileContext,
    ) -> EntryResult {
        let first = if start == EntryStart::Owner {
            lexer.first_token()?
        } else {
            lexer.next_token()?
        };
        let Some(first) = first else {
            return Ok(());
        };
        if start == EntryStart::Owner && !first.quoted && first.text.first() == Some(&b'$') {
            return self.directive(lexer, first, context);
        }
        let location = Location {
            file: context.index,
            line: first.line,
            col: first.col,
        };
        self.record(lexer, start, first, context, location)
    }

    /// A record whose first token is `first`.
    fn record(
        &mut self,
        lexer: &mut Lexer<'_>,
        start: EntryStart,
        first: Token<'_>,
        context: &mut FileContext,
        location: Location,
    ) -> EntryResult {
        let (owner, mut token) = if start == EntryStart::Owner {
            if first.quoted {
                context.last_owner = None;
                return Err(RdataError::at(&first, "quoted owner name"));
            }
            match text::parse_name(first.text, self.names(context)) {
                Ok(owner) => {
                    context.last_owner = Some(owner);
                    (owner, Fields::new(lexer, None).expect("record type")?)
                }
                Err(message) => {
                    context.last_owner = None;
                    return Err(RdataError::at(
                        &first,
                        format!("invalid owner name: {message}"),
                    ));
                }
            }
        } else {
            let owner = context.last_owner.ok_or_else(|| {
                RdataError::at(
                    &first,
                    "no previous owner to repeat (the line starts with a blank)",
                )
            })?;
            (owner, first)
        };

        let mut ttl = None;
        let mut class = None;
        for _ in 0..2 {
            if ttl.is_none() && !token.quoted && token.text.first().is_some_and(u8::is_ascii_digit)
            {
                let value = text::parse_ttl(token.text)
                    .map_err(|message| RdataError::at(&token, format!("invalid TTL: {message}")))?;
                ttl = Some(value);
            } else if class.is_none() && !token.quoted {
                match parse_class(token.text) {
                    Some(value) => class = Some((value, token)),
                    None => break,
                }
            } else {
                break;
            }
            token = Fields::new(lexer, None).expect("record type")?;
        }
        if let Some((value, class_token)) = class {
            if value != self.options.class {
                return Err(RdataError::at(
                    &class_token,
                    format!(
                        "class {value} does not match the zone class {}",
                        self.options.class
                    ),
                ));
            }
        }
        let rtype = parse_rtype(&token)?;
        let ttl = ttl.unwrap_or(context.default_ttl);

        self.rdata.clear();
        let mut fields = Fields::new(lexer, None);
        let names = self.names(context);
        rdata::parse(
            rtype,
            &mut fields,
            names,
            &mut self.rdata,
            &mut self.scratch,
        )?;
        if self.rdata.len() > MAX_RDATA_LEN {
            return Err(RdataError::at(
                &token,
                format!("RDATA of {} octets exceeds 65535", self.rdata.len()),
            ));
        }
        self.sink
            .record(RecordRef {
                owner: owner.as_name(),
                class: self.options.class,
                ttl,
                rtype,
                rdata: &self.rdata,
                location,
            })
            .map_err(|message| RdataError {
                line: location.line,
                col: location.col,
                message: message.to_string(),
                structural: false,
            })
    }

    //--- Directives

    fn directive(
        &mut self,
        lexer: &mut Lexer<'_>,
        name: Token<'_>,
        context: &mut FileContext,
    ) -> EntryResult {
        let mut fields = Fields::new(lexer, None);
        let directive = name.text.to_ascii_uppercase();
        match directive.as_slice() {
            b"$ORIGIN" => {
                let token = fields.expect("origin after $ORIGIN")?;
                let origin =
                    text::parse_name(token.text, self.names(context)).map_err(|message| {
                        RdataError::at(&token, format!("invalid origin: {message}"))
                    })?;
                fields.finish()?;
                context.origin = origin;
                Ok(())
            }
            b"$TTL" => {
                let token = fields.expect("TTL after $TTL")?;
                let ttl = text::parse_ttl(token.text).map_err(|message| {
                    RdataError::at(&token, format!("invalid $TTL: {message}"))
                })?;
                fields.finish()?;
                context.default_ttl = ttl;
                Ok(())
            }
            b"$INCLUDE" => self.include(fields, name, context),
            b"$GENERATE" => self.generate(fields, name, context),
            _ => Err(RdataError::at(
                &name,
                format!("unknown directive \"{}\"", name.display()),
            )),
        }
    }

    fn include(
        &mut self,
        mut fields: Fields<'_, '_>,
        name: Token<'_>,
        context: &mut FileContext,
    ) -> EntryResult {
        let file = fields.expect("file name after $INCLUDE")?;
        let mut target_bytes = Vec::new();
        text::decode_text(file.text, &mut target_bytes)
            .map_err(|message| RdataError::at(&file, message))?;
        let target = String::from_utf8(target_bytes)
            .map_err(|_| RdataError::at(&file, "file name is not UTF-8"))?;
        let origin = match fields.next()? {
            Some(token) => text::parse_name(token.text, self.names(context))
                .map_err(|message| RdataError::at(&token, format!("invalid origin: {message}")))?,
            None => context.origin,
        };
        fields.finish()?;
        if self.include_stack.len() >= MAX_INCLUDE_DEPTH {
            return Err(RdataError::at(
                &name,
                format!("$INCLUDE nested more than {MAX_INCLUDE_DEPTH} files deep"),
            ));
        }
        let included = self
            .includer
            .include(&context.path, &target)
            .map_err(|message| {
                RdataError::at(&file, format!("cannot include \"{target}\": {message}"))
            })?;
        if self.include_stack.contains(&included.identity) {
            return Err(RdataError::at(
                &file,
                format!("$INCLUDE cycle: \"{target}\" is already being read"),
            ));
        }
        let index = self.add_file(included.path.clone());
        let mut child = FileContext {
            index,
            display: included.path.display().to_string(),
            path: included.path,
            identity: included.identity,
            origin,
            last_owner: if origin == context.origin {
                context.last_owner
            } else {
                Some(origin)
            },
            default_ttl: context.default_ttl,
        };
        self.scan_file(&included.data, &mut child);
        Ok(())
    }

    fn generate(
        &mut self,
        mut fields: Fields<'_, '_>,
        name: Token<'_>,
        context: &mut FileContext,
    ) -> EntryResult {
        let range_token = fields.expect("range after $GENERATE")?;
        let range = generate::Range::parse(range_token.text)
            .map_err(|message| RdataError::at(&range_token, message))?;
        let mut templates: Vec<(Vec<u8>, bool)> = Vec::new();
        while let Some(token) = fields.next()? {
            templates.push((token.text.to_vec(), token.quoted));
        }
        if templates.len() < 3 {
            return Err(RdataError::at(
                &name,
                "$GENERATE needs a range, lhs, type and rhs",
            ));
        }
        let location = Location {
            file: context.index,
            line: name.line,
            col: name.col,
        };
        let mut line = Vec::new();
        for value in range.values() {
            line.clear();
            for (index, (template, quoted)) in templates.iter().enumerate() {
                if index > 0 {
                    line.push(b' ');
                }
                if *quoted {
                    line.push(b'"');
                }
                generate::expand(template, value, &mut line)
                    .map_err(|message| RdataError::at(&name, message))?;
                if *quoted {
                    line.push(b'"');
                }
            }
            let mut sub = Lexer::new(&line, name.line);
            sub.begin_entry();
            let first = sub
                .next_token()?
                .ok_or_else(|| RdataError::at(&name, "empty $GENERATE line"))?;
            self.record(&mut sub, EntryStart::Owner, first, context, location)
                .map_err(|error| {
                    RdataError::at(&name, format!("$GENERATE value {value}: {}", error.message))
                })?;
            if self.stopped() {
                break;
            }
        }
        Ok(())
    }
}

//----------- Helpers --------------------------------------------------------

/// A class mnemonic or `CLASSnnn`.
fn parse_class(text: &[u8]) -> Option<RClass> {
    if text.eq_ignore_ascii_case(b"IN") {
        return Some(RClass::IN);
    }
    if text.eq_ignore_ascii_case(b"ANY") {
        return Some(RClass::ANY);
    }
    if text.eq_ignore_ascii_case(b"NONE") {
        return Some(RClass::NONE);
    }
    RClass::from_text(text)
}

/// The record type; meta and query types are not allowed in a zone.
fn parse_rtype(token: &Token<'_>) -> Result<RType, RdataError> {
    let text = token.text;
    let fast = match text {
        b"A" | b"a" => Some(RType::A),
        b"NS" | b"ns" => Some(RType::NS),
        b"AAAA" | b"aaaa" => Some(RType::AAAA),
        b"CNAME" | b"cname" => Some(RType::CNAME),
        b"MX" | b"mx" => Some(RType::MX),
        b"TXT" | b"txt" => Some(RType::TXT),
        b"PTR" | b"ptr" => Some(RType::PTR),
        b"SOA" | b"soa" => Some(RType::SOA),
        b"DS" | b"ds" => Some(RType::DS),
        b"RRSIG" | b"rrsig" => Some(RType::RRSIG),
        b"NSEC" | b"nsec" => Some(RType::NSEC),
        _ => None,
    };
    let rtype = match fast.or_else(|| {
        if token.quoted {
            None
        } else {
            RType::from_text(text)
        }
    }) {
        Some(rtype) => rtype,
        None => {
            return Err(RdataError::at(
                token,
                format!("unknown record type \"{}\"", token.display()),
            ));
        }
    };
    if rtype.is_meta() {
        return Err(RdataError::at(
            token,
            format!("{rtype} is a meta type and cannot appear in a zone"),
        ));
    }
    Ok(rtype)
}
