//! TSIG against dnspython: `tests/tsig-vectors.txt` holds messages that
//! dnspython signed with a fixed clock (`tests/make-tsig-vectors.py`). What
//! tern signs must be byte for byte what dnspython signed, and what
//! dnspython signed must verify here.

use super::*;
use tern_wire::name::NameBuf;

const VECTORS: &str = include_str!("../../tests/tsig-vectors.txt");
const NOW: u64 = 1_700_000_000;
const SECRET: [u8; 32] = {
    let mut secret = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        secret[i] = i as u8 + 1;
        i += 1;
    }
    secret
};

struct Vector {
    unsigned: Vec<u8>,
    signed: Vec<u8>,
}

fn hex(text: &str) -> Vec<u8> {
    data_encoding::HEXLOWER.decode(text.as_bytes()).unwrap()
}

/// The vectors of one algorithm, by step name.
fn vectors(algorithm: Algorithm) -> Vec<(String, Vector)> {
    let vectors: Vec<_> = VECTORS
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            (fields[0] == algorithm.config_name()).then(|| {
                let vector = Vector {
                    unsigned: hex(fields[2]),
                    signed: hex(fields[3]),
                };
                (fields[1].to_string(), vector)
            })
        })
        .collect();
    assert_eq!(
        vectors.len(),
        7,
        "{algorithm}: query, 3 answers, 3 gap answers"
    );
    vectors
}

fn step<'v>(vectors: &'v [(String, Vector)], name: &str) -> &'v Vector {
    &vectors.iter().find(|(step, _)| step == name).unwrap().1
}

fn key(algorithm: Algorithm) -> Key {
    let name = NameBuf::from_text(b"Transfer-Key.", None).unwrap();
    Key::new(name.as_name(), algorithm, &SECRET)
}

/// Signs `vector.unsigned` with `session` and returns the result.
fn sign(session: &mut Session, vector: &Vector) -> Vec<u8> {
    let mut buf = vector.unsigned.clone();
    let len = buf.len();
    buf.resize(len + session.record_len(), 0);
    let new_len = session.sign(&mut buf, len, NOW).unwrap();
    assert_eq!(new_len, buf.len(), "record_len is exact");
    buf
}

#[test]
fn signs_a_query_and_a_stream_of_answers_as_dnspython_does() {
    for algorithm in Algorithm::ALL {
        let key = key(algorithm);
        let vectors = vectors(algorithm);
        let query = step(&vectors, "query");
        assert_eq!(
            sign(&mut Session::new(&key), query),
            query.signed,
            "{algorithm} query"
        );

        let keys = [key.clone()];
        let RequestCheck::Signed(mut session) = check_request(&keys, &query.signed, NOW) else {
            panic!("{algorithm}: dnspython's query does not verify");
        };
        for name in ["answer0", "answer1", "answer2"] {
            let answer = step(&vectors, name);
            assert_eq!(
                sign(&mut session, answer),
                answer.signed,
                "{algorithm} {name}"
            );
        }
    }
}

#[test]
fn verifies_dnspython_answers_with_and_without_an_unsigned_middle_message() {
    for algorithm in Algorithm::ALL {
        let key = key(algorithm);
        let vectors = vectors(algorithm);
        for prefix in ["answer", "gap"] {
            let mut session = Session::new(&key);
            sign(&mut session, step(&vectors, "query"));
            let signed: Vec<bool> = (0..3)
                .map(|i| {
                    let message = &step(&vectors, &format!("{prefix}{i}")).signed;
                    session.verify(message, NOW).unwrap()
                })
                .collect();
            let expected = if prefix == "gap" {
                [true, false, true]
            } else {
                [true; 3]
            };
            assert_eq!(signed, expected, "{algorithm} {prefix}");
        }
    }
}

#[test]
fn a_changed_octet_anywhere_in_the_signed_part_is_badsig() {
    let key = key(Algorithm::HmacSha256);
    let vectors = vectors(Algorithm::HmacSha256);
    let query = &step(&vectors, "query").signed;
    let keys = [key.clone()];
    let signed_len = TsigRecord::find(query).unwrap().unwrap().start;
    // Every octet of the message proper except ARCOUNT (changing it moves
    // where the TSIG record is looked for) and the ID (replaced by the
    // original ID when digesting).
    for at in (2..signed_len).filter(|at| !(10..12).contains(at)) {
        let mut forged = query.clone();
        forged[at] ^= 0x20;
        match check_request(&keys, &forged, NOW) {
            RequestCheck::Failed {
                error: TsigError::BadSig,
                ..
            } => {}
            // A flipped case bit in a label may turn it into another
            // letter; a flipped length octet may make it unparseable.
            RequestCheck::Failed {
                error: TsigError::Malformed(_),
                ..
            } => {}
            other => panic!("octet {at}: {other:?}"),
        }
    }
    // The ID alone may change (a forwarder may rewrite it): the original ID
    // is what was signed.
    let mut rewritten = query.clone();
    rewritten[0] ^= 0xff;
    assert!(matches!(
        check_request(&keys, &rewritten, NOW),
        RequestCheck::Signed(_)
    ));
}

#[test]
fn unknown_key_wrong_algorithm_and_bad_mac_and_time() {
    let vectors = vectors(Algorithm::HmacSha256);
    let query = &step(&vectors, "query").signed;
    let now = NOW;

    let other_name = NameBuf::from_text(b"other-key.", None).unwrap();
    let other = [Key::new(
        other_name.as_name(),
        Algorithm::HmacSha256,
        &SECRET,
    )];
    assert!(matches!(
        check_request(&other, query, now),
        RequestCheck::Failed {
            error: TsigError::BadKey,
            session: None,
            ..
        }
    ));
    let wrong_algorithm = [key(Algorithm::HmacSha512)];
    assert!(matches!(
        check_request(&wrong_algorithm, query, now),
        RequestCheck::Failed {
            error: TsigError::BadKey,
            ..
        }
    ));
    let name = NameBuf::from_text(b"transfer-key.", None).unwrap();
    let wrong_secret = [Key::new(
        name.as_name(),
        Algorithm::HmacSha256,
        b"not the secret",
    )];
    assert!(matches!(
        check_request(&wrong_secret, query, now),
        RequestCheck::Failed {
            error: TsigError::BadSig,
            session: None,
            ..
        }
    ));

    // Just inside the fudge, and one second outside it on either side.
    let keys = [key(Algorithm::HmacSha256)];
    for (now, ok) in [
        (NOW + 300, true),
        (NOW - 300, true),
        (NOW + 301, false),
        (NOW - 301, false),
    ] {
        let check = check_request(&keys, query, now);
        match (ok, check) {
            (true, RequestCheck::Signed(_)) => {}
            (
                false,
                RequestCheck::Failed {
                    error: TsigError::BadTime,
                    session: Some(_),
                    ..
                },
            ) => {}
            (_, other) => panic!("now {now}: {other:?}"),
        }
    }
}

#[test]
fn error_answers_carry_the_tsig_error_the_rfc_asks_for() {
    let vectors = vectors(Algorithm::HmacSha256);
    let query = &step(&vectors, "query").signed;
    let answer = &step(&vectors, "answer0").unsigned;
    let key = key(Algorithm::HmacSha256);
    let keys = [key.clone()];

    // BADTIME: signed over the request's MAC, the request's time, the
    // server's time as other data; the client's session verifies it and
    // reports the error.
    let later = NOW + 1000;
    let check = check_request(&keys, query, later);
    let mut buf = answer.clone();
    let len = buf.len();
    buf.resize(len + 200, 0);
    let new_len = check.write_error(&mut buf, len, later).unwrap().unwrap();
    let record = TsigRecord::find(&buf[..new_len]).unwrap().unwrap();
    assert_eq!(record.error, BADTIME);
    assert_eq!(record.time_signed, NOW);
    assert_eq!(record.other, &time_bytes(later));
    assert_eq!(record.mac.len(), 32);
    let mut client = Session::new(&key);
    sign(&mut client, step(&vectors, "query"));
    assert_eq!(
        client.verify(&buf[..new_len], NOW),
        Err(TsigError::Peer(BADTIME))
    );

    // BADKEY: an unsigned TSIG with the error and no MAC.
    let check = check_request(&[], query, NOW);
    let mut buf = answer.clone();
    buf.resize(len + 200, 0);
    let new_len = check.write_error(&mut buf, len, NOW).unwrap().unwrap();
    let record = TsigRecord::find(&buf[..new_len]).unwrap().unwrap();
    assert_eq!((record.error, record.mac.len()), (BADKEY, 0));
    assert_eq!(record.key_name.as_bytes(), b"\x0ctransfer-key\x00");
    assert_eq!(record.original_id, 0x1234);

    // A valid request calls for no error record.
    let check = check_request(&keys, query, NOW);
    assert!(check.write_error(&mut buf, len, NOW).is_none());
}

#[test]
fn a_stream_must_start_signed_and_may_not_run_unsigned_for_long() {
    let key = key(Algorithm::HmacSha256);
    let vectors = vectors(Algorithm::HmacSha256);
    let mut session = Session::new(&key);
    sign(&mut session, step(&vectors, "query"));
    let unsigned = &step(&vectors, "answer1").unsigned;
    assert_eq!(session.verify(unsigned, NOW), Err(TsigError::Unsigned));

    let mut session = Session::new(&key);
    sign(&mut session, step(&vectors, "query"));
    session
        .verify(&step(&vectors, "answer0").signed, NOW)
        .unwrap();
    for _ in 0..MAX_UNSIGNED_RUN {
        assert_eq!(session.verify(unsigned, NOW), Ok(false));
    }
    assert_eq!(
        session.verify(unsigned, NOW),
        Err(TsigError::TooManyUnsigned)
    );
}

#[test]
fn malformed_tsig_records_are_refused() {
    let vectors = vectors(Algorithm::HmacSha256);
    let query = &step(&vectors, "query").signed;
    let start = TsigRecord::find(query).unwrap().unwrap().start;
    let keys = [key(Algorithm::HmacSha256)];
    let malformed = |message: &[u8]| {
        matches!(
            check_request(&keys, message, NOW),
            RequestCheck::Failed {
                error: TsigError::Malformed(_),
                record: None,
                ..
            }
        )
    };
    // Class IN instead of ANY.
    let class_at = start + b"\x0cTransfer-Key\x00".len() + 2;
    let mut bad = query.clone();
    bad[class_at + 1] = 1;
    assert!(malformed(&bad));
    // A non-zero TTL.
    let mut bad = query.clone();
    bad[class_at + 5] = 1;
    assert!(malformed(&bad));
    // RDATA one octet short (RDLENGTH too) and one octet long.
    let rdlen_at = class_at + 6;
    let rdlen = u16::from_be_bytes([query[rdlen_at], query[rdlen_at + 1]]);
    let mut short = query[..query.len() - 1].to_vec();
    short[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen - 1).to_be_bytes());
    assert!(malformed(&short));
    let mut long = query.clone();
    long.push(0);
    long[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen + 1).to_be_bytes());
    assert!(malformed(&long));
    // The TSIG followed by another record.
    let mut not_last = query.clone();
    not_last.extend_from_slice(b"\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00");
    not_last[11] += 1;
    assert!(malformed(&not_last));
    // A MAC shorter than the RFC's minimum (16 for SHA-256): MAC size 15.
    let record = TsigRecord::find(query).unwrap().unwrap();
    let mac_size_at = start + b"\x0cTransfer-Key\x00".len() + 10 + record.algorithm.len() + 8;
    let mut truncated = query[..mac_size_at].to_vec();
    truncated.extend_from_slice(&15u16.to_be_bytes());
    truncated.extend_from_slice(&record.mac[..15]);
    truncated.extend_from_slice(&query[mac_size_at + 2 + 32..]);
    truncated[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen - 17).to_be_bytes());
    assert!(matches!(
        check_request(&keys, &truncated, NOW),
        RequestCheck::Failed {
            error: TsigError::Malformed("MAC length out of range"),
            ..
        }
    ));
    // Truncated to the minimum, the MAC still verifies (a local policy the
    // RFC allows).
    let mut truncated = query[..mac_size_at].to_vec();
    truncated.extend_from_slice(&16u16.to_be_bytes());
    truncated.extend_from_slice(&record.mac[..16]);
    truncated.extend_from_slice(&query[mac_size_at + 2 + 32..]);
    truncated[rdlen_at..rdlen_at + 2].copy_from_slice(&(rdlen - 16).to_be_bytes());
    assert!(matches!(
        check_request(&keys, &truncated, NOW),
        RequestCheck::Signed(_)
    ));
}

#[test]
fn signing_into_a_buffer_without_room_changes_nothing() {
    let key = key(Algorithm::HmacSha256);
    let vectors = vectors(Algorithm::HmacSha256);
    let query = step(&vectors, "query");
    let mut session = Session::new(&key);
    let mut buf = query.unsigned.clone();
    let len = buf.len();
    buf.resize(len + session.record_len() - 1, 0);
    let before = buf.clone();
    assert_eq!(session.sign(&mut buf, len, NOW), Err(TruncationError));
    assert_eq!(buf, before);
    assert_eq!(session.sign(&mut buf, 5, NOW), Err(TruncationError));
}

#[test]
fn algorithm_names() {
    for algorithm in Algorithm::ALL {
        let name = Name::from_wire(algorithm.wire_name()).unwrap();
        if algorithm != Algorithm::HmacMd5 {
            assert_eq!(name.to_string(), format!("{}.", algorithm.config_name()));
        }
        assert_eq!(Algorithm::from_wire_name(name), Some(algorithm));
        let upper = algorithm.config_name().to_ascii_uppercase();
        assert_eq!(Algorithm::from_config_name(&upper), Some(algorithm));
    }
    assert_eq!(
        Algorithm::from_config_name("hmac-md5"),
        Some(Algorithm::HmacMd5)
    );
    assert_eq!(
        Name::from_wire(Algorithm::HmacMd5.wire_name())
            .unwrap()
            .to_string(),
        "HMAC-MD5.SIG-ALG.REG.INT."
    );
    assert_eq!(Algorithm::from_config_name("hmac-md4"), None);
    assert_eq!(Algorithm::HmacSha1.min_mac_len(), 10);
    assert_eq!(Algorithm::HmacSha512.min_mac_len(), 32);
}
