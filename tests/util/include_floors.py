#!/usr/bin/env python3
"""Checks that src/'s includes run one way, down the floors.

Each folder of src/ sits on a floor, as src/floors.txt lists them; a file may
include headers of its own folder and of folders on lower floors, never of a
folder on its own floor or above, and no chain of includes comes back to the
file it started from. The table of floors in docs/architecture.md, which says
what each folder holds, must list the same folders on the same floors.
"""
import pathlib
import re
import sys

ARCHITECTURE_ROW = re.compile(r"^\| (\d+) \| `([^`/]+)/` \|", re.M)


def read_floors(src: pathlib.Path) -> list[list[str]]:
    """src/floors.txt: one line a floor, lowest first, of FOLDER:UNITY_GROUP words."""
    floors = []
    for line in (src / "floors.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            floors.append([word.split(":")[0] for word in line.split()])
    return floors


def docs_problems(floors: list[list[str]], doc: pathlib.Path) -> list[str]:
    """Where docs/architecture.md's table of floors differs from src/floors.txt."""
    if not doc.is_file():
        return []  # an installed or partial tree without the docs
    want = [(i + 1, folder) for i, floor in enumerate(floors) for folder in floor]
    have = [(int(n), folder) for n, folder in ARCHITECTURE_ROW.findall(doc.read_text())]
    problems = [f"docs/architecture.md: its table of floors has `{folder}/` on floor {n}, "
                "which src/floors.txt does not" for n, folder in have if (n, folder) not in want]
    problems += [f"docs/architecture.md: its table of floors lacks `{folder}/` on floor {n} (src/floors.txt)"
                 for n, folder in want if (n, folder) not in have]
    if not problems and have != want:
        problems.append("docs/architecture.md: its table of floors lists the folders in another order "
                        "than src/floors.txt")
    return problems


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(src: pathlib.Path) -> int:
    floors = read_floors(src)
    floor_of = {folder: i for i, floor in enumerate(floors) for folder in floor}
    problems = docs_problems(floors, src.parent / "docs" / "architecture.md")
    graph = {}
    files = sorted(p for p in src.rglob("*") if p.suffix in (".hpp", ".cpp", ".h", ".cu"))
    for path in files:
        rel = path.relative_to(src).as_posix()
        folder = rel.split("/")[0]
        if folder not in floor_of:
            problems.append(f"{rel}: folder '{folder}' has no floor in src/floors.txt")
            continue
        graph[rel] = []
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            target = inc.split("/")[0]
            if not (src / inc).is_file():
                continue  # a system or third-party header
            graph[rel].append(inc)
            if target == folder:
                continue
            if target not in floor_of:
                problems.append(f"{rel}: includes {inc}, whose folder has no floor")
            elif floor_of[target] >= floor_of[folder]:
                where = "the same floor" if floor_of[target] == floor_of[folder] else "a higher floor"
                problems.append(f"{rel} ({folder}) includes {inc}: {target} is on {where}")
    # Cycles among files: a depth-first search keeping the path.
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("include cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
    for p in problems:
        print(p)
    order = " < ".join("/".join(floor) for floor in floors)
    print(f"include floors: {len(files)} files, {sum(len(v) for v in graph.values())} project includes, "
          f"{len(problems)} problem(s); floors {order}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")))
