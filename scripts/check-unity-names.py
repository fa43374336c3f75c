#!/usr/bin/env python3
"""Fails when a file's private helper could change meaning in a unity build (docs/design.md,
"Inside a module").

CI's sanitized build and the Debian package compile each module (and each test binary) in
batches of several sources. In one batch, a function defined in one file's anonymous namespace
is visible to the files after it: an unqualified call there may then find that helper instead of
the function it meant (the helper hides a name of an enclosing namespace), or pick it as a
better overload. Nothing fails to compile; the program just does something else. So:
  (1) a function defined in an anonymous namespace must not share its name with a function
      declared at namespace scope in a header of its own module or of core;
  (2) two files of one module (one test directory) must not both define a helper of that name
      in their anonymous namespaces, whatever the signatures.
Each finding is printed as file:line: name, and what it collides with.

Usage: check-unity-names.py [ROOT]   (ROOT: the repository; default this script's parent)
"""
import os
import re
import sys

# A function definition or declaration starting at column 0: "<type> Name(" (Name capitalized,
# as the project names functions), not a call or a macro.
FUNC = re.compile(r'^(?:(?:static|inline|constexpr|template\s*<[^>]*>)\s+)*'
                  r'[A-Za-z_][\w:<>,\*&\s]*?[\s\*&>]([A-Z]\w*)\s*\(')
ANON_OPEN = re.compile(r'^namespace\s*\{')
ANON_CLOSE = re.compile(r'^\}\s*//\s*namespace\s*$')


def header_names(paths):
    """Names of functions declared at column 0 of the headers (namespace scope)."""
    names = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.startswith(("//", "#", " ", "}")):
                    continue
                m = FUNC.match(line)
                if m:
                    names.setdefault(m.group(1), f"{path}:{lineno}")
    return names


def anon_helpers(path):
    """(name, line) of each function defined at column 0 inside an anonymous namespace."""
    out, anon = [], False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if ANON_OPEN.match(line):
                anon = True
                continue
            if ANON_CLOSE.match(line):
                anon = False
                continue
            if not anon or line.startswith(("//", "#", " ", "}")):
                continue
            m = FUNC.match(line)
            if m and not line.rstrip().endswith(";"):
                out.append((m.group(1), lineno))
    return out


def files_under(d, ext):
    for dirpath, _, files in os.walk(d):
        if "testdata" in dirpath.split(os.sep):
            continue
        for name in sorted(files):
            if name.endswith(ext):
                yield os.path.join(dirpath, name)


def check_group(label, sources, visible, errors):
    seen = {}
    for path in sources:
        for name, lineno in anon_helpers(path):
            where = f"{path}:{lineno}"
            if name in visible:
                errors.append(f"{where}: {name}: a helper hides {name} declared at {visible[name]} "
                              f"(rename the helper)")
            if name in seen:
                errors.append(f"{where}: {name}: {label} already has a helper {name} at "
                              f"{seen[name]} (rename one)")
            else:
                seen[name] = where


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    core = header_names(files_under("src/core", ".h"))
    errors = []
    for module in sorted(os.listdir("src")):
        mdir = os.path.join("src", module)
        if not os.path.isdir(mdir):
            continue
        visible = dict(core)
        visible.update(header_names(files_under(mdir, ".h")))
        check_group(f"module {module}", list(files_under(mdir, ".cc")), visible, errors)
    testing = header_names(files_under("tests/testing", ".h"))
    if os.path.isdir("tests"):
        for d in sorted(os.listdir("tests")):
            tdir = os.path.join("tests", d)
            # tests/scripts holds planted trees for the checks, not test sources.
            if not os.path.isdir(tdir) or d == "scripts":
                continue
            visible = dict(core)
            visible.update(testing)
            visible.update(header_names(files_under(tdir, ".h")))
            check_group(f"test directory {d}", list(files_under(tdir, ".cc")), visible, errors)
    # The TSan build's one test binary (CMakeLists.txt, tsan_tests) batches api's and store's
    # tests together: a helper name may not be defined in both directories either (each
    # directory on its own was checked above).
    in_api = {}
    for path in files_under("tests/api", ".cc"):
        for name, lineno in anon_helpers(path):
            in_api.setdefault(name, f"{path}:{lineno}")
    for path in files_under("tests/store", ".cc"):
        for name, lineno in anon_helpers(path):
            if name in in_api:
                errors.append(f"{path}:{lineno}: {name}: the TSan test binary (tests/api + "
                              f"tests/store) already has a helper {name} at {in_api[name]} "
                              f"(rename one)")
    for e in errors:
        print(e)
    if errors:
        print(f"unity names: {len(errors)} helper(s) to rename (docs/design.md, 'Inside a module')")
        return 1
    print("unity names: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
