//! cargo-fuzz shim: the body is `tern_server::fuzzing::proxy_header`, compiled and unit-tested
//! with the library.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tern_server::fuzzing::proxy_header(data);
});
