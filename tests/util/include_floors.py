#!/usr/bin/env python3
"""Checks that src/'s includes run one way, down the floors.

Each folder of src/ sits on a floor; a file may include headers of its own
folder and of folders on lower floors, never of a folder on its own floor or
above, and no chain of includes comes back to the file it started from.
A new folder must be given its floor here (docs/architecture.md says why each
folder sits where it does).
"""
import pathlib
import re
import sys

# Lowest first.
FLOORS = [
    ["util"],
    ["integrity", "config"],
    ["mpi", "gpu"],
    ["comm"],
    ["placement", "process"],
    ["data"],
    ["pack", "model"],
    ["optim"],
    ["step"],
    ["eval"],
    ["outputs"],
    ["checkpoint", "report"],
    ["train"],
    ["app"],
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(src: pathlib.Path) -> int:
    floor_of = {folder: i for i, floors in enumerate(FLOORS) for folder in floors}
    problems = []
    graph = {}
    files = sorted(p for p in src.rglob("*") if p.suffix in (".hpp", ".cpp", ".h", ".cu"))
    for path in files:
        rel = path.relative_to(src).as_posix()
        folder = rel.split("/")[0]
        if folder not in floor_of:
            problems.append(f"{rel}: folder '{folder}' has no floor in {pathlib.Path(__file__).name}")
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
    floors = " < ".join("/".join(f) for f in FLOORS)
    print(f"include floors: {len(files)} files, {sum(len(v) for v in graph.values())} project includes, "
          f"{len(problems)} problem(s); floors {floors}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "src")))
