//! Reading only the part of a zone file that changed (issue 24: a signed
//! zone's reload costs the change, not the file).
//!
//! Two versions of a file are compared byte for byte ([`common_prefix`],
//! [`common_suffix`], [`changed_region_of`]): their common prefix and
//! suffix are the same text, so the records read from them are the same,
//! but for what the parser carries from one entry to the next. The bytes
//! between (one region in each file) are widened to whole entries read
//! with exactly the state a whole reading has there:
//!
//! - the region lies in the file's tail ([`super::split::tail_start`]):
//!   after the last `(`, `)`, `"`, `\` or `$`, so no directive, no
//!   parenthesis, no quoted string, no escape reaches into it or out of
//!   it, and the origin and `$TTL` there are what the part before left
//!   (read again here, [`MAX_HEAD_LEN`] octets at most);
//! - it starts at a line that begins with an owner name (the previous
//!   owner is not carried in), and ends where such a line starts or at
//!   the end of the file (the next entry does not take an owner from it).
//!
//! Each region is then read alone ([`scan_region`]). Anything else (a
//! change before the tail, `$INCLUDE` or `$GENERATE` there, regions past
//! the caller's bound, an error in either region) is `None`: the caller
//! reads the file whole.
//!
//! Bound: a comparison of the two files from each end, reverse searches for
//! the special bytes, line walks out of the region's ends, a count of the
//! newlines before the region, and a reading of the head and the region.

use std::ops::Range;
use std::path::Path;

use memchr::{memchr, memrchr};
use tern_wire::name::Name;

use super::split::{owner_line, tail_start};
use super::{FileContext, Scanner};
use crate::{NoInclude, Options, RecordRef, Sink};

/// The longest part of a file before its tail that [`scan_region`] reads
/// again for the origin and `$TTL` at the region; past it, `None`.
pub const MAX_HEAD_LEN: usize = 1 << 20;

/// Where two versions of a file differ, widened to whole entries (see the
/// module documentation): `start..old_end` of the old file and
/// `start..new_end` of the new one, the rest of the two the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangedRegion {
    /// Where the region starts in both.
    pub start: usize,
    /// Where it ends in the old file.
    pub old_end: usize,
    /// Where it ends in the new one.
    pub new_end: usize,
}

impl ChangedRegion {
    /// The region in the old file.
    pub fn in_old(&self) -> Range<usize> {
        self.start..self.old_end
    }

    /// The region in the new file.
    pub fn in_new(&self) -> Range<usize> {
        self.start..self.new_end
    }
}

/// The old version of a file told by how it differs from the new one: the
/// new file's first `prefix` octets, then `middle`, then the new file's
/// last `suffix` octets. What a reload needs of the text it read before
/// when it compared the two without holding the old one whole.
#[derive(Clone, Copy, Debug)]
pub struct OldText<'a> {
    /// The octets both files start with (not necessarily all of them).
    pub prefix: usize,
    /// The old file's octets between.
    pub middle: &'a [u8],
    /// The octets both files end with (not necessarily all of them).
    pub suffix: usize,
}

impl OldText<'_> {
    /// The old file's length.
    pub fn len(&self) -> usize {
        self.prefix + self.middle.len() + self.suffix
    }

    /// Whether the old file was empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the two parts told alike fit in `new`.
    fn fits(&self, new: &[u8]) -> bool {
        self.prefix
            .checked_add(self.suffix)
            .is_some_and(|both| both <= new.len())
    }

    /// The old file's octet at `at` (`new`: the new file).
    fn get(&self, new: &[u8], at: usize) -> Option<u8> {
        if at < self.prefix {
            return new.get(at).copied();
        }
        if let Some(&byte) = self.middle.get(at - self.prefix) {
            return Some(byte);
        }
        let from_end = self.len().checked_sub(at).filter(|&n| n > 0)?;
        new.len()
            .checked_sub(from_end)
            .and_then(|at| new.get(at).copied())
    }

    /// [`owner_line`] in the old file.
    fn owner_line(&self, new: &[u8], at: usize) -> bool {
        (at == 0 || self.get(new, at - 1) == Some(b'\n'))
            && self
                .get(new, at)
                .is_some_and(|byte| !matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b';'))
    }

    /// The old file's octets in `region` (of [`changed_region_of`] with
    /// this text and `new`), in three slices, not copied: the new file's
    /// before the middle, the middle, the new file's after.
    fn region_parts<'n>(&'n self, new: &'n [u8], region: &ChangedRegion) -> Option<[&'n [u8]; 3]> {
        if !self.fits(new)
            || region.start > self.prefix
            || region.old_end < self.len() - self.suffix
        {
            return None;
        }
        let after = region.old_end - (self.len() - self.suffix);
        let from = new.len() - self.suffix;
        Some([
            new.get(region.start..self.prefix)?,
            self.middle,
            new.get(from..from.checked_add(after)?)?,
        ])
    }

    /// The old file's octets in `region` (of [`changed_region_of`] with
    /// this text and `new`), copied. Bound: the region's length.
    pub fn region_bytes(&self, new: &[u8], region: &ChangedRegion) -> Option<Vec<u8>> {
        let parts = self.region_parts(new, region)?;
        Some(parts.concat())
    }
}

/// The region where the old file `old` (told by its differences from
/// `new`) and `new` differ, widened to entries that can be read apart (see
/// the module documentation); `None` when it cannot be, or when it is
/// longer than `max_len` octets in either file. Bound: line walks out of
/// the region's ends, a search of the old region for special octets, and
/// a backward search of `new` from its end for its last special octet
/// (`tail_start`, once the region fits `max_len`): nearly the whole file
/// when they all sit at its top, as `$TTL` and a SOA's `(` usually do, so
/// this grows with the file, not the change. The comparison is the
/// caller's.
pub fn changed_region_of(old: &OldText<'_>, new: &[u8], max_len: usize) -> Option<ChangedRegion> {
    if !old.fits(new) {
        return None;
    }
    let (prefix, suffix) = (old.prefix, old.suffix);
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    // Back to the start of a line that begins with an owner name in both
    // (before `prefix` the two are the same).
    let mut start = memrchr(b'\n', &new[..prefix]).map_or(0, |at| at + 1);
    while start > 0 && !(old.owner_line(new, start) && owner_line(new, start)) {
        start = memrchr(b'\n', &new[..start - 1]).map_or(0, |at| at + 1);
    }
    // On to the start of such a line in both, or the end of both (after
    // the two ends the files are the same, at the same distances).
    let mut shift = 0;
    loop {
        let (o, n) = (old_end + shift, new_end + shift);
        if n == new.len() || (old.owner_line(new, o) && owner_line(new, n)) {
            break;
        }
        shift += memchr(b'\n', &new[n..]).map_or(new.len() - n, |at| at + 1);
    }
    let region = ChangedRegion {
        start,
        old_end: old_end + shift,
        new_end: new_end + shift,
    };
    // The new file's tail holds the region; the old one's too when the
    // old region has no special octet (the rest of the old file is the
    // new one's, at the same distance from the region).
    let new_fits =
        region.new_end - start <= max_len && tail_start(new).is_some_and(|tail| tail <= start);
    if !new_fits || region.old_end - start > max_len {
        return None;
    }
    let old_region = old.region_parts(new, &region)?;
    (!old_region.iter().any(|part| has_special(part))).then_some(region)
}

/// Whether `data` holds an octet that may carry a reading's state across
/// lines ([`tail_start`]'s).
fn has_special(data: &[u8]) -> bool {
    memchr::memchr3(b'(', b')', b'"', data).is_some()
        || memchr::memchr2(b'\\', b'$', data).is_some()
}

/// How many octets `a` and `b` start with alike.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let shorter = a.len().min(b.len());
    let mut at = 0;
    // Blocks compared whole (the library's comparison), then octets.
    while at + BLOCK <= shorter && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..shorter]
        .iter()
        .zip(&b[at..shorter])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many octets `a` and `b` end with alike.
pub fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let shorter = a.len().min(b.len());
    let (a_len, b_len) = (a.len(), b.len());
    let mut at = 0;
    while at + BLOCK <= shorter
        && a[a_len - at - BLOCK..a_len - at] == b[b_len - at - BLOCK..b_len - at]
    {
        at += BLOCK;
    }
    at + a[..a_len - at]
        .iter()
        .rev()
        .zip(b[..b_len - at].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// A sink that keeps nothing: the head is read for its state only.
struct Nothing;

impl Sink for Nothing {
    fn record(&mut self, _record: RecordRef<'_>) -> Result<(), &'static str> {
        Ok(())
    }
}

/// Reads the entries of `data[range]` (a region of [`changed_region_of`]),
/// handing `sink` the records a whole reading of `data` (as
/// [`crate::scan_bytes`], top file `file_name`) gives there, at the same
/// locations; the line of the region's start. `None` (and maybe some
/// records handed) when the region cannot be read apart (see the module
/// documentation: before the tail, not at an owner line's start, a head
/// longer than [`MAX_HEAD_LEN`] or one that includes a file) or either
/// the head or the region has an error: the caller reads the file whole.
pub fn scan_region(
    data: &[u8],
    range: Range<usize>,
    file_name: &Path,
    origin: Name<'_>,
    options: &Options,
    sink: &mut dyn Sink,
) -> Option<u32> {
    let tail = tail_start(data)?;
    let ends_well = range.end == data.len() || owner_line(data, range.end);
    let starts_well = range.start == range.end || owner_line(data, range.start);
    if range.start < tail || range.end > data.len() || !starts_well || !ends_well {
        return None;
    }
    scan_after(
        &data[..range.start],
        tail,
        &data[range],
        file_name,
        origin,
        options,
        sink,
    )
}

/// [`scan_region`] of the old file's region `region` (of
/// [`changed_region_of`] with `new`), `bytes` its octets
/// ([`OldText::region_bytes`]): the part before it is the new file's.
pub fn scan_old_region(
    new: &[u8],
    region: &ChangedRegion,
    bytes: &[u8],
    file_name: &Path,
    origin: Name<'_>,
    options: &Options,
    sink: &mut dyn Sink,
) -> Option<u32> {
    let tail = tail_start(new)?;
    // Where the region was found: in the tail, at a line that begins with
    // an owner (the end is where such a line or the file's end follows,
    // as `changed_region_of` widened it), no special octet in it.
    let starts_well = bytes.is_empty()
        || ((region.start == 0 || new.get(region.start - 1) == Some(&b'\n'))
            && !matches!(bytes[0], b' ' | b'\t' | b'\r' | b'\n' | b';'));
    if region.start < tail
        || region.start > new.len()
        || region.old_end.checked_sub(region.start) != Some(bytes.len())
        || !starts_well
        || has_special(bytes)
    {
        return None;
    }
    scan_after(
        &new[..region.start],
        tail,
        bytes,
        file_name,
        origin,
        options,
        sink,
    )
}

/// Reads `region`, the text after `before` in a file whose tail starts at
/// `tail` (in `before`), with the state a whole reading has there.
fn scan_after(
    before: &[u8],
    tail: usize,
    region: &[u8],
    file_name: &Path,
    origin: Name<'_>,
    options: &Options,
    sink: &mut dyn Sink,
) -> Option<u32> {
    if tail > MAX_HEAD_LEN || tail > before.len() {
        return None;
    }
    let mut context = FileContext {
        index: 0,
        display: file_name.display().to_string(),
        path: file_name.to_path_buf(),
        identity: file_name.to_path_buf(),
        origin: origin.to_buf(),
        last_owner: None,
        default_ttl: options.default_ttl,
    };
    // The head, for the origin and `$TTL` it leaves (an `$INCLUDE` is an
    // error here: what it read is not known).
    let mut nothing = Nothing;
    let mut includer = NoInclude;
    let mut head = Scanner::new(options, &mut includer, &mut nothing);
    head.add_file(file_name.to_path_buf());
    head.include_stack.push(context.identity.clone());
    head.scan_entries(&before[..tail], 1, &mut context);
    if !head.errors.is_empty() {
        return None;
    }
    let newlines = memchr::memchr_iter(b'\n', before).count();
    let first_line = u32::try_from(newlines).ok()?.checked_add(1)?;
    context.last_owner = None;
    let mut includer = NoInclude;
    let mut scanner = Scanner::new(options, &mut includer, sink);
    scanner.add_file(file_name.to_path_buf());
    scanner.include_stack.push(context.identity.clone());
    scanner.scan_entries(region, first_line, &mut context);
    scanner.errors.is_empty().then_some(first_line)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;

    use super::*;
    use crate::Record;

    const HEAD: &str = "$ORIGIN example.\n$TTL 60\n@ SOA ns h ( 1 2\n 3 4 5 )\n NS ns\n";

    fn hosts(n: usize) -> String {
        let mut text = String::from(HEAD);
        for i in 0..n {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
            if i % 3 == 0 {
                text.push_str("  AAAA ::1\n; a comment\n\n");
            }
        }
        text
    }

    fn whole(data: &[u8]) -> Vec<Record> {
        let mut records: Vec<Record> = Vec::new();
        crate::scan_example(data, &mut records);
        records
    }

    fn region(data: &[u8], range: Range<usize>) -> Option<Vec<Record>> {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let mut records: Vec<Record> = Vec::new();
        scan_region(
            data,
            range,
            Path::new("z"),
            origin.as_name(),
            &Options::default(),
            &mut records,
        )?;
        Some(records)
    }

    /// `old` told by its differences from `new` (as a reload tells the
    /// text it read before).
    fn told<'a>(old: &'a [u8], new: &[u8]) -> OldText<'a> {
        let shorter = old.len().min(new.len());
        let prefix = common_prefix(old, new);
        let suffix = common_suffix(&old[prefix..], &new[prefix..]).min(shorter - prefix);
        OldText {
            prefix,
            middle: &old[prefix..old.len() - suffix],
            suffix,
        }
    }

    /// The region where `old` and `new` differ ([`changed_region_of`] of
    /// the two compared whole).
    fn changed_region(old: &[u8], new: &[u8], max_len: usize) -> Option<ChangedRegion> {
        changed_region_of(&told(old, new), new, max_len)
    }

    /// For edits anywhere in the tail (a record changed, added, removed,
    /// at the start and the end of the file, a line that repeats its
    /// owner), the old records with the old region's replaced by the new
    /// region's are the new file's, at the same lines; an edit in the head
    /// or one that adds a directive has no region.
    #[test]
    fn the_region_read_alone_is_the_whole_reading() {
        let old = hosts(300);
        let edits: Vec<(&str, String)> = vec![
            (
                "changed",
                old.replace("h7 A 192.0.2.7\n", "h7 A 192.0.2.99\n"),
            ),
            ("added", old.replace("h7 A", "h7x TXT x\nh7 A")),
            ("removed", old.replace("h8 A 192.0.2.8\n", "")),
            (
                "owner repeated",
                old.replace(
                    "h9 A 192.0.2.9\n  AAAA ::1\n",
                    "h9 A 192.0.2.9\n  AAAA ::2\n",
                ),
            ),
            ("owner line removed", old.replace("h9 A 192.0.2.9\n", "")),
            (
                "first host",
                old.replace("h0 A 192.0.2.0\n", "h0 A 192.0.2.1\n"),
            ),
            ("appended", format!("{old}last A 192.0.2.3\n")),
            ("last removed", old.replace("h299 A 192.0.2.49\n", "")),
            ("a comment", old.replace("; a comment\n", "; another\n")),
            ("same", old.clone()),
        ];
        for (what, new) in &edits {
            let (old_b, new_b) = (old.as_bytes(), new.as_bytes());
            let told = told(old_b, new_b);
            assert_eq!(told.len(), old_b.len(), "{what}");
            let region_at =
                changed_region_of(&told, new_b, 1 << 16).unwrap_or_else(|| panic!("{what}"));
            let old_part = region(old_b, region_at.in_old()).unwrap_or_else(|| panic!("{what}"));
            // Told by its differences from the new file, the old one's
            // region is read alike.
            let bytes = told.region_bytes(new_b, &region_at).unwrap();
            assert_eq!(bytes, &old_b[region_at.in_old()], "{what}");
            let origin = NameBuf::from_text(b"example.", None).unwrap();
            let mut told_part: Vec<Record> = Vec::new();
            scan_old_region(
                new_b,
                &region_at,
                &bytes,
                Path::new("z"),
                origin.as_name(),
                &Options::default(),
                &mut told_part,
            )
            .unwrap_or_else(|| panic!("{what}"));
            let new_part = region(new_b, region_at.in_new()).unwrap_or_else(|| panic!("{what}"));
            let old_all = whole(old_b);
            let at = old_all
                .iter()
                .position(|record| old_part.first().is_some_and(|first| first == record))
                .unwrap_or_else(|| {
                    // An empty old region: the new records go before the
                    // first record after it.
                    let line = 1 + old_b[..region_at.start]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count() as u32;
                    old_all
                        .iter()
                        .position(|r| r.location.line >= line)
                        .unwrap_or(old_all.len())
                });
            assert_eq!(old_all[at..at + old_part.len()], old_part[..], "{what}");
            assert_eq!(told_part, old_part, "{what}");
            let shift = new_b[region_at.in_new()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as i64
                - old_b[region_at.in_old()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count() as i64;
            let mut spliced = old_all[..at].to_vec();
            spliced.extend(new_part);
            spliced.extend(old_all[at + old_part.len()..].iter().map(|record| {
                let mut record = record.clone();
                record.location.line = (i64::from(record.location.line) + shift) as u32;
                record
            }));
            assert_eq!(spliced, whole(new_b), "{what}");
        }
        for (what, new) in [
            ("SOA", old.replace("( 1 2", "( 2 2")),
            ("directive", old.replace("h7 A", "$TTL 30\nh7 A")),
            ("quote", old.replace("h7 A", "h7x TXT \"x\"\nh7 A")),
        ] {
            assert_eq!(
                changed_region(old.as_bytes(), new.as_bytes(), 1 << 16),
                None,
                "{what}"
            );
            // The old file's special octet in the middle, too.
            assert_eq!(
                changed_region(new.as_bytes(), old.as_bytes(), 1 << 16),
                None,
                "{what} removed"
            );
        }
        // Past the bound.
        let far = old
            .replace("h1 A 192.0.2.1\n", "")
            .replace("h299 A 192.0.2.49\n", "");
        assert_eq!(changed_region(old.as_bytes(), far.as_bytes(), 1024), None);
        // An error in the region.
        let bad = old.replace("h7 A 192.0.2.7\n", "h7 A 192.0.2.700\n");
        let at = changed_region(old.as_bytes(), bad.as_bytes(), 1 << 16).unwrap();
        assert!(region(bad.as_bytes(), at.in_new()).is_none());
    }
}
