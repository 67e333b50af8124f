#!/usr/bin/env python3
"""Whether a tern binary carries its XDP program.

crates/server/build.rs compiles xdp/tern_xdp.c with clang into an eBPF ELF
object that src/xdp/program.rs embeds with include_bytes!; without clang the
binary is built without it and `tern serve --xdp` refuses to start. This
looks for that object in the binary: an ELF header (64-bit, little-endian,
relocatable) whose machine is EM_BPF. The binary itself is an x86-64 or
arm64 ELF and embeds no other eBPF object, so one such header is the program.

    check-xdp-program.py BINARY [--expect auto|present|absent]

auto (the default) expects the program whenever a clang is where build.rs
looks for one (TERN_CLANG, else `clang` on PATH) and passes when there is no
clang: so `make release` fails when clang is installed but the build left
the program out (issue 22: cargo did not run build.rs again after clang was
installed). Exit status 0 when the expectation holds, 1 when not, 2 on a
usage error.
"""

import os
import shutil
import sys

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
ET_REL = 1
EM_BPF = 247


def carries_program(data):
    """True if `data` holds an eBPF relocatable ELF header anywhere but at 0."""
    at = data.find(ELF_MAGIC, 1)
    while at != -1:
        header = data[at : at + 20]
        if (
            len(header) == 20
            and header[4] == ELFCLASS64
            and header[5] == ELFDATA2LSB
            and int.from_bytes(header[16:18], "little") == ET_REL
            and int.from_bytes(header[18:20], "little") == EM_BPF
        ):
            return True
        at = data.find(ELF_MAGIC, at + 1)
    return False


def clang_build_rs_finds():
    """The clang build.rs would use, or None (the same lookup as build.rs)."""
    named = os.environ.get("TERN_CLANG")
    if named:
        return named
    return shutil.which("clang")


def main(argv):
    expect = "auto"
    args = list(argv[1:])
    if len(args) == 3 and args[1] == "--expect" and args[2] in ("auto", "present", "absent"):
        expect = args[2]
        args = args[:1]
    if len(args) != 1:
        print("usage: check-xdp-program.py BINARY [--expect auto|present|absent]", file=sys.stderr)
        return 2
    binary = args[0]
    with open(binary, "rb") as file:
        present = carries_program(file.read())
    clang = clang_build_rs_finds()
    if expect == "auto":
        expect = "present" if clang else "absent"
    state = "carries" if present else "lacks"
    print(f"{binary} {state} its XDP program (clang: {clang or 'not found'})")
    if present == (expect == "present"):
        return 0
    if expect == "present":
        print(
            f"error: clang is installed ({clang}) but {binary} was built without its XDP "
            "program: the build did not run crates/server/build.rs again after clang "
            "appeared. `cargo clean -p tern-server --release` and build again, and "
            "report it (issue 22).",
            file=sys.stderr,
        )
    else:
        print(f"error: {binary} was expected to lack its XDP program", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
