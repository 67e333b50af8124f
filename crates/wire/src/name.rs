//! Domain names: a validated borrowed view, owned fixed-size buffers, and
//! text conversion.
//!
//! A [`Name`] is an uncompressed name in wire form (length-prefixed labels
//! ending with the root label) that has been checked once: every label is at
//! most [`MAX_LABEL_LEN`] octets, the whole at most [`MAX_NAME_LEN`]. Holding
//! a `Name` means holding a valid name; nothing downstream re-checks.
//!
//! [`NameBuf`] owns one on the stack (`[u8; 255]` and a length: no heap), and
//! [`LowerNameBuf`] is a `NameBuf` whose ASCII letters were folded to lower
//! case once, at ingress, so that lookups and keys compare plain bytes.
//!
//! ```
//! use tern_wire::name::{Name, NameBuf};
//! //                      3 w w w 7 e x a m p l e 3 c o m 0
//! let wire = b"\x03www\x07example\x03com\x00";
//! let name = Name::from_wire(wire).unwrap();
//! assert_eq!(name.label_count(), 3);
//! assert_eq!(name.to_string(), "www.example.com.");
//! let text = NameBuf::from_text(b"WWW.Example.com.", None).unwrap();
//! assert!(text.as_name().eq_ignore_case(name));
//! ```

use core::cmp::Ordering;
use core::fmt;

use crate::error::ParseError;

/// The longest name in wire form, root label included (RFC 1035 section 2.3.4).
pub const MAX_NAME_LEN: usize = 255;

/// The longest label (RFC 1035 section 2.3.4); the top two bits of a length
/// octet are reserved for pointers and extended label types.
pub const MAX_LABEL_LEN: usize = 63;

/// The most labels a name can have: 127 one-octet labels plus the root.
pub const MAX_LABELS: usize = 128;

//----------- Name -----------------------------------------------------------

/// A valid, uncompressed domain name in wire form, borrowed.
#[derive(Clone, Copy)]
pub struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    /// The root name.
    pub const ROOT: Name<'static> = Name(b"\x00");

    /// Checks that `bytes` is exactly one uncompressed name.
    pub fn from_wire(bytes: &'a [u8]) -> Result<Self, ParseError> {
        let (name, used) = Self::parse_prefix(bytes)?;
        if used != bytes.len() {
            return Err(ParseError::new("trailing bytes after name"));
        }
        Ok(name)
    }

    /// Reads one uncompressed name from the start of `bytes` and returns it
    /// with its length. Bound: at most [`MAX_NAME_LEN`] octets are examined.
    ///
    /// Two comparisons a label besides its read (this runs once per query,
    /// in [`crate::parse::MessageView::parse`]): the length octet against
    /// [`MAX_LABEL_LEN`] (a pointer and the unknown label types are all
    /// above it), the end against the shorter of the bytes and
    /// [`MAX_NAME_LEN`]; which error it is is decided only on an error.
    pub fn parse_prefix(bytes: &'a [u8]) -> Result<(Self, usize), ParseError> {
        let limit = bytes.len().min(MAX_NAME_LEN);
        let mut pos = 0;
        loop {
            let len = *bytes
                .get(pos)
                .ok_or(ParseError::new("name runs past the end"))? as usize;
            if len > MAX_LABEL_LEN {
                return Err(ParseError::new(if len & 0xc0 == 0xc0 {
                    "compression pointer in uncompressed name"
                } else {
                    "unknown label type"
                }));
            }
            pos += 1 + len;
            // The root label ends at most one octet past a label start
            // read just now, so within the bytes: only the name's length
            // can fail it.
            if pos > limit {
                return Err(ParseError::new(if pos > MAX_NAME_LEN {
                    "name longer than 255 octets"
                } else {
                    "name runs past the end"
                }));
            }
            if len == 0 {
                return Ok((Name(&bytes[..pos]), pos));
            }
        }
    }

    /// Wraps bytes already known to be a valid name (used by this crate's
    /// own buffers after they validated their contents).
    pub(crate) const fn from_valid(bytes: &'a [u8]) -> Self {
        Name(bytes)
    }

    /// Wraps bytes that were checked with [`Name::from_wire`] when they were
    /// stored and have not changed since (a zone's arena of names, built
    /// once and then only read): looking a name up again then costs no
    /// second check. Checked again in debug builds only. Bytes that are not
    /// a valid name give wrong answers from the methods (never unsafety).
    pub fn from_validated(bytes: &'a [u8]) -> Self {
        debug_assert!(Name::from_wire(bytes).is_ok(), "not a validated name");
        Name(bytes)
    }

    /// The wire bytes, root label included.
    pub const fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    /// The length in wire form (1 for the root).
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(self) -> usize {
        self.0.len()
    }

    /// Whether this is the root name.
    pub const fn is_root(self) -> bool {
        self.0.len() == 1
    }

    /// The labels from the leftmost, root label excluded, without length octets.
    pub fn labels(self) -> Labels<'a> {
        Labels { rest: self.0 }
    }

    /// The number of labels, root excluded.
    pub fn label_count(self) -> usize {
        self.labels().count()
    }

    /// The leftmost label (empty for the root).
    pub fn first_label(self) -> &'a [u8] {
        let len = self.0[0] as usize;
        &self.0[1..1 + len]
    }

    /// The name minus its leftmost label, or `None` for the root.
    pub fn parent(self) -> Option<Name<'a>> {
        if self.is_root() {
            return None;
        }
        let len = self.0[0] as usize;
        Some(Name(&self.0[1 + len..]))
    }

    /// The suffix that keeps the last `count` labels (root excluded).
    pub fn suffix(self, count: usize) -> Name<'a> {
        let total = self.label_count();
        let mut name = self;
        for _ in count..total {
            name = name
                .parent()
                .expect("fewer labels stripped than the name has");
        }
        name
    }

    /// Whether the leftmost label is `*`.
    pub fn is_wildcard(self) -> bool {
        self.0.len() >= 2 && self.0[0] == 1 && self.0[1] == b'*'
    }

    /// ASCII case-insensitive equality (RFC 4343).
    pub fn eq_ignore_case(self, other: Name<'_>) -> bool {
        eq_ignore_case(self.0, other.0)
    }

    /// Whether `suffix` equals this name or a label-aligned suffix of it,
    /// ignoring case.
    pub fn ends_with(self, suffix: Name<'_>) -> bool {
        if suffix.len() > self.len() {
            return false;
        }
        let mut name = self;
        loop {
            if name.len() == suffix.len() {
                return name.eq_ignore_case(suffix);
            }
            if name.len() < suffix.len() {
                return false;
            }
            match name.parent() {
                Some(parent) => name = parent,
                None => return false,
            }
        }
    }

    /// The bytes of the labels in front of `suffix` (length octets included,
    /// no root), or `None` if `suffix` is not a suffix of this name.
    pub fn prefix_before(self, suffix: Name<'_>) -> Option<&'a [u8]> {
        if !self.ends_with(suffix) {
            return None;
        }
        Some(&self.0[..self.0.len() - suffix.len()])
    }

    /// Copies the name into an owned buffer.
    pub fn to_buf(self) -> NameBuf {
        NameBuf::from_name(self)
    }

    /// Copies the name with ASCII letters lowercased.
    #[inline]
    pub fn to_lower(self) -> LowerNameBuf {
        LowerNameBuf::from_name(self)
    }

    /// Canonical DNS name order (RFC 4034 section 6.1): compare labels from
    /// the right, each as lowercased octet strings.
    pub fn canonical_cmp(self, other: Name<'_>) -> Ordering {
        // Label start offsets (names are at most 255 octets, so a `u8`
        // holds any offset): 2 x 128 octets to clear, not 2 x 128 slices.
        let mut left = [0u8; MAX_LABELS];
        let mut right = [0u8; MAX_LABELS];
        let left_count = label_offsets(self, &mut left);
        let right_count = label_offsets(other, &mut right);
        for (&a, &b) in left[..left_count]
            .iter()
            .rev()
            .zip(right[..right_count].iter().rev())
        {
            let ordering = label_at(self, a)
                .iter()
                .map(u8::to_ascii_lowercase)
                .cmp(label_at(other, b).iter().map(u8::to_ascii_lowercase));
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        left_count.cmp(&right_count)
    }
}

/// The label whose length octet is at `offset`.
fn label_at(name: Name<'_>, offset: u8) -> &[u8] {
    let at = usize::from(offset);
    let len = usize::from(name.0[at]);
    &name.0[at + 1..at + 1 + len]
}

/// Writes the offset of each label's length octet (root excluded) and
/// returns how many labels there are.
fn label_offsets(name: Name<'_>, out: &mut [u8; MAX_LABELS]) -> usize {
    let mut count = 0;
    let mut at = 0;
    while name.0[at] != 0 {
        out[count] = at as u8;
        count += 1;
        at += 1 + usize::from(name.0[at]);
    }
    count
}

impl PartialEq for Name<'_> {
    /// Names compare equal ignoring ASCII case, as DNS requires.
    fn eq(&self, other: &Self) -> bool {
        self.eq_ignore_case(*other)
    }
}

impl Eq for Name<'_> {}

impl fmt::Debug for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({self})")
    }
}

impl fmt::Display for Name<'_> {
    /// Presentation format with RFC 1035 escapes; always absolute.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for label in self.labels() {
            for &byte in label {
                write_escaped_name_byte(f, byte)?;
            }
            f.write_str(".")?;
        }
        Ok(())
    }
}

/// Writes one octet of a label in presentation form, as BIND prints it.
fn write_escaped_name_byte(f: &mut fmt::Formatter<'_>, byte: u8) -> fmt::Result {
    match byte {
        b'.' | b';' | b'(' | b')' | b'"' | b'\\' | b'@' | b'$' => {
            write!(f, "\\{}", byte as char)
        }
        0x21..=0x7e => write!(f, "{}", byte as char),
        _ => write!(f, "\\{byte:03}"),
    }
}

//----------- Labels ---------------------------------------------------------

/// Iterator over the labels of a [`Name`], leftmost first, root excluded.
#[derive(Clone)]
pub struct Labels<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Labels<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let len = *self.rest.first()? as usize;
        if len == 0 {
            return None;
        }
        let label = &self.rest[1..1 + len];
        self.rest = &self.rest[1 + len..];
        Some(label)
    }
}

//----------- NameBuf --------------------------------------------------------

/// An owned name on the stack: up to 255 wire octets and a length.
#[derive(Clone, Copy)]
pub struct NameBuf {
    len: u8,
    bytes: [u8; MAX_NAME_LEN],
}

impl NameBuf {
    /// The root name.
    pub const fn root() -> Self {
        NameBuf {
            len: 1,
            bytes: [0; MAX_NAME_LEN],
        }
    }

    /// Copies a valid name.
    pub fn from_name(name: Name<'_>) -> Self {
        let mut buf = NameBuf {
            len: name.len() as u8,
            bytes: [0; MAX_NAME_LEN],
        };
        buf.bytes[..name.len()].copy_from_slice(name.as_bytes());
        buf
    }

    /// Builds `prefix` (labels with their length octets, no root) followed by
    /// `suffix`; fails if the result exceeds 255 octets. Used for DNAME
    /// substitution and wildcard expansion.
    pub fn concat(prefix: &[u8], suffix: Name<'_>) -> Result<Self, ParseError> {
        let total = prefix.len() + suffix.len();
        if total > MAX_NAME_LEN {
            return Err(ParseError::new("name longer than 255 octets"));
        }
        let mut buf = NameBuf {
            len: total as u8,
            bytes: [0; MAX_NAME_LEN],
        };
        buf.bytes[..prefix.len()].copy_from_slice(prefix);
        buf.bytes[prefix.len()..total].copy_from_slice(suffix.as_bytes());
        Name::from_wire(&buf.bytes[..total])?;
        Ok(buf)
    }

    /// Parses a name in presentation format (RFC 1035 section 5.1): labels
    /// separated by `.`, `\X` and `\DDD` escapes, `@` for the origin, and a
    /// trailing dot for absolute names. Relative names are completed with
    /// `origin`; without one they are an error.
    pub fn from_text(text: &[u8], origin: Option<Name<'_>>) -> Result<Self, ParseError> {
        if text.is_empty() {
            return Err(ParseError::new("empty name"));
        }
        if text == b"@" {
            return origin
                .map(NameBuf::from_name)
                .ok_or(ParseError::new("@ used without an origin"));
        }
        if text == b"." {
            return Ok(NameBuf::root());
        }
        let mut buf = NameBuf {
            len: 0,
            bytes: [0; MAX_NAME_LEN],
        };
        let mut pos = 0; // write position in `buf.bytes`
        let mut label_start = 0; // position of the current label's length octet
        let mut label_len = 0usize;
        let mut absolute = false;
        let mut i = 0;
        // Reserve the first length octet.
        pos += 1;
        while i < text.len() {
            let byte = text[i];
            let value = match byte {
                b'.' => {
                    if label_len == 0 {
                        return Err(ParseError::new("empty label in name"));
                    }
                    buf.bytes[label_start] = label_len as u8;
                    i += 1;
                    if i == text.len() {
                        absolute = true;
                        break;
                    }
                    label_start = pos;
                    label_len = 0;
                    pos += 1;
                    if pos >= MAX_NAME_LEN {
                        return Err(ParseError::new("name longer than 255 octets"));
                    }
                    continue;
                }
                b'\\' => {
                    let (value, used) = parse_escape(&text[i + 1..])?;
                    i += 1 + used;
                    value
                }
                _ => {
                    i += 1;
                    byte
                }
            };
            label_len += 1;
            if label_len > MAX_LABEL_LEN {
                return Err(ParseError::new("label longer than 63 octets"));
            }
            if pos >= MAX_NAME_LEN {
                return Err(ParseError::new("name longer than 255 octets"));
            }
            buf.bytes[pos] = value;
            pos += 1;
        }
        if !absolute {
            // The loop ended inside a label: close it.
            buf.bytes[label_start] = label_len as u8;
        }
        let suffix = if absolute {
            Name::ROOT
        } else {
            origin.ok_or(ParseError::new("relative name without an origin"))?
        };
        if pos + suffix.len() > MAX_NAME_LEN {
            return Err(ParseError::new("name longer than 255 octets"));
        }
        buf.bytes[pos..pos + suffix.len()].copy_from_slice(suffix.as_bytes());
        buf.len = (pos + suffix.len()) as u8;
        Ok(buf)
    }

    /// The name as a view.
    pub fn as_name(&self) -> Name<'_> {
        Name::from_valid(&self.bytes[..self.len as usize])
    }

    /// The wire bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Lowercases the ASCII letters in place.
    pub fn make_lowercase(&mut self) {
        self.bytes[..self.len as usize].make_ascii_lowercase();
    }
}

/// Parses the part of an escape after the backslash: `DDD` (three decimal
/// digits, at most 255) or any single character. Returns the octet and the
/// number of bytes used.
pub fn parse_escape(rest: &[u8]) -> Result<(u8, usize), ParseError> {
    match rest {
        [a, b, c, ..] if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() => {
            let value = u32::from(a - b'0') * 100 + u32::from(b - b'0') * 10 + u32::from(c - b'0');
            let value =
                u8::try_from(value).map_err(|_| ParseError::new("\\DDD escape over 255"))?;
            Ok((value, 3))
        }
        [a, ..] if a.is_ascii_digit() => Err(ParseError::new("\\DDD escape needs three digits")),
        [other, ..] => Ok((*other, 1)),
        [] => Err(ParseError::new("backslash at end of text")),
    }
}

impl PartialEq for NameBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_name() == other.as_name()
    }
}

impl Eq for NameBuf {}

impl fmt::Debug for NameBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_name(), f)
    }
}

impl fmt::Display for NameBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.as_name(), f)
    }
}

//----------- LowerNameBuf ---------------------------------------------------

/// A name with ASCII letters folded to lower case: the form used for keys,
/// lookups and comparisons, built once per query.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LowerNameBuf(NameBuf);

impl LowerNameBuf {
    /// The root name, for a buffer to be set with
    /// [`LowerNameBuf::set_lower`]: made where it is called (its octets
    /// zeroed in place; a constant would be copied from memory, a call of
    /// `memcpy` of 256 octets).
    #[inline]
    pub fn root() -> LowerNameBuf {
        LowerNameBuf(NameBuf {
            len: 1,
            bytes: [0; MAX_NAME_LEN],
        })
    }

    /// Copies and lowercases a name (this runs once per query): see
    /// [`LowerNameBuf::set_lower`].
    #[inline]
    pub fn from_name(name: Name<'_>) -> Self {
        let mut lower = LowerNameBuf::root();
        lower.set_lower(name);
        lower
    }

    /// Makes this buffer `name` lowercased, in place (a caller that keeps
    /// the buffer where it is used neither copies nor moves its 256
    /// octets: about 30 instructions a query). Eight octets at a time, each
    /// word lowercased ([`lowercase8`]) on its way, the last word read and
    /// written overlapping the one before (its octets lowercased twice,
    /// which changes nothing); any name of fewer than eight octets octet
    /// by octet. One pass, without the
    /// call of a copy first. The octets past the name are not read by any
    /// method (they may be an earlier name's).
    #[inline]
    pub fn set_lower(&mut self, name: Name<'_>) {
        let bytes = name.as_bytes();
        let len = bytes.len();
        let buf = &mut self.0;
        buf.len = len as u8;
        let word_at = |at: usize| {
            let octets = bytes.get(at..at + 8).and_then(|word| word.try_into().ok());
            lowercase8(u64::from_le_bytes(octets.unwrap_or([0; 8]))).to_le_bytes()
        };
        if len < 8 {
            for (lower, &octet) in buf.bytes.iter_mut().zip(bytes) {
                *lower = octet.to_ascii_lowercase();
            }
        } else {
            // Bound: a name is at most 255 octets, 32 words.
            let mut at = 0;
            while at + 8 < len {
                buf.bytes[at..at + 8].copy_from_slice(&word_at(at));
                at += 8;
            }
            let last = len - 8;
            buf.bytes[last..len].copy_from_slice(&word_at(last));
        }
    }

    /// The lowercased name as a view.
    pub fn as_name(&self) -> Name<'_> {
        self.0.as_name()
    }

    /// The lowercased wire bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl core::hash::Hash for LowerNameBuf {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Debug for LowerNameBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_name(), f)
    }
}

//=========== Tests ==========================================================

//----------- eq_ignore_case -------------------------------------------------

/// Whether two octet strings are equal with ASCII letters folded to lower
/// case (RFC 4343), as `<[u8]>::eq_ignore_ascii_case` decides. Names on
/// the answer path are mostly lowercased already: the plain comparison
/// (one `memcmp`) is tried first, then eight octets at a time, stopping at
/// the first word that differs (std's version, a byte at a time or in
/// chunks to the end, cost about ten instructions an octet).
#[inline]
pub fn eq_ignore_case(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a == b {
        return true;
    }
    let mut a_words = a.chunks_exact(8);
    let mut b_words = b.chunks_exact(8);
    for (x, y) in a_words.by_ref().zip(b_words.by_ref()) {
        let x = u64::from_le_bytes(x.try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(y.try_into().unwrap_or([0; 8]));
        if x != y && lowercase8(x) != lowercase8(y) {
            return false;
        }
    }
    a_words
        .remainder()
        .iter()
        .zip(b_words.remainder())
        .all(|(x, y)| x.eq_ignore_ascii_case(y))
}

/// Lowercases the ASCII letters among eight octets (SWAR): for each octet
/// with the high bit clear, adding 0x3f sets bit 7 iff it is at least `A`,
/// adding 0x25 iff it is above `Z`; neither sum carries into the next
/// octet. The letters' bit 7 flags, shifted to bit 5, are OR-ed in.
pub fn lowercase8(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let low7 = x & (0x7f * ONES);
    let at_least_a = low7 + (0x80 - u64::from(b'A')) * ONES;
    let above_z = low7 + (0x80 - u64::from(b'Z') - 1) * ONES;
    let upper = at_least_a & !above_z & !x & (0x80 * ONES);
    x | (upper >> 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    #[test]
    fn rejects_bad_wire_names() {
        assert!(Name::from_wire(b"\x03www\x00").is_ok());
        assert!(Name::from_wire(b"\x03ww").is_err());
        assert!(Name::from_wire(b"\x40").is_err(), "label type 01");
        assert!(Name::from_wire(b"\xc0\x0c").is_err(), "pointer");
        let mut long = Vec::new();
        for _ in 0..64 {
            long.extend_from_slice(b"\x03abc");
        }
        long.push(0);
        assert_eq!(
            Name::from_wire(&long).unwrap_err().what,
            "name longer than 255 octets"
        );
    }

    /// `parse_prefix` decides which error only once one is found (one
    /// comparison for the label types, one for both ends): each error is
    /// still the one its case names, and the longest names still parse.
    #[test]
    fn parse_prefix_names_each_error() {
        let what = |bytes: &[u8]| Name::parse_prefix(bytes).unwrap_err().what;
        assert_eq!(what(b"\x03ww"), "name runs past the end");
        assert_eq!(what(b"\x03www"), "name runs past the end");
        assert_eq!(what(b""), "name runs past the end");
        assert_eq!(what(b"\x40"), "unknown label type");
        assert_eq!(what(b"\x80"), "unknown label type");
        assert_eq!(
            what(b"\x01a\xc0\x0c"),
            "compression pointer in uncompressed name"
        );
        // 255 octets: three labels of 63 and one of 61, then the root.
        let mut longest = Vec::new();
        for len in [63u8, 63, 63, 61] {
            longest.push(len);
            longest.extend(std::iter::repeat_n(b'a', usize::from(len)));
        }
        longest.push(0);
        assert_eq!(longest.len(), MAX_NAME_LEN);
        let mut bytes = longest.clone();
        bytes.extend_from_slice(b"\x00\x01");
        let (name, used) = Name::parse_prefix(&bytes).unwrap();
        assert_eq!((name.as_bytes(), used), (&longest[..], MAX_NAME_LEN));
        // The last label one octet longer, its root the 256th octet: too
        // long, not cut short.
        let last = 192;
        let mut over = longest[..MAX_NAME_LEN - 1].to_vec();
        over[last] = 62;
        over.extend_from_slice(b"a\x00");
        assert_eq!(over.len(), MAX_NAME_LEN + 1);
        assert_eq!(what(&over), "name longer than 255 octets");
        // A label running past both the bytes and 255 octets: too long.
        let mut cut = longest[..MAX_NAME_LEN - 1].to_vec();
        cut[last] = 63;
        assert_eq!(what(&cut), "name longer than 255 octets");
        // No root after the last label, or a label past the bytes within
        // 255 octets: cut short.
        assert_eq!(what(&longest[..MAX_NAME_LEN - 1]), "name runs past the end");
        assert_eq!(what(&longest[..250]), "name runs past the end");
    }

    #[test]
    fn text_round_trip_with_escapes() {
        let n = name("a\\.b.c\\032d.\\255.");
        assert_eq!(n.as_bytes(), b"\x03a.b\x03c d\x01\xff\x00");
        assert_eq!(n.to_string(), "a\\.b.c\\032d.\\255.");
        let origin = name("example.com.");
        let rel = NameBuf::from_text(b"www", Some(origin.as_name())).unwrap();
        assert_eq!(rel.to_string(), "www.example.com.");
        assert_eq!(
            NameBuf::from_text(b"@", Some(origin.as_name())).unwrap(),
            origin
        );
        assert!(NameBuf::from_text(b"a..b.", None).is_err());
        assert!(NameBuf::from_text(b"www", None).is_err());
        assert!(NameBuf::from_text(b"\\256.", None).is_err());
        let label63 = "a".repeat(63);
        assert!(NameBuf::from_text(format!("{label63}.").as_bytes(), None).is_ok());
        assert!(NameBuf::from_text(format!("{label63}a.").as_bytes(), None).is_err());
    }

    #[test]
    fn suffix_relations() {
        let www = name("WWW.Example.COM.");
        let zone = name("example.com.");
        assert!(www.as_name().ends_with(zone.as_name()));
        assert!(!zone.as_name().ends_with(www.as_name()));
        assert!(!name("xexample.com.").as_name().ends_with(zone.as_name()));
        assert_eq!(
            www.as_name().prefix_before(zone.as_name()).unwrap(),
            b"\x03WWW"
        );
        assert_eq!(www.as_name().suffix(1).to_string(), "COM.");
        assert_eq!(
            www.as_name().to_lower().as_bytes(),
            b"\x03www\x07example\x03com\x00"
        );
    }

    #[test]
    fn canonical_order_rfc4034() {
        // RFC 4034 section 6.1 example, in order.
        let ordered = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        for pair in ordered.windows(2) {
            let (a, b) = (name(pair[0]), name(pair[1]));
            assert_eq!(
                a.as_name().canonical_cmp(b.as_name()),
                Ordering::Less,
                "{pair:?}"
            );
        }
    }

    #[test]
    fn eq_ignore_case_agrees_with_std() {
        // Every pair of octets, alone and at every place of a 19-octet
        // string (two words and a remainder), with equal neighbours.
        let base = *b"\x03www\x07example\x03com\x00xy";
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let expected = a.eq_ignore_ascii_case(&b);
                assert_eq!(super::eq_ignore_case(&[a], &[b]), expected, "{a} {b}");
                if a % 7 != 0 && b % 5 != 0 && !(a.is_ascii_alphabetic() && b.is_ascii_alphabetic())
                {
                    continue; // a sample of the pairs at every place
                }
                for at in 0..base.len() {
                    let (mut x, mut y) = (base, base);
                    x[at] = a;
                    y[at] = b;
                    assert_eq!(super::eq_ignore_case(&x, &y), expected, "{a} {b} at {at}");
                }
            }
        }
        assert!(!super::eq_ignore_case(b"ab", b"abc"));
        assert!(super::eq_ignore_case(b"", b""));
        let upper = NameBuf::from_text(b"WWW.EXAMPLE.COM.", None).unwrap();
        let lower = NameBuf::from_text(b"www.example.com.", None).unwrap();
        assert!(upper.as_name().eq_ignore_case(lower.as_name()));
        assert_eq!(
            super::lowercase8(u64::from_le_bytes(*b"AZaz@[`{")),
            u64::from_le_bytes(*b"azaz@[`{")
        );
        // Lowercasing a name: every length of one label (names of 3 to 65
        // octets: under eight octet by octet, then words and an
        // overlapping last word), every octet value.
        assert_eq!(Name::ROOT.to_lower().as_bytes(), b"\x00");
        for length in 1usize..=63 {
            for first in (0..=255u8).step_by(length) {
                let label: Vec<u8> = (0..length).map(|i| first.wrapping_add(i as u8)).collect();
                let mut wire = vec![length as u8];
                wire.extend_from_slice(&label);
                wire.push(0);
                let name = Name::from_wire(&wire).unwrap();
                let expected: Vec<u8> = wire.iter().map(u8::to_ascii_lowercase).collect();
                assert_eq!(name.to_lower().as_bytes(), &expected[..], "{wire:?}");
            }
        }
        // Longer names up to 255 octets, of labels of every length.
        let mut wire = Vec::new();
        for length in 1..=21u8 {
            wire.push(length);
            wire.extend((0..length).map(|i| b'A' + (i + length) % 58));
            let mut name = wire.clone();
            name.push(0);
            let expected: Vec<u8> = name.iter().map(u8::to_ascii_lowercase).collect();
            let name = Name::from_wire(&name).unwrap();
            assert_eq!(name.to_lower().as_bytes(), &expected[..], "{wire:?}");
        }
        // The longest: three labels of 63 octets and one of 61.
        wire.clear();
        for length in [63u8, 63, 63, 61] {
            wire.push(length);
            wire.extend((0..length).map(|i| b'A' + i % 58));
        }
        wire.push(0);
        assert_eq!(wire.len(), 255);
        let name = Name::from_wire(&wire).unwrap();
        let expected: Vec<u8> = wire.iter().map(u8::to_ascii_lowercase).collect();
        assert_eq!(name.to_lower().as_bytes(), &expected[..]);
    }
}
