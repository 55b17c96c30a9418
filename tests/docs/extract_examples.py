#!/usr/bin/env python3
"""Turns the C++ recipes of docs/extending.md into sources the docs_extending test builds.

A ```cpp block whose first line is `// src/PATH` is a new file: it is written
to OUT/PATH (OUT is on the test's include path, after src/). A block whose
first line is `// in src/PATH` goes into that existing registry file: its
`#include` lines after the file's last include, its other lines before the
registry's entry type (`struct ...Entry {`), and the lines after a
`// registry():` line at the end of `registry()`'s table. The result, the
production file up to the end of `registry()` with the recipe spliced in and
its namespaces closed, is written to OUT/spliced/<file>.inc; everything it
holds is in an anonymous namespace, so it links beside cifar_core's own copy.
OUT/new_sources.cpp includes every new .cpp file.

Any recipe that cannot be placed fails here, naming the block; a recipe that
does not compile fails the build of docs_extending.
"""
import argparse
import pathlib
import re
import sys

FENCE = re.compile(r"^```cpp[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
NEW_FILE = re.compile(r"^// src/(\S+)\s*$")
SPLICE = re.compile(r"^// in src/(\S+)\s*$")
REGISTRY_MARK = re.compile(r"^\s*// registry\(\):\s*$")


def fail(message: str) -> None:
    sys.exit(f"extract_examples.py: {message}")


def write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def splice(source: pathlib.Path, includes, code, entries, where: str) -> str:
    text = source.read_text()
    lines = text.splitlines(keepends=True)
    last_include = max((i for i, l in enumerate(lines) if l.startswith("#include")), default=None)
    if last_include is None:
        fail(f"{where}: {source} has no #include to put the recipe's beside")
    text = "".join(lines[: last_include + 1] + [l + "\n" for l in includes] + lines[last_include + 1 :])
    entry_type = re.search(r"^struct \w+Entry \{", text, re.M)
    if not entry_type:
        fail(f"{where}: {source} has no registry entry type (struct ...Entry {{)")
    text = text[: entry_type.start()] + "".join(l + "\n" for l in code) + "\n" + text[entry_type.start() :]
    registry = re.search(r"registry\(\) \{\n\s*static const std::vector<\w+> entries = \{\n(.*?)^(\s*)\};\n"
                         r"\s*return entries;\n\}\n", text, re.M | re.S)
    if not registry:
        fail(f"{where}: {source} has no registry() {{ static const std::vector<...> entries = {{ ... }}; }}")
    table_end = registry.start(2)
    text = (text[:table_end] + "".join(l + "\n" for l in entries) + text[table_end : registry.end()]
            + "\n}  // namespace\n}  // namespace cifar\n")
    return f"// Generated from {source.name} and docs/extending.md by tests/docs/extract_examples.py.\n" + text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc", type=pathlib.Path, required=True)
    parser.add_argument("--src", type=pathlib.Path, required=True, help="the repository's src/")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--expect", nargs="*", default=[], help="files under src/ that must receive a recipe")
    args = parser.parse_args()

    new_sources = []
    spliced = set()
    for number, match in enumerate(FENCE.finditer(args.doc.read_text()), start=1):
        block = match.group(1).rstrip("\n").split("\n")
        where = f"{args.doc.name}, C++ block {number}"
        if m := NEW_FILE.match(block[0]):
            path = m.group(1)
            if (args.src / path).exists():
                fail(f"{where}: src/{path} exists already; a recipe that changes it starts with '// in src/{path}'")
            write(args.out / path, "\n".join(block) + "\n")
            if path.endswith(".cpp"):
                new_sources.append(path)
        elif m := SPLICE.match(block[0]):
            path = m.group(1)
            marks = [i for i, l in enumerate(block) if REGISTRY_MARK.match(l)]
            if len(marks) != 1:
                fail(f"{where}: a recipe for src/{path} needs one '// registry():' line before its entries")
            body, entries = block[1 : marks[0]], block[marks[0] + 1 :]
            includes = [l for l in body if l.startswith("#include")]
            code = [l for l in body if not l.startswith("#include")]
            if not (args.src / path).is_file():
                fail(f"{where}: src/{path} does not exist")
            write(args.out / "spliced" / (pathlib.Path(path).name + ".inc"),
                  splice(args.src / path, includes, code, entries, where))
            spliced.add(path)
        else:
            fail(f"{where}: the first line must be '// src/PATH' (a new file) or '// in src/PATH' (an existing one)")
    missing = sorted(set(args.expect) - spliced)
    if missing:
        fail(f"no recipe adds to {', '.join('src/' + p for p in missing)}")
    write(args.out / "new_sources.cpp",
          "// Generated by tests/docs/extract_examples.py: the new files of docs/extending.md's recipes.\n"
          + "".join(f'#include "{p}"\n' for p in new_sources))
    return 0


if __name__ == "__main__":
    sys.exit(main())
