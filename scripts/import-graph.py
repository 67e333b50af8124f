#!/usr/bin/env python3
"""Import circles between the files of each crate (issue 23).

STYLE.md 1.5, "Circles inside a crate": every arrow between two files of a
crate points one way; a type that two files share gets a module of its own
that imports neither of them. This script draws, for each crate under
crates/, the graph of its src/**/*.rs files and reports every circle in it.

    import-graph.py [REPO]

REPO is the repository's top directory (default: the one holding this
script). Prints each crate's circles, one line per arrow with where it is
taken; exit status 0 when every circle is one of KNOWN_CIRCLES and each of
those is still there, 1 otherwise (a new circle, or a known one that is gone
and should leave the list), 2 on a usage error.

What counts as an arrow from file A to file B: a path in A's code that names
B's module or an item in it. Those paths are

  - `use` declarations (`use crate::cores::Core;`, `use super::{a, b::C};`,
    `pub use request::UdpAnswer;`), each leaf of the tree one path;
  - paths in the code that start with `crate::`, `$crate::`, `super::`,
    `self::`, or with the name of a module declared in A (`raw::parse(..)`
    in config/mod.rs names config/raw.rs).

A path is resolved over the crate's module tree, which is read from the file
names (src/a.rs and src/a/mod.rs are module `a`, src/a/b.rs is `a::b`; no
crate here uses #[path]): the arrow goes to the file of the longest prefix
that is a file's module, so `crate::tcp::serve` is an arrow to tcp.rs, and
a path into an inline `mod x { .. }` lands on the file holding it. When the
rest of the path names an item that file only imports (a re-export, such as
`pub use ring::Xsk;` in xdp/mod.rs or `pub use builder::ZoneBuilder;` in
lib.rs), the arrow follows the import to the file that defines the item.
Paths to other crates (std, tern_wire, ..) are not arrows, nor is a file
naming itself, nor a bare `mod x;` declaration.

Not counted:

  - Arrows up the tree, from a file to a module it lies in: the crate root
    (lib.rs, main.rs) or its parent's mod.rs (`super::CLASSIC_UDP_SIZE` in
    worker/answer.rs). A module's files see what the module keeps for them
    by the tree's design, as they see the root's types; the arrows down
    (a mod.rs or lib.rs using its own modules) do count. So the root is in
    no circle, and a mod.rs only in one through a file outside its
    directory.
  - Test code: every item under `#[cfg(test)]` (`mod tests { .. }` in a file,
    test-only helpers and fields) and every file of a module declared under
    `#[cfg(test)]` (`mod tests;` -> x/tests.rs). Tests may reach anywhere in
    their crate; the rule is about the code that ships.
  - Comments and doc comments (an intra-doc link [`crate::x`] is no import)
    and the contents of string and character literals.

Python 3.11 standard library only; this is a reading of the source text, not
of rustc's resolution, which is enough for the code in this repository (no
#[path], no glob imports between files outside tests).
"""

import pathlib
import sys

# Circles known on the day this check was added, waiting for their fix
# (issue 23): each is the set of files (relative to the crate's src/) a
# reported circle must lie within to be tolerated. Remove an entry in the
# commit that breaks its circle; the check fails while an entry is stale.
KNOWN_CIRCLES: dict = {}

# How many re-exports in a row the resolution follows (a bound, not a limit
# the code here comes near: the longest chain is one).
MAX_REEXPORT_HOPS = 8

PUNCTUATION_PAIRS = {"(": ")", "[": "]", "{": "}"}


#----------- Reading the source ----------------------------------------------


def tokens_of(text):
    """The identifiers and punctuation of Rust source, as (text, line) pairs.

    Comments are dropped; string, byte-string, raw-string, character and
    number literals become one "<literal>" token each, so that a "{" in a
    string does not count as a brace. `::` is one token.
    """
    out = []
    i, line, end = 0, 1, len(text)

    def skip_quoted(j, quote):
        # From just after an opening quote to just after the closing one.
        nonlocal line
        while j < end and text[j] != quote:
            if text[j] == "\\":
                j += 1
            elif text[j] == "\n":
                line += 1
            j += 1
        return j + 1

    while i < end:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            while i < end and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            depth, i = 1, i + 2  # block comments nest in Rust
            while i < end and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c.isalpha() or c == "_":
            j = i
            while j < end and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in ("r", "br", "cr") and j < end and text[j] in "#\"":
                # A raw string r"..", r#".."#: no escapes, ends at the quote
                # followed by as many '#' as it opened with.
                hashes = 0
                while j < end and text[j] == "#":
                    hashes, j = hashes + 1, j + 1
                if j < end and text[j] == '"':
                    closing = '"' + "#" * hashes
                    stop = text.find(closing, j + 1)
                    stop = end if stop < 0 else stop + len(closing)
                    line += text.count("\n", j, stop)
                    out.append(("<literal>", line))
                    i = stop
                    continue
                if word == "r" and hashes == 1:  # a raw identifier, r#type
                    i = j
                    continue
            if word in ("b", "c") and j < end and text[j] in "\"'":
                out.append(("<literal>", line))
                i = skip_quoted(j + 1, text[j])
                continue
            out.append((word, line))
            i = j
        elif c.isdigit():
            j = i
            while j < end and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(("<literal>", line))
            i = j
        elif c == '"':
            out.append(("<literal>", line))
            i = skip_quoted(i + 1, '"')
        elif c == "'":
            # A character literal ('x', '\n', '\u{7f}') or a lifetime ('a).
            if i + 1 < end and text[i + 1] == "\\":
                out.append(("<literal>", line))
                i = skip_quoted(i + 1, "'")
            elif i + 2 < end and text[i + 2] == "'":
                out.append(("<literal>", line))
                i += 3
            else:
                i += 1  # a lifetime: its name follows as an identifier
        elif text.startswith("::", i):
            out.append(("::", line))
            i += 2
        else:
            out.append((c, line))
            i += 1
    return out


def group_end(toks, i):
    """Index just past the bracket group opening at toks[i]."""
    depth = 0
    while i < len(toks):
        if toks[i][0] in PUNCTUATION_PAIRS:
            depth += 1
        elif toks[i][0] in PUNCTUATION_PAIRS.values():
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def item_end(toks, i):
    """Index just past the item, field or statement starting at toks[i].

    It ends at a `;` or `,` outside brackets, after a `{ .. }` group at its
    own level, or before a bracket that closes the enclosing group.
    """
    depth = 0
    while i < len(toks):
        t = toks[i][0]
        if t in PUNCTUATION_PAIRS:
            depth += 1
        elif t in PUNCTUATION_PAIRS.values():
            depth -= 1
            if depth < 0:
                return i
            if depth == 0 and t == "}":
                return i + 1
        elif depth == 0 and t in (";", ","):
            return i + 1
        i += 1
    return i


def use_paths(toks, i, prefix, out):
    """Expand the use tree at toks[i] into (path, bound name) pairs.

    Appends to out; returns the index after the tree. `use a::{self, b::C
    as D, e::*}` gives (a, a), (a b C, D) and (a e *, None).
    """
    path = list(prefix)
    while i < len(toks):
        t = toks[i][0]
        if t == "::":
            i += 1
        elif t == "{":
            i += 1
            while i < len(toks) and toks[i][0] != "}":
                i = use_paths(toks, i, path, out)
                if i < len(toks) and toks[i][0] == ",":
                    i += 1
            return i + 1
        elif t == "*":
            out.append((path + ["*"], None))
            return i + 1
        elif t.isidentifier():
            if t == "self" and path:  # `a::{self}` is module a itself
                name = path[-1]
            else:
                path.append(t)
                name = t
            i += 1
            if i < len(toks) and toks[i][0] == "::":
                continue
            if i + 1 < len(toks) and toks[i][0] == "as":
                name, i = toks[i + 1][0], i + 2
            out.append((path, None if name == "_" else name))
            return i
        else:
            return i
    return i


def is_test_attribute(toks, i, j):
    """Whether the attribute toks[i:j] (`# [ .. ]`) is `#[cfg(test)]`."""
    return [t for t, _ in toks[i:j]] == ["#", "[", "cfg", "(", "test", ")", "]"]


class FileReading:
    """What one file says: its `use` imports, paths and test modules."""

    def __init__(self, module, toks):
        self.module = module
        # (module the path is written in, path, line), for every path.
        self.paths = []
        # module -> {bound name: (module the use is in, path)}, top-level uses.
        self.imports = {}
        # Child modules declared under #[cfg(test)] (their files are tests).
        self.test_children = set()
        # File modules declared here with `mod x;`.
        self.children = set()
        self.read(toks)

    def read(self, toks):
        # Inline modules open around the current token: (module, the brace
        # depth their `}` brings back).
        stack = [(self.module, -1)]
        depth = 0
        i = 0
        while i < len(toks):
            t, line = toks[i]
            module = stack[-1][0]
            if t == "#" and i + 1 < len(toks) and toks[i + 1][0] == "[":
                j = group_end(toks, i + 1)
                if is_test_attribute(toks, i, j):
                    # Skip further attributes, note a `mod x;`, skip the item.
                    while j + 1 < len(toks) and toks[j][0] == "#" and toks[j + 1][0] == "[":
                        j = group_end(toks, j + 1)
                    k = j
                    while k < len(toks) and toks[k][0] in ("pub", "(", "crate", "super", ")"):
                        k += 1
                    if k + 2 < len(toks) and toks[k][0] == "mod" and toks[k + 2][0] == ";":
                        self.test_children.add(module + (toks[k + 1][0],))
                    j = item_end(toks, j)
                i = j
                continue
            if t == "mod" and i + 2 < len(toks) and toks[i + 1][0].isidentifier():
                name, after = toks[i + 1][0], toks[i + 2][0]
                if after == ";":
                    self.children.add(module + (name,))
                    i += 3
                    continue
                if after == "{":
                    depth += 1
                    stack.append((module + (name,), depth - 1))
                    i += 3
                    continue
            if t == "use":
                found = []
                i = use_paths(toks, i + 1, [], found)
                for path, name in found:
                    self.paths.append((module, path, line))
                    if name is not None and len(stack) == 1 and depth == 0:
                        self.imports.setdefault(module, {})[name] = (module, path)
                continue
            if t in PUNCTUATION_PAIRS:
                depth += 1
            elif t in PUNCTUATION_PAIRS.values():
                depth -= 1
                if t == "}" and len(stack) > 1 and depth == stack[-1][1]:
                    stack.pop()
            elif (
                t.isidentifier()
                and i + 1 < len(toks)
                and toks[i + 1][0] == "::"
                and (i == 0 or toks[i - 1][0] not in ("::", "."))
            ):
                # The start of a path: collect `a::b::c`. Whether it names a
                # module of this crate is decided when resolving it.
                path = [t]
                j = i + 1
                while j + 1 < len(toks) and toks[j][0] == "::" and toks[j + 1][0].isidentifier():
                    path.append(toks[j + 1][0])
                    j += 2
                if t in ("crate", "super", "self") or len(path) > 1:
                    self.paths.append((module, path, line))
                i = j
                continue
            i += 1


#----------- The graph -------------------------------------------------------


def module_of(relative):
    """The module path of a file under src/: ('a', 'b') for a/b.rs."""
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def resolve(path, module, files, imports):
    """The module whose file defines what `path`, written in `module`, names.

    None for a path outside the crate. `files` maps file modules to files,
    `imports` module -> {name: (module, path)} for the re-exports to follow.
    """
    for _ in range(MAX_REEXPORT_HOPS):
        first = path[0]
        if first == "crate":
            full = list(path[1:])
        elif first in ("super", "self"):
            base = list(module)
            rest = list(path)
            while rest and rest[0] in ("super", "self"):
                if rest.pop(0) == "super":
                    base.pop()
            full = base + rest
        elif module + (first,) in files:  # a child module: `raw::parse`
            full = list(module) + list(path)
        else:
            return None  # another crate, or an item that is no module
        # The longest prefix that is a file's module.
        cut = len(full)
        while tuple(full[:cut]) not in files:
            cut -= 1
        target, rest = tuple(full[:cut]), full[cut:]
        imported = imports.get(target, {}).get(rest[0]) if rest else None
        if imported is None:
            return target
        module, path = imported[0], list(imported[1]) + rest[1:]
    return target


def crate_graph(src):
    """The crate's arrows: {(from file, to file): (line, path text)}."""
    files, readings = {}, {}
    for file in sorted(src.rglob("*.rs")):
        relative = file.relative_to(src)
        module = module_of(relative)
        files[module] = relative
        readings[relative] = FileReading(module, tokens_of(file.read_text()))

    # Files of modules declared under #[cfg(test)], and all below them.
    tests = set().union(*(r.test_children for r in readings.values()))
    kept = {
        m: f for m, f in files.items() if not any(m[: len(t)] == t for t in tests)
    }
    imports = {}
    for reading in readings.values():
        for module, names in reading.imports.items():
            imports.setdefault(module, {}).update(names)

    arrows = {}
    for module, relative in kept.items():
        for written_in, path, line in readings[relative].paths:
            target = resolve(path, written_in, files, imports)
            if target is None or target not in kept or target == module:
                continue
            if module[: len(target)] == target:
                continue  # up the tree, to the parent or the root: no arrow
            arrows.setdefault((relative, kept[target]), (line, "::".join(path)))
    return arrows


def circles(arrows):
    """The strongly connected components of more than one file (Tarjan)."""
    graph = {}
    for a, b in arrows:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for next_node in sorted(graph[node]):
            if next_node not in index:
                visit(next_node)
                low[node] = min(low[node], low[next_node])
            elif next_node in on_stack:
                low[node] = min(low[node], index[next_node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


#----------- Report ----------------------------------------------------------


def main(argv):
    if len(argv) > 2:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    repo = pathlib.Path(argv[1] if len(argv) == 2 else pathlib.Path(__file__).parent.parent)
    crates = sorted(p.parent for p in repo.glob("crates/*/src") if p.is_dir())
    if not crates:
        print(f"no crates/*/src under {repo}", file=sys.stderr)
        return 2
    failed = False
    total = 0
    for crate in crates:
        arrows = crate_graph(crate / "src")
        known = KNOWN_CIRCLES.get(crate.name, [])
        seen_known = set()
        for component in circles(arrows):
            total += 1
            members = {str(f) for f in component}
            matching = [n for n, k in enumerate(known) if members <= k]
            if matching:
                seen_known.add(matching[0])
                verdict = "known (issue 23)"
            else:
                verdict = "NEW"
                failed = True
            print(f"crates/{crate.name}: circle ({verdict}): {', '.join(sorted(members))}")
            for (a, b), (line, text) in sorted(arrows.items()):
                if str(a) in members and str(b) in members:
                    print(f"    {a} -> {b}   ({a}:{line}: {text})")
        for n, k in enumerate(known):
            if n not in seen_known:
                failed = True
                print(
                    f"crates/{crate.name}: no circle lies within the known {sorted(k)}:"
                    " if it is broken, remove it from KNOWN_CIRCLES in"
                    " scripts/import-graph.py (if it grew, it is listed above as NEW)"
                )
    print(f"{total} circle(s) in {len(crates)} crates")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
