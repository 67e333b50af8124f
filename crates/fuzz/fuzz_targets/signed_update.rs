//! cargo-fuzz shim: the body is `tern_zones::fuzzing::signed_update`, compiled and unit-tested
//! with the library.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tern_zones::fuzzing::signed_update(data);
});
