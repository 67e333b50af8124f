//! Types whose presentation format is not a plain field sequence: APL
//! (RFC 3123), HIP (RFC 8005) and IPSECKEY (RFC 4025).

use super::text::{
    decode_base64, decode_hex, parse_ipv4, parse_ipv6, parse_name, parse_u8, NameRules,
};
use super::{located, Fields, RdataError};

//----------- APL ------------------------------------------------------------

/// APL: zero or more `[!]afi:address/prefix` items. Each item is written as
/// family, prefix, negation bit with the address length, and the address
/// with trailing zero octets removed (RFC 3123 section 4).
pub(super) fn parse_apl(fields: &mut Fields<'_, '_>, out: &mut Vec<u8>) -> Result<(), RdataError> {
    while let Some(token) = fields.next()? {
        located(&token, push_apl_item(token.text, out))?;
    }
    Ok(())
}

fn push_apl_item(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    const BAD: &str = "expected [!]family:address/prefix";
    let (negated, text) = match text.split_first() {
        Some((b'!', rest)) => (true, rest),
        _ => (false, text),
    };
    let colon = text.iter().position(|&byte| byte == b':').ok_or(BAD)?;
    let slash = text.iter().rposition(|&byte| byte == b'/').ok_or(BAD)?;
    if slash < colon {
        return Err(BAD);
    }
    let family = super::text::parse_u16(&text[..colon]).map_err(|_| BAD)?;
    let prefix = parse_u8(&text[slash + 1..]).map_err(|_| BAD)?;
    let address_text = &text[colon + 1..slash];
    let mut address = [0u8; 16];
    let length = match family {
        1 => {
            if prefix > 32 {
                return Err("IPv4 prefix longer than 32");
            }
            address[..4].copy_from_slice(&parse_ipv4(address_text)?);
            4
        }
        2 => {
            if prefix > 128 {
                return Err("IPv6 prefix longer than 128");
            }
            address = parse_ipv6(address_text)?;
            16
        }
        _ => return Err("APL address family must be 1 (IPv4) or 2 (IPv6)"),
    };
    let used = address[..length]
        .iter()
        .rposition(|&byte| byte != 0)
        .map_or(0, |last| last + 1);
    out.extend_from_slice(&family.to_be_bytes());
    out.push(prefix);
    out.push(if negated { 0x80 } else { 0 } | used as u8);
    out.extend_from_slice(&address[..used]);
    Ok(())
}

//----------- HIP ------------------------------------------------------------

/// HIP: `algorithm HIT-hex public-key-base64 [rendezvous-servers...]`.
pub(super) fn parse_hip(
    fields: &mut Fields<'_, '_>,
    names: NameRules<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    let algorithm = fields.expect("HIP algorithm")?;
    let algorithm = located(&algorithm, parse_u8(algorithm.text))?;
    let hit = fields.expect("HIT")?;
    scratch.clear();
    located(&hit, decode_hex(hit.text, scratch))?;
    if scratch.is_empty() || scratch.len() > 255 {
        return Err(RdataError::at(&hit, "HIT must be 1 to 255 octets"));
    }
    let hit_bytes = scratch.clone();
    let key = fields.expect("HIP public key")?;
    scratch.clear();
    located(&key, decode_base64(key.text, scratch))?;
    let key_length =
        u16::try_from(scratch.len()).map_err(|_| RdataError::at(&key, "public key too long"))?;
    out.push(hit_bytes.len() as u8);
    out.push(algorithm);
    out.extend_from_slice(&key_length.to_be_bytes());
    out.extend_from_slice(&hit_bytes);
    out.extend_from_slice(scratch);
    while let Some(token) = fields.next()? {
        let name = located(&token, parse_name(token.text, names))?;
        out.extend_from_slice(name.as_bytes());
    }
    Ok(())
}

//----------- IPSECKEY -------------------------------------------------------

/// IPSECKEY: `precedence gateway-type algorithm gateway [public-key]`,
/// where the gateway is `.` (type 0), an IPv4 (1) or IPv6 (2) address, or a
/// name (3).
pub(super) fn parse_ipseckey(
    fields: &mut Fields<'_, '_>,
    names: NameRules<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    for what in ["precedence", "gateway type", "algorithm"] {
        let token = fields.expect(what)?;
        out.push(located(&token, parse_u8(token.text))?);
    }
    let gateway_type = out[out.len() - 2];
    let gateway = fields.expect("gateway")?;
    match gateway_type {
        0 if gateway.text == b"." => {}
        0 => {
            return Err(RdataError::at(
                &gateway,
                "gateway type 0 needs '.' as gateway",
            ))
        }
        1 => out.extend_from_slice(&located(&gateway, parse_ipv4(gateway.text))?),
        2 => out.extend_from_slice(&located(&gateway, parse_ipv6(gateway.text))?),
        3 => out.extend_from_slice(located(&gateway, parse_name(gateway.text, names))?.as_bytes()),
        _ => {
            return Err(RdataError::at(
                &gateway,
                "gateway type must be 0, 1, 2 or 3",
            ))
        }
    }
    if let Some(first) = fields.rest(scratch)? {
        located(&first, decode_base64(scratch, out))?;
    }
    Ok(())
}
