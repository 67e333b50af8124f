//! The `tern` binary as an operator uses it, as real processes on
//! 127.0.0.1: `check`, `dump`, `serve` with its configuration, signals
//! (reload, stop, counters) and `tern stats`. Every wait is bounded.

mod cli;
mod config;
mod control;
mod reload;
mod secondary;
mod stats;
mod stop;
mod util;
