//! LOC (RFC 1876): `d1 [m1 [s1]] N|S d2 [m2 [s2]] E|W alt[m] [siz[m] [hp[m] [vp[m]]]]`.
//!
//! Wire: version 0, size, horizontal and vertical precision (each a
//! mantissa and power-of-ten exponent of centimetres), then latitude and
//! longitude in thousandths of an arc second offset by 2^31, and altitude
//! in centimetres above 100 000 m below the WGS 84 ellipsoid. The omitted
//! size and precisions default to 1 m, 10 000 m and 10 m (RFC 1876
//! section 3).

use super::{located, Fields, RdataError};

/// Default size, horizontal and vertical precision, in centimetres.
const DEFAULT_PRECISIONS_CM: [u64; 3] = [100, 1_000_000, 1_000];

/// Largest size or precision: 90 000 000.00 m.
const MAX_PRECISION_CM: u64 = 9_000_000_000;

/// Altitude offset (100 000 m) and the largest altitude, in centimetres.
const ALTITUDE_OFFSET_CM: i64 = 10_000_000;
const MAX_ALTITUDE_CM: i64 = 4_284_967_295;

/// The equator and prime meridian value of latitude and longitude.
const COORDINATE_ZERO: u32 = 1 << 31;

/// Parses LOC RDATA.
pub(super) fn parse(fields: &mut Fields<'_, '_>, out: &mut Vec<u8>) -> Result<(), RdataError> {
    let latitude = coordinate(fields, 90, (b'N', b'S'))?;
    let longitude = coordinate(fields, 180, (b'E', b'W'))?;
    let altitude_token = fields.expect("altitude")?;
    let (negative, centimetres) = located(
        &altitude_token,
        decimal_centimetres(strip_metres(altitude_token.text), true),
    )?;
    let altitude = if negative {
        -(centimetres as i64)
    } else {
        centimetres as i64
    };
    if !(-ALTITUDE_OFFSET_CM..=MAX_ALTITUDE_CM - ALTITUDE_OFFSET_CM).contains(&altitude) {
        return Err(RdataError::at(&altitude_token, "altitude out of range"));
    }
    let mut precisions = [0u8; 3];
    for (slot, default) in precisions.iter_mut().zip(DEFAULT_PRECISIONS_CM) {
        let value = match fields.next()? {
            None => default,
            Some(token) => {
                let (_, value) =
                    located(&token, decimal_centimetres(strip_metres(token.text), false))?;
                if value > MAX_PRECISION_CM {
                    return Err(RdataError::at(&token, "size or precision out of range"));
                }
                value
            }
        };
        *slot = encode_precision(value);
    }
    out.push(0);
    out.extend_from_slice(&precisions);
    out.extend_from_slice(&latitude.to_be_bytes());
    out.extend_from_slice(&longitude.to_be_bytes());
    out.extend_from_slice(&((altitude + ALTITUDE_OFFSET_CM) as u32).to_be_bytes());
    Ok(())
}

/// Degrees, optional minutes and seconds, then a hemisphere letter.
fn coordinate(
    fields: &mut Fields<'_, '_>,
    max_degrees: u64,
    (positive, negative): (u8, u8),
) -> Result<u32, RdataError> {
    let degrees_token = fields.expect("degrees")?;
    let degrees = located(
        &degrees_token,
        super::text::parse_number(degrees_token.text, max_degrees),
    )?;
    let mut milliseconds = degrees * 3_600_000;
    let mut step = 0;
    let hemisphere = loop {
        let token = fields.expect("hemisphere letter")?;
        if let [letter] = token.text {
            let letter = letter.to_ascii_uppercase();
            if letter == positive || letter == negative {
                break (letter == positive, token);
            }
        }
        match step {
            0 => {
                milliseconds += located(&token, super::text::parse_number(token.text, 59))? * 60_000
            }
            1 => {
                let (sign, centiseconds_scaled) = located(&token, decimal_thousandths(token.text))?;
                if sign || centiseconds_scaled >= 60_000 {
                    return Err(RdataError::at(&token, "seconds out of range"));
                }
                milliseconds += centiseconds_scaled;
            }
            _ => return Err(RdataError::at(&token, "expected a hemisphere letter")),
        }
        step += 1;
    };
    let (is_positive, token) = hemisphere;
    if milliseconds > max_degrees * 3_600_000 {
        return Err(RdataError::at(&token, "coordinate out of range"));
    }
    let milliseconds = milliseconds as u32;
    Ok(if is_positive {
        COORDINATE_ZERO + milliseconds
    } else {
        COORDINATE_ZERO - milliseconds
    })
}

fn strip_metres(text: &[u8]) -> &[u8] {
    match text.split_last() {
        Some((b'm' | b'M', rest)) => rest,
        _ => text,
    }
}

/// A decimal with at most `fraction_digits` decimals, scaled to an integer.
fn scaled_decimal(
    text: &[u8],
    fraction_digits: u32,
    signed: bool,
) -> Result<(bool, u64), &'static str> {
    const BAD: &str = "invalid decimal number";
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) if signed => (true, rest),
        _ => (false, text),
    };
    let (whole, fraction) = match text.iter().position(|&byte| byte == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &b""[..]),
    };
    if whole.is_empty() || fraction.len() > fraction_digits as usize {
        return Err(BAD);
    }
    let whole = super::text::parse_number(whole, u64::from(u32::MAX)).map_err(|_| BAD)?;
    let mut scaled = whole * 10u64.pow(fraction_digits);
    let mut factor = 10u64.pow(fraction_digits);
    for &digit in fraction {
        if !digit.is_ascii_digit() {
            return Err(BAD);
        }
        factor /= 10;
        scaled += u64::from(digit - b'0') * factor;
    }
    Ok((negative, scaled))
}

fn decimal_centimetres(text: &[u8], signed: bool) -> Result<(bool, u64), &'static str> {
    scaled_decimal(text, 2, signed)
}

fn decimal_thousandths(text: &[u8]) -> Result<(bool, u64), &'static str> {
    scaled_decimal(text, 3, false)
}

/// Mantissa and exponent of a centimetre value, rounding down (as BIND's
/// `precsize_aton`).
fn encode_precision(centimetres: u64) -> u8 {
    let mut exponent = 0u32;
    while exponent < 9 && centimetres >= 10u64.pow(exponent + 1) {
        exponent += 1;
    }
    let mantissa = (centimetres / 10u64.pow(exponent)).min(9) as u8;
    mantissa << 4 | exponent as u8
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_encoding() {
        assert_eq!(encode_precision(100), 0x12);
        assert_eq!(encode_precision(1_000_000), 0x16);
        assert_eq!(encode_precision(1_000), 0x13);
        assert_eq!(encode_precision(0), 0x00);
        assert_eq!(encode_precision(3_000), 0x33);
    }
}
