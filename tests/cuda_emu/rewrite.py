#!/usr/bin/env python3
"""Rewrites a cuda/*.cu source into C++ for the CUDA emulator (tests/cuda_emu/).

Every launch `k<<<grid, block[, smem[, stream]]>>>(args);` becomes
`::emu::launch(::emu::KernelSite{"k", __FILE__, __LINE__, barriers}, grid, block, ..., [=] { k(args); });`
where `barriers` says whether the kernel can reach __syncthreads or a warp shuffle: its body,
or the body of a __device__ function it names (transitively, in this file or in the headers
given with --scan), mentions __syncthreads, __syncwarp or __shfl*. Such kernels run one fiber
per GPU thread; the others run each GPU thread as a plain call (the emulator aborts with a
clear message if a plain-call kernel reaches a barrier anyway). Each `__shared__` array is
refilled with 0xff bytes (NaN as float) at the start of every block, as fresh shared memory
holds garbage, not the previous block's values.

Line numbers are kept (a #line directive, and each replacement ends with the newlines of
the launch it replaces), so compiler messages point into the .cu file.

usage: rewrite.py IN.cu OUT.cpp [--scan HEADER ...] [--list]
"""
import re
import sys

SYNC = re.compile(r"\b(__syncthreads|__syncwarp|__shfl\w*)\b")
IDENT = re.compile(r"[A-Za-z_]\w*")


def strip_comments_and_strings(src):
    """Same length as src, comments and string/char literals blanked (newlines kept)."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for j in range(a, b):
            if out[j] != "\n":
                out[j] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def match_forward(s, i, open_c, close_c):
    """s[i] == open_c; index just past the matching close_c."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == open_c:
            depth += 1
        elif s[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    raise SystemExit("rewrite.py: unbalanced %s at offset %d" % (open_c, i))


def functions(code, qualifier):
    """(name, body) of every function definition carrying `qualifier`."""
    found = []
    for m in re.finditer(r"\b%s\b" % qualifier, code):
        paren = code.find("(", m.end())
        if paren < 0:
            continue
        names = IDENT.findall(code[m.end():paren])
        if not names:
            continue
        end_params = match_forward(code, paren, "(", ")")
        k = end_params
        while k < len(code) and code[k] not in "{;":
            k += 1
        if k >= len(code) or code[k] == ";":
            continue  # a declaration
        found.append((names[-1], code[k:match_forward(code, k, "{", "}")]))
    return found


def barrier_functions(codes):
    """Names of __device__ functions that can reach a barrier (transitively)."""
    devs = []
    for code in codes:
        devs += functions(code, "__device__")
    syncing = {name for name, body in devs if SYNC.search(body)}
    changed = True
    while changed:
        changed = False
        for name, body in devs:
            if name not in syncing and any(re.search(r"\b%s\b" % re.escape(s), body) for s in syncing):
                syncing.add(name)
                changed = True
    return syncing


def kernel_flags(code, syncing):
    flags = {}
    for name, body in functions(code, "__global__"):
        uses = bool(SYNC.search(body)) or any(re.search(r"\b%s\b" % re.escape(s), body) for s in syncing)
        flags[name] = flags.get(name, False) or uses
    return flags


def split_top_level(s):
    parts, depth, cur = [], 0, ""
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    parts.append(cur.strip())
    return parts


def rewrite(src, code, flags):
    out, pos, count = [], 0, 0
    while True:
        lt = code.find("<<<", pos)
        if lt < 0:
            break
        # the kernel expression before <<<: an identifier with optional <template args>
        e = lt
        while code[e - 1].isspace():
            e -= 1
        b = e
        if code[b - 1] == ">":
            depth = 0
            while True:
                b -= 1
                if code[b] == ">":
                    depth += 1
                elif code[b] == "<":
                    depth -= 1
                    if depth == 0:
                        break
        while b > 0 and (code[b - 1].isalnum() or code[b - 1] in "_:"):
            b -= 1
        kexpr = src[b:e].strip()
        name = IDENT.findall(kexpr.split("<")[0])[-1]
        gt = code.find(">>>", lt)
        cfg = split_top_level(code[lt + 3:gt])
        if not 2 <= len(cfg) <= 4:
            raise SystemExit("rewrite.py: launch of %s: expected 2 to 4 launch parameters" % name)
        p = gt + 3
        while code[p].isspace():
            p += 1
        if code[p] != "(":
            raise SystemExit("rewrite.py: launch of %s: no argument list" % name)
        end_args = match_forward(code, p, "(", ")")
        q = end_args
        while code[q].isspace():
            q += 1
        if code[q] != ";":
            raise SystemExit("rewrite.py: launch of %s: expected ';' after the arguments" % name)
        if name not in flags:
            raise SystemExit("rewrite.py: launch of %s, which is not a __global__ function of this file" % name)
        args = src[p + 1:end_args - 1]
        cfg_src = split_top_level(src[lt + 3:gt])
        newlines = src[b:q + 1].count("\n")
        out.append(src[pos:b])
        out.append('::emu::launch(::emu::KernelSite{"%s", __FILE__, __LINE__, %s}, %s, [=] { %s(%s); });%s'
                   % (name, "true" if flags[name] else "false", ", ".join(cfg_src), kexpr,
                      " ".join(args.split()), "\n" * newlines))
        pos = q + 1
        count += 1
    out.append(src[pos:])
    return "".join(out), count


SHARED = re.compile(r"__shared__\s+[^;{}()]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;")


def poison_shared(src, code):
    """After each `__shared__ T name[...];` add a call that refills the array with 0xff bytes
    (NaN as float) once per block, so reading an element the block never wrote shows."""
    out, pos = [], 0
    for m in SHARED.finditer(code):
        out.append(src[pos:m.end()])
        out.append(" ::emu::detail::fresh_shared(%s, sizeof(%s));" % (m.group(1), m.group(1)))
        pos = m.end()
    out.append(src[pos:])
    return "".join(out)


def main(argv):
    args = argv[1:]
    listing = "--list" in args
    args = [a for a in args if a != "--list"]
    scan = []
    if "--scan" in args:
        k = args.index("--scan")
        scan = args[k + 1:]
        args = args[:k]
    if len(args) != 2:
        raise SystemExit(__doc__)
    src_path, out_path = args
    src = open(src_path, encoding="utf-8").read()
    code = strip_comments_and_strings(src)
    headers = [strip_comments_and_strings(open(h, encoding="utf-8").read()) for h in scan]
    syncing = barrier_functions([code] + headers)
    flags = kernel_flags(code, syncing)
    text, count = rewrite(src, code, flags)
    text = poison_shared(text, strip_comments_and_strings(text))
    if listing:
        for name in sorted(flags):
            print("%-45s %s" % (name, "fibers" if flags[name] else "plain calls"))
    header = ("// Generated by tests/cuda_emu/rewrite.py from %s for the CUDA emulator; do not edit.\n"
              "// %d kernel launches rewritten.\n#line 1 \"%s\"\n" % (src_path, count, src_path))
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(header + text)


if __name__ == "__main__":
    main(sys.argv)
