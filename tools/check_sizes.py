#!/usr/bin/env python3
"""Size limits for src/ (issue #17): no file over 800 lines, no function body over 150 lines.

Usage: check_sizes.py [--list] [--self-test] [DIR]   (DIR defaults to the src/ next to this script)
  --list       also print every function over 60 lines (largest first is `| sort -rn`)
  --self-test  first check the checker on generated sources (the CTest case runs it so)

A function is a brace block opened after a parameter list ")" (with qualifiers, a trailing
return type or a constructor's initialiser list in between) at namespace or class scope; its
size is the number of lines from the line of its "{" to the line of its "}", lambdas and local
classes included. Comments, string and character literals (raw strings too) are blanked first,
so braces inside them do not count. Blocks opened after "=" at namespace scope are data
(initialisers, tables) and are not functions.

Files or functions that are tables of data may be exempted below, each with its reason.
Exits 1 and lists every violation when a limit is exceeded.
"""
import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150

# path relative to the scanned directory -> why it may exceed MAX_FILE_LINES
FILE_EXEMPTIONS = {
}
# (path, function name) -> why it may exceed MAX_FUNCTION_LINES
FUNCTION_EXEMPTIONS = {
}

SOURCE_EXTENSIONS = (".h", ".hpp", ".cc", ".cpp", ".cxx", ".inc")


def blank_literals(text):
    """Returns text with comments and string/char literal contents replaced by spaces
    (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(text[i:j]))
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) \
                or (c in "uUL8" and re.match(r'(?:u8|u|U|L)R"', text[i:i + 4]) and (i == 0 or not text[i - 1].isalnum())):
            q = text.find('"', i)
            p = text.find("(", q)
            delim = text[q + 1:p]
            end = text.find(")" + delim + '"', p)
            end = n if end < 0 else end + len(delim) + 2
            out.append(text[i:q + 1] + blank(text[q + 1:end - 1]) + '"')
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and (text[i - 1].isalnum()) and re.match(r"'[0-9a-fA-F]", text[i:i + 2]))):
            # a digit separator (1'000) is not a character literal
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    break
                j += 1
            out.append(c + blank(text[i + 1:j]) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


SCOPE_RE = re.compile(r"(?:^|[\s;}])(?:namespace|class|struct|union|enum)\b[^()]*$|^\s*extern\s*$", re.S)
NAME_RE = re.compile(r"([A-Za-z_~][\w:<>~,\s]*?(?:operator\s*[^\s(]+)?)\s*\((?:.|\n)*$")


def function_name(prefix):
    """The qualified name before the first top-level "(" of a declaration prefix."""
    depth = 0
    for k, ch in enumerate(prefix):
        if ch == "(":
            head = prefix[:k].rstrip()
            m = re.search(r"((?:[\w~]+::)*(?:operator\s*\S+|[\w~]+))$", head)
            return m.group(1) if m else head.split()[-1] if head.split() else "?"
    return "?"


def functions(text):
    """Yields (name, first line, last line) of every function body in blanked source text."""
    stack = []  # entries: ("scope"|"function"|"block"|"data", start line, name)
    prefix_start = 0
    line = 1
    for k, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch in ";":
            if not stack or stack[-1][0] == "scope":
                prefix_start = k + 1
        elif ch == "{":
            inside = any(s[0] in ("function", "data") for s in stack)
            if inside:
                stack.append(("block", line, ""))
            else:
                prefix = text[prefix_start:k]
                flat = " ".join(prefix.split())
                if SCOPE_RE.search(" " + flat) or flat.endswith("extern \"\""):
                    stack.append(("scope", line, ""))
                elif "(" in flat and not re.search(r"(?<![=!<>])=(?!=)[^()]*$", flat.split("(")[0]):
                    stack.append(("function", line, function_name(flat)))
                else:
                    stack.append(("data", line, ""))
            prefix_start = k + 1
        elif ch == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    yield name, start, line
            if not stack or stack[-1][0] == "scope":
                prefix_start = k + 1


def check(root, list_all=False):
    problems = []
    for dirpath, _, names in os.walk(root):
        for fn in sorted(names):
            if not fn.endswith(SOURCE_EXTENSIONS):
                continue
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if n_lines > MAX_FILE_LINES and rel not in FILE_EXEMPTIONS:
                problems.append(f"{rel}: {n_lines} lines (limit {MAX_FILE_LINES})")
            for name, first, last in functions(blank_literals(text)):
                size = last - first + 1
                if list_all and size > 60:
                    print(f"{size:5d}  {rel}:{first}  {name}")
                if size > MAX_FUNCTION_LINES and (rel, name) not in FUNCTION_EXEMPTIONS:
                    problems.append(f"{rel}:{first}: function {name} is {size} lines (limit {MAX_FUNCTION_LINES})")
    return problems


def self_test():
    """The checker flags a long file and a long function, and not a long table, a long
    comment or braces inside strings."""
    import tempfile
    body = "\n".join(f"  x += {i};" for i in range(160))
    table = ",\n".join(f"  {{{i}, {i}}}" for i in range(200))
    sources = {
        "long_function.cpp": f"namespace a {{\nint f(int x) {{\n{body}\n  return x;\n}}\n}}  // namespace a\n",
        "short_function.cpp": "struct S {\n  int g() const {\n    return 1;\n  }\n};\n",
        "table.cpp": f"const int kTable[][2] = {{\n{table}\n}};\n",
        "literals.cpp": "const char* s = \"{{{{\";\n/* { { */\nint h() { return '{'; }\n",
        "long_file.h": "// x\n" * (MAX_FILE_LINES + 1),
    }
    with tempfile.TemporaryDirectory() as d:
        for name, text in sources.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        problems = check(d)
    want = [f"long_file.h: {MAX_FILE_LINES + 1} lines", "long_function.cpp:2: function f is 163 lines"]
    for w in want:
        if not any(p.startswith(w) for p in problems):
            print(f"self-test: expected a violation starting with {w!r}, got {problems}")
            return False
    if len(problems) != len(want):
        print(f"self-test: unexpected violations {problems}")
        return False
    return True


def main(argv):
    list_all = "--list" in argv
    if "--self-test" in argv and not self_test():
        return 2
    args = [a for a in argv if a not in ("--list", "--self-test")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    problems = check(root, list_all)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} size limit violation(s); split the file or function (tools/check_sizes.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
