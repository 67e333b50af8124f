//! cargo-fuzz shim: the body is `tern_wire::fuzzing::frame`, compiled and unit-tested with the
//! library.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tern_wire::fuzzing::frame(data);
});
