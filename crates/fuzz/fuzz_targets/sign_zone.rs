//! cargo-fuzz shim: the body is `tern_dnssec::fuzzing::sign`, compiled and unit-tested with
//! the library.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tern_dnssec::fuzzing::sign(data);
});
