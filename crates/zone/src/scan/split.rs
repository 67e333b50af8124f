//! Where a large zone file may be cut into parts read on several threads
//! ([`crate::Options::threads`]) with the same outcome as one reading.
//!
//! A part must start where one thread's reading would be between two
//! entries with nothing carried into the next entry but the origin and
//! the `$TTL` (which the first part, read before the others, settles):
//! so only the *tail* of the file is cut, the part after the last byte
//! that may carry state across lines or change it (`(`, `)`, `"`, `\`,
//! `$`: parentheses, quoted strings, escapes of a newline, directives),
//! and each cut is at the start of a line that begins with an owner
//! name (no blank to repeat the previous owner, no comment). A file with
//! such bytes throughout (TXT records in quotes, parentheses everywhere)
//! is read on one thread.
//!
//! Bound: a reverse search for each special byte, then, for each cut, a
//! forward search for newlines from where the cut is wanted.

use memchr::{memchr, memrchr2, memrchr3};

/// Files shorter than this are read on one thread: the threads would cost
/// more than they spare.
pub(crate) const SPLIT_MIN_LEN: usize = 1 << 20;

/// The most parts a file is read in.
pub(crate) const MAX_PARTS: usize = 64;

/// Where each part of `data` starts, at most `parts` of them: the first
/// is where the tail begins (what comes before is read first, on its own),
/// each a line start whose line begins with an owner name. Empty when the
/// file is not to be cut (fewer than two parts).
pub(crate) fn part_starts(data: &[u8], parts: usize) -> Vec<usize> {
    let parts = parts.min(MAX_PARTS);
    if parts < 2 || data.len() < SPLIT_MIN_LEN {
        return Vec::new();
    }
    let Some(tail) = tail_start(data) else {
        return Vec::new();
    };
    let size = (data.len() - tail) / parts;
    if size == 0 {
        return Vec::new();
    }
    let mut starts: Vec<usize> = Vec::with_capacity(parts);
    for part in 0..parts {
        let wanted = (tail + part * size).max(starts.last().map_or(0, |&last| last + 1));
        match owner_line_at_or_after(data, tail, wanted) {
            Some(start) => starts.push(start),
            None => break,
        }
    }
    if starts.len() < 2 {
        return Vec::new();
    }
    starts
}

/// Where the tail of `data` starts: the line start after the last byte
/// that may carry state across lines or change it (`(`, `)`, `"`, `\`,
/// `$`), 0 if there is none; `None` when that byte is on the last line
/// (there is no tail). In the tail each line that begins with an owner
/// name starts an entry read with the origin and `$TTL` the part before
/// left, and nothing else carried over.
pub(crate) fn tail_start(data: &[u8]) -> Option<usize> {
    let last_special = match (
        memrchr3(b'(', b')', b'"', data),
        memrchr2(b'\\', b'$', data),
    ) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    match last_special {
        None => Some(0),
        Some(at) => memchr(b'\n', &data[at..]).map(|offset| at + offset + 1),
    }
}

/// Whether a line that starts at `at` in `data` begins with an owner
/// name (not a blank, which repeats the previous owner, nor a comment or
/// an empty line).
pub(crate) fn owner_line(data: &[u8], at: usize) -> bool {
    (at == 0 || data.get(at - 1) == Some(&b'\n'))
        && data
            .get(at)
            .is_some_and(|byte| !matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b';'))
}

/// The first line start at or after `wanted` (and at or after `tail`, a
/// line start) whose line begins with an owner name.
fn owner_line_at_or_after(data: &[u8], tail: usize, wanted: usize) -> Option<usize> {
    let mut at = if wanted <= tail {
        tail
    } else {
        // The line start after the newline before `wanted`, or `wanted`
        // itself if a line starts there.
        let from = wanted - 1;
        from + memchr(b'\n', &data[from..])? + 1
    };
    loop {
        match data.get(at)? {
            b' ' | b'\t' | b'\r' | b'\n' | b';' => {
                at += memchr(b'\n', &data[at..])? + 1;
            }
            _ => return Some(at),
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(lines: usize, header: &str) -> Vec<u8> {
        let mut text = String::from(header);
        for i in 0..lines {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
            if i % 3 == 0 {
                text.push_str("  AAAA ::1\n; a comment\n\n");
            }
        }
        text.into_bytes()
    }

    #[test]
    fn parts_start_at_owner_lines_of_the_tail() {
        let data = zone(
            60_000,
            "$ORIGIN example.\n$TTL 60\n@ SOA ns h ( 1 2\n 3 4 5 )\n",
        );
        assert!(data.len() >= SPLIT_MIN_LEN);
        let starts = part_starts(&data, 4);
        assert_eq!(starts.len(), 4);
        let tail = data.windows(2).position(|w| w == b")\n").unwrap() + 2;
        assert_eq!(starts[0], tail);
        for &start in &starts {
            assert_eq!(data[start - 1], b'\n');
            assert_eq!(data[start], b'h');
        }
        assert!(starts.windows(2).all(|w| w[0] < w[1]));
    }

    /// A file read on four threads gives the records (to either sink) and
    /// the errors, in order and at their lines, of one reading; too many
    /// errors stop both alike.
    #[test]
    fn parts_read_like_one_thread() {
        use std::path::Path;

        use tern_wire::name::NameBuf;

        use crate::{scan_bytes, NoInclude, Options, Record, RecordList, Records};

        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let read = |data: &[u8], threads: usize| {
            let options = Options {
                threads,
                ..Options::default()
            };
            let mut records = Records::new();
            let mut owned: Vec<Record> = Vec::new();
            let files = scan_bytes(
                data,
                Path::new("z"),
                origin.as_name(),
                &options,
                &mut NoInclude,
                &mut records,
            );
            let again = scan_bytes(
                data,
                Path::new("z"),
                origin.as_name(),
                &options,
                &mut NoInclude,
                &mut owned,
            );
            assert_eq!(files, again);
            let listed: Vec<Record> = records.iter().map(|record| record.to_record()).collect();
            assert_eq!(listed, owned);
            assert_eq!(RecordList::len(&records), owned.len());
            (
                owned,
                files.map_err(|errors| (errors.errors, errors.truncated)),
            )
        };
        let mut data = zone(
            60_000,
            "$ORIGIN example.\n$TTL 60\n@ SOA ns h ( 1 2\n 3 4 5 )\n",
        );
        assert_eq!(part_starts(&data, 4).len(), 4);
        let (one, ok) = read(&data, 1);
        assert!(ok.is_ok());
        assert_eq!(read(&data, 4), (one, ok));
        // Errors spread over the file, some in each part.
        let text = String::from_utf8(data.clone()).unwrap();
        let bad: String = text
            .lines()
            .enumerate()
            .map(|(at, line)| {
                if at % 20_000 == 7 {
                    format!("{line} extra\nbad A 300.1.1.1\n")
                } else {
                    format!("{line}\n")
                }
            })
            .collect();
        data = bad.into_bytes();
        let (one, errors) = read(&data, 1);
        let (errors_one, truncated) = errors.clone().unwrap_err();
        assert!(errors_one.len() > 4 && !truncated, "{errors_one:?}");
        assert_eq!(read(&data, 4), (one, errors));
        // More errors than are kept.
        let many: String = text
            .lines()
            .enumerate()
            .map(|(at, line)| {
                if at > 5 && at % 20 == 0 {
                    format!("{line} extra\n")
                } else {
                    format!("{line}\n")
                }
            })
            .collect();
        let (_, errors) = read(many.as_bytes(), 1);
        let (list, truncated) = errors.clone().unwrap_err();
        assert!(truncated && list.len() == crate::MAX_ERRORS);
        assert_eq!(read(many.as_bytes(), 4).1, errors);
    }

    #[test]
    fn not_cut_when_small_or_special_to_the_end() {
        assert!(part_starts(&zone(10, ""), 4).is_empty());
        let mut data = zone(60_000, "");
        assert_eq!(part_starts(&data, 1), Vec::<usize>::new());
        data.extend_from_slice(b"last TXT \"x\"");
        assert!(part_starts(&data, 4).is_empty());
    }
}
