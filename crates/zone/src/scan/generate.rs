//! BIND's `$GENERATE start-stop[/step] lhs [ttl] [class] type rhs...`.
//!
//! In `lhs` and `rhs`, `$` stands for the iterator, `${offset,width,base}`
//! for the iterator plus `offset`, zero-padded to `width`, in base `d`
//! (decimal), `o` (octal), `x`/`X` (hexadecimal) or `n`/`N` (reversed
//! nibbles separated by dots, for ip6.arpa; `width` then counts the dots
//! too, as in BIND). `$$` is a literal `$` (written `\$` so that the name
//! parser reads it as an escaped octet) and `\$` stays an escaped `$`.
//!
//! Bound: a directive generates at most [`MAX_GENERATE_RECORDS`] records,
//! and the iterator plus offset must fit a 32-bit signed integer (as in
//! BIND, whose `bad-generate-range.db` test expects `${2147483647}` to fail).

/// The most records one `$GENERATE` may produce.
pub const MAX_GENERATE_RECORDS: u64 = 65_536;

/// Widest zero padding accepted in a modifier; BIND's buffer is 128 octets.
const MAX_GENERATE_WIDTH: u64 = 128;

//----------- Range ----------------------------------------------------------

/// A parsed `start-stop[/step]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) start: u32,
    pub(crate) stop: u32,
    pub(crate) step: u32,
}

impl Range {
    /// Parses the range token; numbers are non-negative 31-bit values.
    pub(crate) fn parse(text: &[u8]) -> Result<Self, String> {
        let bad = || {
            format!(
                "invalid $GENERATE range \"{}\"",
                String::from_utf8_lossy(text)
            )
        };
        let (span, step) = match text.iter().position(|&byte| byte == b'/') {
            Some(slash) => (&text[..slash], Some(&text[slash + 1..])),
            None => (text, None),
        };
        let dash = span.iter().position(|&byte| byte == b'-').ok_or_else(bad)?;
        let number = |digits: &[u8]| {
            crate::rdata::text::parse_number(digits, i32::MAX as u64).map(|value| value as u32)
        };
        let start = number(&span[..dash]).map_err(|_| bad())?;
        let stop = number(&span[dash + 1..]).map_err(|_| bad())?;
        let step = match step {
            Some(digits) => number(digits).map_err(|_| bad())?,
            None => 1,
        };
        if start > stop || step == 0 {
            return Err(bad());
        }
        let count = u64::from(stop - start) / u64::from(step) + 1;
        if count > MAX_GENERATE_RECORDS {
            return Err(format!(
                "$GENERATE range yields {count} records, more than the limit of {MAX_GENERATE_RECORDS}"
            ));
        }
        Ok(Range { start, stop, step })
    }

    /// The iterator values.
    pub(crate) fn values(self) -> impl Iterator<Item = u32> {
        (self.start..=self.stop).step_by(self.step as usize)
    }
}

//----------- expand ---------------------------------------------------------

/// Appends `template` with every `$` form replaced for `value`.
pub(crate) fn expand(template: &[u8], value: u32, out: &mut Vec<u8>) -> Result<(), String> {
    let mut index = 0;
    while index < template.len() {
        match template[index] {
            b'\\' => {
                out.push(b'\\');
                if let Some(&next) = template.get(index + 1) {
                    out.push(next);
                }
                index += 2;
            }
            b'$' if template.get(index + 1) == Some(&b'$') => {
                out.extend_from_slice(b"\\$");
                index += 2;
            }
            b'$' if template.get(index + 1) == Some(&b'{') => {
                let close = template[index..]
                    .iter()
                    .position(|&byte| byte == b'}')
                    .ok_or("unterminated ${...} in $GENERATE")?;
                let modifier = &template[index + 2..index + close];
                push_modified(modifier, value, out)?;
                index += close + 1;
            }
            b'$' => {
                out.extend_from_slice(value.to_string().as_bytes());
                index += 1;
            }
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    Ok(())
}

/// `offset[,width[,base]]` applied to `value`.
fn push_modified(modifier: &[u8], value: u32, out: &mut Vec<u8>) -> Result<(), String> {
    let bad = || {
        format!(
            "invalid $GENERATE modifier \"${{{}}}\"",
            String::from_utf8_lossy(modifier)
        )
    };
    let mut parts = modifier.split(|&byte| byte == b',');
    let offset_text = parts.next().ok_or_else(bad)?;
    let (negative, digits) = match offset_text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, offset_text),
    };
    let magnitude =
        crate::rdata::text::parse_number(digits, i32::MAX as u64).map_err(|_| bad())? as i64;
    let offset = if negative { -magnitude } else { magnitude };
    let width = match parts.next() {
        Some(text) => {
            crate::rdata::text::parse_number(text, MAX_GENERATE_WIDTH).map_err(|_| bad())? as usize
        }
        None => 0,
    };
    let base = match parts.next() {
        Some([base @ (b'd' | b'o' | b'x' | b'X' | b'n' | b'N')]) => *base,
        Some(_) => return Err(bad()),
        None => b'd',
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    let result = i64::from(value) + offset;
    let result =
        i32::try_from(result).map_err(|_| format!("$GENERATE value {result} out of range"))?;
    // Non-decimal bases print the 32-bit two's complement, as C's %x does.
    let unsigned = result as u32;
    let text = match base {
        b'd' => format!("{result:0width$}"),
        b'o' => format!("{unsigned:0width$o}"),
        b'x' => format!("{unsigned:0width$x}"),
        b'X' => format!("{unsigned:0width$X}"),
        _ => nibbles(unsigned, width, base == b'N'),
    };
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// Reversed nibbles joined by dots; `width` counts digits and dots (BIND).
fn nibbles(mut value: u32, mut width: usize, upper: bool) -> String {
    let digits = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut text = String::new();
    loop {
        text.push(digits[(value & 0xf) as usize] as char);
        value >>= 4;
        width = width.saturating_sub(1);
        if width > 0 || value != 0 {
            text.push('.');
            width = width.saturating_sub(1);
        }
        if value == 0 && width == 0 {
            return text;
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(template: &str, value: u32) -> Result<String, String> {
        let mut out = Vec::new();
        expand(template.as_bytes(), value, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn modifiers_match_bind() {
        // Expected texts from named-checkzone 9.18 on the same directives.
        assert_eq!(expanded("${0,5,n}", 1).unwrap(), "1.0.0");
        assert_eq!(expanded("x${0,4,N}y", 1).unwrap(), "x1.0.y");
        assert_eq!(expanded("o${0,4,o}", 10).unwrap(), "o0012");
        assert_eq!(expanded("d${-20,4,d}", 10).unwrap(), "d-010");
        assert_eq!(expanded("X${0,3,X}", 10).unwrap(), "X00A");
        assert_eq!(expanded("s$$$", 3).unwrap(), "s\\$3");
        assert_eq!(expanded("${-2000,0,n}", 1024).unwrap(), "0.3.c.f.f.f.f.f");
        assert_eq!(expanded("${0,3,n}", 1024).unwrap(), "0.0.4");
        assert_eq!(expanded("host$", 7).unwrap(), "host7");
        assert_eq!(expanded("1.2.3.${1}", 10).unwrap(), "1.2.3.11");
        assert!(expanded("foo${2147483647}", 1).is_err());
        assert!(expanded("${1,2,q}", 1).is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(
            Range::parse(b"1-3/2").unwrap().values().collect::<Vec<_>>(),
            [1, 3]
        );
        assert!(Range::parse(b"9--10").is_err());
        assert!(Range::parse(b"5-1").is_err());
        assert!(Range::parse(b"0-100000000").unwrap_err().contains("limit"));
        assert!(Range::parse(b"0-65535").is_ok());
    }
}
