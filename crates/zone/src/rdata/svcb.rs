//! SVCB and HTTPS (RFC 9460): `priority target [key[=value]]...`.
//!
//! Supported keys: `mandatory` (0), `alpn` (1), `no-default-alpn` (2),
//! `port` (3), `ipv4hint` (4), `ech` (5), `ipv6hint` (6), `dohpath` (7,
//! RFC 9461), `ohttp` (8, RFC 9540) and `keyNNNNN` for any number, whose
//! value is opaque octets (as Knot reads it). Values are character-strings (quoted or
//! not); list values (`mandatory`, `alpn`, hints) are comma-separated, and
//! in `alpn` a comma or backslash inside an item is escaped a second time
//! (`\,` and `\\` after the first decoding), as in RFC 9460 appendix A.1.
//!
//! Parameters are written sorted by key; a repeated key is an error, and so
//! is a `mandatory` list that names `mandatory`, repeats a key, or names a
//! key the record does not carry (RFC 9460 section 8).

use super::text::{
    decode_base64, decode_text, parse_ipv4, parse_ipv6, parse_name, parse_u16, NameRules,
};
use super::{located, Fields, RdataError};

/// Key numbers of RFC 9460 section 14.3.2 and later registrations.
const KEY_MANDATORY: u16 = 0;
const KEY_ALPN: u16 = 1;
const KEY_NO_DEFAULT_ALPN: u16 = 2;
const KEY_PORT: u16 = 3;
const KEY_IPV4HINT: u16 = 4;
const KEY_ECH: u16 = 5;
const KEY_IPV6HINT: u16 = 6;
const KEY_DOHPATH: u16 = 7;
const KEY_OHTTP: u16 = 8;

/// Key names by number.
const KEY_NAMES: [&str; 9] = [
    "mandatory",
    "alpn",
    "no-default-alpn",
    "port",
    "ipv4hint",
    "ech",
    "ipv6hint",
    "dohpath",
    "ohttp",
];

/// Parses SVCB/HTTPS RDATA.
pub(super) fn parse(
    fields: &mut Fields<'_, '_>,
    names: NameRules<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    let priority = fields.expect("SvcPriority")?;
    out.extend_from_slice(&located(&priority, parse_u16(priority.text))?.to_be_bytes());
    let target = fields.expect("TargetName")?;
    if target.quoted {
        return Err(RdataError::at(&target, "quoted TargetName"));
    }
    out.extend_from_slice(located(&target, parse_name(target.text, names))?.as_bytes());

    let mut params: Vec<(u16, Vec<u8>, super::Token<'_>)> = Vec::new();
    let mut mandatory: Option<(Vec<u16>, super::Token<'_>)> = None;
    while let Some(token) = fields.next()? {
        if token.quoted {
            return Err(RdataError::at(&token, "quoted SvcParam"));
        }
        let (key, value) = located(&token, parse_param(token.text, scratch))?;
        if key == KEY_MANDATORY {
            let keys = value
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect();
            mandatory = Some((keys, token));
        }
        params.push((key, value, token));
    }
    params.sort_by_key(|(key, _, _)| *key);
    if let Some(pair) = params.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        // The sort is stable: the second token is the later repetition.
        return Err(RdataError::at(
            &pair[1].2,
            format!("duplicate SvcParamKey {}", key_name(pair[0].0)),
        ));
    }
    if let Some((keys, token)) = mandatory {
        for key in keys {
            if params
                .binary_search_by_key(&key, |(key, _, _)| *key)
                .is_err()
            {
                return Err(RdataError::at(
                    &token,
                    format!("mandatory key {} is missing from the record", key_name(key)),
                ));
            }
        }
    }
    for (key, value, token) in &params {
        let length = u16::try_from(value.len())
            .map_err(|_| RdataError::at(token, "SvcParamValue too long"))?;
        out.extend_from_slice(&key.to_be_bytes());
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(value);
    }
    Ok(())
}

/// The presentation name of a key.
fn key_name(key: u16) -> String {
    match KEY_NAMES.get(usize::from(key)) {
        Some(name) => (*name).to_string(),
        None => format!("key{key}"),
    }
}

/// A key name or `keyNNNNN`.
fn parse_key(text: &[u8]) -> Result<u16, &'static str> {
    if let Some(index) = KEY_NAMES.iter().position(|name| name.as_bytes() == text) {
        return Ok(index as u16);
    }
    parse_key_number(text)
}

/// `keyNNNNN`.
fn parse_key_number(text: &[u8]) -> Result<u16, &'static str> {
    match text.strip_prefix(b"key") {
        Some(digits) if !digits.is_empty() && digits.len() <= 5 => {
            parse_u16(digits).map_err(|_| "invalid SvcParamKey number")
        }
        _ => Err("unknown SvcParamKey"),
    }
}

/// One `key[=value]` token: the key number and the wire value.
fn parse_param(text: &[u8], scratch: &mut Vec<u8>) -> Result<(u16, Vec<u8>), &'static str> {
    let (key_text, raw_value) = match text.iter().position(|&byte| byte == b'=') {
        Some(equals) => (&text[..equals], Some(&text[equals + 1..])),
        None => (text, None),
    };
    // `keyNNNNN` is the generic form: its value is opaque even when NNNNN
    // is a key with a syntax of its own (Knot accepts `key7` with no value).
    let generic = parse_key_number(key_text).is_ok();
    let key = parse_key(key_text)?;
    let Some(raw) = raw_value else {
        if generic {
            return Ok((key, Vec::new()));
        }
        return match key {
            KEY_NO_DEFAULT_ALPN | KEY_OHTTP => Ok((key, Vec::new())),
            KEY_MANDATORY..=KEY_DOHPATH => Err("this SvcParamKey needs a value"),
            _ => Ok((key, Vec::new())),
        };
    };
    if matches!(key, KEY_NO_DEFAULT_ALPN | KEY_OHTTP) {
        return Err("this SvcParamKey takes no value");
    }
    let raw = match raw {
        [b'"', inner @ .., b'"'] => inner,
        _ if raw.contains(&b'"') => return Err("misplaced quote in SvcParamValue"),
        _ => raw,
    };
    scratch.clear();
    decode_text(raw, scratch)?;
    let value = &scratch[..];
    let mut wire = Vec::with_capacity(value.len());
    if generic {
        wire.extend_from_slice(value);
        return Ok((key, wire));
    }
    match key {
        KEY_MANDATORY => {
            let mut keys = Vec::new();
            for item in split_list(value)? {
                let key = parse_key(&item)?;
                if key == KEY_MANDATORY {
                    return Err("mandatory must not list itself");
                }
                if keys.contains(&key) {
                    return Err("duplicate key in mandatory");
                }
                keys.push(key);
            }
            keys.sort_unstable();
            for key in keys {
                wire.extend_from_slice(&key.to_be_bytes());
            }
        }
        KEY_ALPN => {
            for item in split_list(value)? {
                if item.len() > 255 {
                    return Err("alpn identifier longer than 255 octets");
                }
                wire.push(item.len() as u8);
                wire.extend_from_slice(&item);
            }
        }
        KEY_NO_DEFAULT_ALPN | KEY_OHTTP => {
            if !value.is_empty() {
                return Err("this SvcParamKey takes no value");
            }
        }
        KEY_PORT => {
            wire.extend_from_slice(&parse_u16(value).map_err(|_| "invalid port")?.to_be_bytes())
        }
        KEY_IPV4HINT => {
            for item in split_list(value)? {
                wire.extend_from_slice(&parse_ipv4(&item)?);
            }
        }
        KEY_ECH => {
            if value.is_empty() {
                return Err("ech needs a value");
            }
            decode_base64(value, &mut wire)?;
        }
        KEY_IPV6HINT => {
            for item in split_list(value)? {
                wire.extend_from_slice(&parse_ipv6(&item)?);
            }
        }
        KEY_DOHPATH => {
            if value.is_empty() || core::str::from_utf8(value).is_err() {
                return Err("dohpath must be a non-empty UTF-8 URI template");
            }
            wire.extend_from_slice(value);
        }
        _ => wire.extend_from_slice(value),
    }
    Ok((key, wire))
}

/// Splits a decoded value at unescaped commas; `\,` and `\\` are the only
/// escapes at this level. Items must not be empty.
fn split_list(value: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    let mut items = Vec::new();
    let mut item = Vec::new();
    let mut index = 0;
    while index < value.len() {
        match value[index] {
            b'\\' => match value.get(index + 1) {
                Some(&escaped @ (b',' | b'\\')) => {
                    item.push(escaped);
                    index += 2;
                    continue;
                }
                _ => return Err("invalid escape in a list value (only \\, and \\\\)"),
            },
            b',' => {
                if item.is_empty() {
                    return Err("empty item in a list value");
                }
                items.push(core::mem::take(&mut item));
            }
            byte => item.push(byte),
        }
        index += 1;
    }
    if item.is_empty() {
        return Err("empty item in a list value");
    }
    items.push(item);
    Ok(items)
}
