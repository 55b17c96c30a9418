#!/usr/bin/env python3
"""Finds file names in comments and docs that name no file of the repository.

A comment that says "see startup_checks.hpp" after the file was renamed
sends the reader nowhere. This reads the comments of the C++, shell, Python
and CMake files under src/, tests/, tools/, jobs/, dev/ and cmake/, and the
whole text of the Markdown pages under docs/, and takes every word that
looks like a file of the project, one ending in a source extension below:
- a path whose first folder is one of the repository's top-level folders or
  one of src/'s or tests/'s folders (`jobs/run_cifar.sh`,
  `train/preflight.hpp`) must exist relative to the repository root, to
  src/, to tests/ or to the folder of the file that names it;
- a bare C++ file name in a C++ comment (`see preflight.hpp`) must be the
  name of some file of the repository.
Other names are someone else's (`torch/torch.h`, a peer's `airbench94.py`)
or placeholders (`PATH/x.py`, `path/to/x.py`) and are not checked, nor is a
new file that a page of docs/ shows whole (a code block whose first line is
`// src/FOLDER/NAME`, as tests/docs extracts them).

Prints each dangling name as FILE:LINE: NAME and exits 1 if there is any.
Usage: file_names.py [REPO_ROOT]   (default: the current folder)
"""
import pathlib
import re
import subprocess
import sys

AREAS = ("src", "tests", "tools", "jobs", "dev", "cmake")
CXX_EXTENSIONS = ("hpp", "cpp", "h", "cu", "cuh")
EXTENSIONS = CXX_EXTENSIONS + ("py", "sh", "slurm", "md", "cmake")
NAME = re.compile(r"(?<![\w./$<{*-])((?:\.{1,2}/)*(?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:%s))(?![\w/*-])"
                  % "|".join(EXTENSIONS))
# The first line of a docs page's code block that shows a new file whole.
NEW_FILE = re.compile(r"^// src/(\S+)$", re.M)
CXX = {".cpp", ".hpp", ".h", ".cu", ".cuh", ".cc"}
HASH = {".sh", ".py", ".cmake", ".slurm", ".txt", ".in", ".ini", ".yml", ".yaml", ".toml", ".cfg"}


def tracked(root: pathlib.Path) -> list[str]:
    """The repository's files: tracked, and new ones git does not ignore."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=root, check=True, capture_output=True).stdout.decode()
        return sorted({f for f in out.split("\0") if f and (root / f).is_file()})
    except (OSError, subprocess.CalledProcessError):
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                      if p.is_file() and ".git" not in p.parts and "build" not in p.parts)


def cxx_comments(text: str):
    """(line number, text) of each comment of a C++ file; string literals skipped."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield line, text[i + 2:end]
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                yield line + k, part
            line += text.count("\n", i, end)
            i = end + 2
            continue
        elif text.startswith('R"', i):  # raw string: R"delim( ... )delim"
            open_paren = text.find("(", i)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end
            line += text.count("\n", i, end)
            i = end + len(delim) + 2
            continue
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        i += 1


HASH_COMMENT = re.compile(r"(?:^|\s)#(?!!)(.*)$")


def hash_comments(text: str, python: bool):
    """(line number, text) of each # comment; a Python file's docstrings too."""
    in_doc = None
    for number, line in enumerate(text.split("\n"), 1):
        if python:
            if in_doc:
                yield number, line
                if in_doc in line:
                    in_doc = None
                continue
            stripped = line.strip()
            for quote in ('"""', "'''"):
                if stripped.startswith(quote):
                    yield number, stripped[3:]
                    if stripped.count(quote) == 1:
                        in_doc = quote
        match = HASH_COMMENT.search(line)
        if match and not line[:match.start()].rstrip().endswith(("$", "{")):
            yield number, match.group(1)


def lines_to_check(path: pathlib.Path, rel: str):
    text = path.read_text(errors="replace")
    suffix = path.suffix
    if rel.startswith("docs/") and suffix == ".md":
        yield from enumerate(text.split("\n"), 1)
    elif suffix in CXX:
        yield from cxx_comments(text)
    elif suffix in HASH or path.name == "CMakeLists.txt" or text.startswith("#!"):
        yield from hash_comments(text, suffix == ".py" or text.startswith("#!/usr/bin/env python"))


def main(root: pathlib.Path) -> int:
    files = tracked(root)
    known = set(files)
    basenames = {f.rsplit("/", 1)[-1] for f in files}
    # The first folders a checked path may start with.
    ours = {f.split("/")[0] for f in files if "/" in f}
    ours |= {f.split("/")[1] for f in files if f.startswith(("src/", "tests/")) and f.count("/") > 1}
    dangling, checked = [], 0
    for rel in files:
        if not (rel.split("/")[0] in AREAS or (rel.startswith("docs/") and rel.endswith(".md"))):
            continue
        checked += 1
        here = pathlib.PurePosixPath(rel).parent
        cxx = pathlib.PurePosixPath(rel).suffix[1:] in CXX_EXTENSIONS
        made = set()
        if rel.endswith(".md"):
            made = {f"src/{new}" for new in NEW_FILE.findall((root / rel).read_text(errors="replace"))}
        for number, line in lines_to_check(root / rel, rel):
            for name in NAME.findall(line):
                parts = pathlib.PurePosixPath(name).parts
                if name.startswith("."):  # ./NAME, ../NAME: from the file's own folder
                    if "/".join(_resolve((*here.parts, *parts))) in known:
                        continue
                elif len(parts) == 1:
                    if not cxx or name.rsplit(".", 1)[-1] not in CXX_EXTENSIONS or name in basenames:
                        continue
                else:
                    if parts[0] not in ours:
                        continue
                    candidates = {"/".join(_resolve((*base, *parts))) for base in ((), ("src",), ("tests",), here.parts)}
                    if candidates & (known | made):
                        continue
                dangling.append(f"{rel}:{number}: {name}")
    for d in dangling:
        print(d)
    print(f"file names: {checked} files read, {len(dangling)} dangling name(s)")
    if dangling:
        print("  fix: name the file as it is now (a path from the repository root or from src/), "
              "or say what it was without a file name")
    return 1 if dangling else 0


def _resolve(parts):
    """The parts of a relative path with . and .. taken out."""
    out = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part != ".":
            out.append(part)
    return out or ["."]


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
