//! # tern-cache: core-local pre-serialized answers
//!
//! (Being written: see the issue on thread-per-core serving.)
