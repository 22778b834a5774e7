"""A lab's pieces: the manifest labs/NAME/pieces, and finding and stubbing
each piece's C function.

The manifest has one piece a line, `FILE:FUNCTION  what the student writes`
(blank lines and lines from `#` on are left out). FUNCTION is a function
defined in FILE (a .c file or a header's static inline); `*` instead stands
for the whole file, which the skeleton takes from FILE.skeleton. Nothing in
the kernel marks a piece: a function renamed, moved to another file or
defined twice is found missing here, and the lab check says so.

A function is found by a small C lexer (comments, strings and character
constants skipped): at brace depth 0, NAME followed by a parameter list and
then `{`. Its stub keeps the signature, and its body becomes a TODO(LAB)
comment, a (void) for each parameter and `return 0;` (or a zeroed struct)
when it returns something; static functions and variables of the file that
only the old body used get a (void) too, so -Wunused-* stays quiet.
"""

import os
import re
import textwrap

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class PieceError(Exception):
    pass


def read_manifest(root, lab):
    """[(file, function, todo)] of labs/LAB/pieces, in order."""
    path = os.path.join(root, "labs", lab, "pieces")
    if not os.path.isfile(path):
        raise PieceError(f"{path}: no such manifest (labs/{lab}/pieces)")
    out = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where, _, todo = line.partition(" ")
        file, sep, func = where.rpartition(":")
        if not sep or not file or not func or not todo.strip():
            raise PieceError(f"{path}:{n}: want `FILE:FUNCTION  what is missing`, got `{line}`")
        out.append((file, func, " ".join(todo.split())))
    return out


def depths(text):
    """Per character: the brace depth there, or -1 inside a comment, string
    or character constant."""
    d = [0] * len(text)
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        two = text[i : i + 2]
        end = None
        if two == "//":
            end = text.find("\n", i)
        elif two == "/*":
            end = text.find("*/", i + 2) + 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            end = j
        if end is not None:
            end = n - 1 if end < 0 else end
            for k in range(i, end + 1):
                d[k] = -1
            i = end + 1
            continue
        if c == "{":
            d[i] = depth
            depth += 1
        elif c == "}":
            depth -= 1
            d[i] = depth
        else:
            d[i] = depth
        i += 1
    return d


def matching(text, d, i, open_c, close_c):
    """Index of the close_c matching the open_c at i (code only)."""
    level = 0
    for k in range(i, len(text)):
        if d[k] < 0:
            continue
        if text[k] == open_c:
            level += 1
        elif text[k] == close_c:
            level -= 1
            if level == 0:
                return k
    raise PieceError("unbalanced " + open_c + close_c)


def definitions(text, d, name):
    """[(name_start, params_open, params_close, body_open, body_close)] of
    every definition of function name at file scope."""
    found = []
    for m in re.finditer(r"\b" + re.escape(name) + r"\b", text):
        i = m.start()
        if d[i] != 0:
            continue
        j = m.end()
        while j < len(text) and text[j].isspace():
            j += 1
        if j >= len(text) or text[j] != "(":
            continue
        close = matching(text, d, j, "(", ")")
        k = close + 1
        while k < len(text) and text[k].isspace():
            k += 1
        if k < len(text) and text[k] == "{" and d[k] == 0:
            found.append((i, j, close, k, matching(text, d, k, "{", "}")))
    return found


def find(text, file, name):
    """The one definition of name in text, or PieceError saying why not."""
    defs = definitions(text, depths(text), name)
    if not defs:
        raise PieceError(f"{file}: no function {name}() is defined here any more")
    if len(defs) > 1:
        raise PieceError(f"{file}: {name}() is defined {len(defs)} times")
    return defs[0]


def parameter_names(params):
    """The names of a parameter list's parameters ("void": none)."""
    parts, level, cur = [], 0, ""
    for c in params:
        level += c in "([" and 1 or 0
        level -= c in ")]" and 1 or 0
        if c == "," and level == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    names = []
    for p in (x.strip() for x in parts):
        if not p or p == "void" or p == "...":
            continue
        fnptr = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", p)
        words = IDENT.findall(re.sub(r"\[[^\]]*\]", "", p))
        names.append(fnptr.group(1) if fnptr else words[-1])
    return names


def return_statement(text, name_start):
    """What the stub returns: nothing for void, a zeroed struct for a struct
    returned by value, else 0."""
    line_start = text.rfind("\n", 0, name_start) + 1
    ret = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", text[line_start:name_start])
    words = [w for w in IDENT.findall(ret) if w not in ("static", "inline", "extern")]
    if "*" in ret:
        return "return 0;"
    if words == ["void"] or not words:
        return ""
    if words[0] in ("struct", "union"):
        return "return (" + " ".join(words) + "){0};"
    return "return 0;"


def stub_body(lab, todo, params, ret, indent="    "):
    lines = ["{"]
    for w in textwrap.wrap(f"TODO({lab}): {todo}", 96 - len(indent)):
        lines.append(f"{indent}// {w}")
    lines += [f"{indent}(void){p};" for p in params]
    if ret:
        lines.append(indent + ret)
    lines.append("}")
    return "\n".join(lines)


def file_statics(text):
    """Names of the static functions and variables defined at file scope."""
    d = depths(text)
    names = set()
    for m in re.finditer(r"^static\b[^;{=]*", text, re.M):
        if d[m.start()] != 0:
            continue
        head = m.group(0)
        if "inline" in head.split():
            continue  # an unused static inline draws no warning
        fn = re.search(r"([A-Za-z_]\w*)\s*\($", head.strip()) or re.search(
            r"([A-Za-z_]\w*)\s*\(", re.sub(r"__attribute__\s*\(\(.*?\)\)", "", head)
        )
        var = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*$", head.strip())
        m2 = fn or var
        if m2:
            names.add(m2.group(1))
    return names


def uses(text, name):
    d = depths(text)
    return sum(1 for m in re.finditer(r"\b" + re.escape(name) + r"\b", text) if d[m.start()] >= 0)


def stub_file(text, file, lab, pieces):
    """text with each (function, todo) of pieces stubbed."""
    before = {n: uses(text, n) for n in file_statics(text)}
    stubbed = []
    for func, todo in pieces:
        name_start, p_open, p_close, b_open, b_close = find(text, file, func)
        params = parameter_names(text[p_open + 1 : p_close])
        body = stub_body(lab, todo, params, return_statement(text, name_start))
        text = text[:b_open] + body + text[b_close + 1 :]
        stubbed.append(func)
    # A static only the old bodies used (a stubbed one too): a (void) in
    # another stub, after its TODO comment.
    orphans = [n for n in sorted(before) if before[n] > 1 and uses(text, n) == 1]
    for n in orphans:
        host = next((f for f in stubbed if f != n), None)
        if host is None:
            continue
        _, _, _, b_open, _ = find(text, file, host)
        at = text.find("\n", b_open)
        while text.startswith("\n    //", at):
            at = text.find("\n", at + 1)
        text = text[:at] + f"\n    (void){n}; // only the code to write uses it" + text[at:]
    return text
