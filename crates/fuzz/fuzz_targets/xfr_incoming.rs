//! cargo-fuzz shim: the body is `tern_xfr::fuzzing::incoming`, compiled and unit-tested with
//! the library.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tern_xfr::fuzzing::incoming(data);
});
