//! cargo-fuzz shim: the body is `tern_cache::fuzzing::forward_answer`, compiled and unit-tested
//! with the library.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tern_cache::fuzzing::forward_answer(data);
});
