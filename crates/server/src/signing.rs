//! What the answering paths share about TSIG (RFC 8945): the clock the
//! signatures use, and the short answers written around a signature (an
//! error echoing the question, the answer to a request whose signature
//! failed, a truncated answer).

use std::time::{SystemTime, UNIX_EPOCH};

use tern_wire::build::MessageBuilder;
use tern_wire::parse::MessageView;
use tern_wire::types::Rcode;
use tern_xfr::axfr::MAX_MESSAGE;
use tern_xfr::tsig::RequestCheck;

/// Seconds since the epoch, as TSIG counts them (0 before 1970).
pub(crate) fn unix_time() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// An answer with `rcode` echoing the query's ID, opcode, RD and
/// question; `None` if `out` cannot hold it.
pub(crate) fn error_answer(query: &MessageView<'_>, rcode: Rcode, out: &mut [u8]) -> Option<usize> {
    let mut builder = head(query, out)?;
    builder.set_rcode(rcode);
    Some(builder.finish())
}

/// The query's header (QR, AA and TC set) and question: what a signed
/// answer too large for the client's UDP size becomes before it is signed
/// (RFC 8945 section 5.3).
pub(crate) fn truncated_answer(query: &MessageView<'_>, out: &mut [u8]) -> Option<usize> {
    let mut builder = head(query, out)?;
    builder.set_aa(true);
    builder.set_tc(true);
    Some(builder.finish())
}

/// The answer to a request whose TSIG check failed: FORMERR when the
/// record is malformed, else NOTAUTH with the TSIG record RFC 8945 section
/// 5.3.2 asks for (unsigned for BADKEY and BADSIG, signed for BADTIME).
pub(crate) fn failed_check(
    failed: RequestCheck<'_>,
    query: &MessageView<'_>,
    now: u64,
    out: &mut [u8],
) -> Option<usize> {
    let rcode = match &failed {
        RequestCheck::Failed { error, .. } if error.code().is_none() => Rcode::FORMERR,
        _ => Rcode::NOTAUTH,
    };
    let len = error_answer(query, rcode, out)?;
    match failed.write_error(out, len, now) {
        Some(Ok(len)) => Some(len),
        _ => Some(len),
    }
}

fn head<'b>(query: &MessageView<'_>, out: &'b mut [u8]) -> Option<MessageBuilder<'b>> {
    let mut builder = MessageBuilder::new(out, MAX_MESSAGE).ok()?;
    let header = query.header();
    builder.set_id(header.id());
    builder.set_qr(true);
    builder.set_opcode(header.opcode().0);
    builder.set_rd(header.rd());
    if let Some(question) = query.question() {
        builder.push_question_bytes(question.bytes).ok()?;
    }
    Some(builder)
}
