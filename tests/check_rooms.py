#!/usr/bin/env python3
"""The layers and rooms keep their shape (docs/design.md):

  - dependencies point one way, cli -> tui -> lab -> core: core includes
    nothing of lab, tui or cli; lab nothing of tui or cli; tui nothing of
    cli;
  - lab and the layers above use core's public headers only (distlab/*.h),
    never a private one of core's folders;
  - a file of a lab room includes headers of its own room and of the rooms
    its meson.build says it depends on (lab_ROOM_dep), and those
    dependencies have no cycle, so there is no include cycle between rooms;
  - tui includes no core header but distlab/status.h: it reads lab's
    session model and never calls core itself.

Prints every breach with its file and line; exits 1 if there is any.

usage: check_rooms.py SOURCE_ROOT
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
problems = []


def sources(top):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1)


def rel(path):
    return os.path.relpath(path, ROOT)


def say(path, n, what):
    problems.append("%s:%d: %s" % (rel(path), n, what))


# ---- the rooms and what each may use ----

rooms = sorted(d for d in os.listdir(os.path.join(ROOT, "lab"))
               if os.path.isfile(os.path.join(ROOT, "lab", d, "meson.build")))
deps = {}
for room in rooms:
    with open(os.path.join(ROOT, "lab", room, "meson.build")) as f:
        text = f.read()
    lib = re.search(r"lab_%s_lib\s*=\s*static_library\((.*?)\n\S" % room, text, re.S)
    used = set(re.findall(r"\blab_(\w+?)_dep", lib.group(1) if lib else text))
    deps[room] = used - {room}
    for d in deps[room] - set(rooms):
        problems.append("lab/%s/meson.build: depends on lab_%s_dep, which is no room" % (room, d))


def cycle_from(room, path, seen):
    for d in sorted(deps.get(room, ())):
        if d in path:
            return path[path.index(d):] + [d]
        if d not in seen:
            seen.add(d)
            c = cycle_from(d, path + [d], seen)
            if c:
                return c
    return None


for room in rooms:
    c = cycle_from(room, [room], {room})
    if c:
        problems.append("lab rooms depend on each other in a cycle: %s" % " -> ".join(c))
        break

# ---- every include ----

LAYERS = {"core": ("lab/", "tui/", "cli/"), "lab": ("tui/", "cli/"), "tui": ("cli/",)}
for layer, forbidden in LAYERS.items():
    for path in sources(layer):
        for n, inc in includes(path):
            if inc.startswith(forbidden):
                say(path, n, "%s includes \"%s\": dependencies point cli -> tui -> lab -> core"
                    % (layer, inc))

# The terminal view reads lab's session model and never calls core itself
# (DESIGN.md): of core it may name only the status type.
for path in sources("tui"):
    for n, inc in includes(path):
        if inc.startswith("distlab/") and inc != "distlab/status.h":
            say(path, n, "tui includes \"%s\": the terminal view goes through lab, never core"
                % inc)

for layer in ("lab", "tui", "cli"):
    for path in sources(layer):
        here = os.path.dirname(path)
        room = rel(path).split(os.sep)[1] if layer == "lab" else None
        for n, inc in includes(path):
            if inc.startswith("distlab/") or inc == "dl_config.h":
                continue
            if inc.startswith(("lab/", "tui/", "cli/")):
                top = inc.split("/")[0]
                if layer == "lab" and top == "lab":
                    other = inc.split("/")[1] if inc.count("/") >= 2 else None
                    if other is None:
                        say(path, n, "\"%s\" is no room's header (lab/ROOM/name.h)" % inc)
                    elif other != room and other not in deps.get(room, ()):
                        say(path, n, "room %s includes \"%s\" of room %s, which its meson.build "
                                     "does not list (lab_%s_dep)" % (room, inc, other, other))
                continue
            if os.path.exists(os.path.join(here, inc)):
                continue  # a private header beside the file
            say(path, n, "includes \"%s\": above core, only core's public headers "
                         "(distlab/*.h) may be used" % inc)

for p in problems:
    print(p)
print("rooms: %s; %d problem(s)" % (", ".join("%s(%s)" % (r, " ".join(sorted(deps[r])))
                                              for r in rooms), len(problems)))
sys.exit(1 if problems else 0)
