#!/usr/bin/python3
"""Every link between the docs resolves, and so does every doc section the code names.

- A Markdown link [text](path#anchor) in any tracked .md file names a file that exists, and an
  anchor that is one of that file's headings as GitHub renders it (or an explicit <a id>).
- Any tracked file (sources, tests, scripts, manifests, docs) that writes docs/NAME.md#anchor,
  or docs/NAME.md followed by a quoted section title ("docs/replay.md, \"Speed\""), names a file
  and a heading that exist. A quoted title matches a heading that starts with it.

Run from anywhere: python3 test/docs/links_test.py (make test runs it). Exits 1 with one line per
broken reference. The self-test at the start checks the slug rule and the checker on a small tree
of its own, so the test cannot pass by finding nothing.
"""
import os
import re
import subprocess
import sys
import tempfile

TOP = os.environ.get("SLICEFIT_TOP") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

SELF = "test/docs/links_test.py"  # its own examples name files that do not exist
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
DOC_ANCHOR = re.compile(r"(docs/[A-Za-z0-9_./-]+\.md)#([A-Za-z0-9_-]+)")
DOC_TITLE = re.compile(r"(docs/[A-Za-z0-9_./-]+\.md)[,:]?\s*\(?[\"“]([^\"”\n]+)[\"”]")
# Inside docs/, a sibling page named bare: replay.md, "Speed".
BARE_TITLE = re.compile(r"(?<![/\w])([a-z][a-z0-9_-]*\.md),?\s+[\"“]([^\"”\n]+)[\"”]")


def slug(title):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = title.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(path):
    """The heading titles of a Markdown file (outside code fences) and their anchors."""
    titles, anchors, seen = [], set(), {}
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for a in HTML_ID.findall(line):
                anchors.add(a)
            m = HEADING.match(line)
            if not m:
                continue
            title = m.group(2)
            titles.append(re.sub(r"^\d+\.\s+", "", title.replace("`", "")))
            base = slug(title)
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else "%s-%d" % (base, n))
    return titles, anchors


class Docs:
    def __init__(self, top):
        self.top = top
        self.cache = {}

    def of(self, rel):
        if rel not in self.cache:
            p = os.path.join(self.top, rel)
            self.cache[rel] = headings(p) if os.path.isfile(p) else None
        return self.cache[rel]


def md_links(top, rel, docs, errors):
    """Markdown links of one .md file (outside code fences)."""
    fenced = False
    here = os.path.dirname(rel)
    with open(os.path.join(top, rel), encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            line = re.sub(r"`[^`]*`", "", line)
            for target in MD_LINK.findall(line):
                if re.match(r"^[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(here, path)) if path else rel
                if dest.startswith(".."):
                    continue  # outside the repository (../shared)
                full = os.path.join(top, dest)
                if not os.path.exists(full):
                    errors.append("%s:%d: link to %s: no such file" % (rel, no, target))
                    continue
                if anchor and dest.endswith(".md"):
                    h = docs.of(dest)
                    if h is None or anchor not in h[1]:
                        errors.append("%s:%d: link to %s: %s has no heading #%s" %
                                      (rel, no, target, dest, anchor))


def doc_mentions(top, rel, docs, errors):
    """docs/NAME.md#anchor and docs/NAME.md "Section" in any text file."""
    try:
        with open(os.path.join(top, rel), encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return
    for m in DOC_ANCHOR.finditer(text):
        if m.group(2).endswith("-"):
            continue  # a template (docs/X.md#runbook-<alert>): the name is filled in after it
        no = text.count("\n", 0, m.start()) + 1
        h = docs.of(m.group(1))
        if h is None:
            errors.append("%s:%d: %s: no such file" % (rel, no, m.group(1)))
        elif m.group(2) not in h[1]:
            errors.append("%s:%d: %s has no heading #%s" % (rel, no, m.group(1), m.group(2)))
    titles = [(m, m.group(1)) for m in DOC_TITLE.finditer(text)]
    if rel.startswith("docs/") and rel.endswith(".md"):
        here = os.path.dirname(rel)
        titles += [(m, os.path.normpath(os.path.join(here, m.group(1))))
                   for m in BARE_TITLE.finditer(text)]
    for m, target in titles:
        no = text.count("\n", 0, m.start()) + 1
        h = docs.of(target)
        want = re.sub(r"\s+", " ", m.group(2).replace("`", "")).strip()
        if h is None:
            errors.append("%s:%d: %s: no such file" % (rel, no, target))
        elif not any(t.startswith(want) for t in h[0]):
            errors.append("%s:%d: %s has no section \"%s\"" % (rel, no, target, want))


def tracked(top):
    out = subprocess.run(["git", "-C", top, "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        files = []
        for d, _, names in os.walk(top):
            if "/build" in d or "/.git" in d:
                continue
            files += [os.path.relpath(os.path.join(d, n), top) for n in names]
        return files
    return [f for f in out.stdout.splitlines() if os.path.isfile(os.path.join(top, f))]


def check(top, files):
    docs, errors = Docs(top), []
    for rel in files:
        if rel.startswith(("test/fixtures/", "build/", "fuzz/corpus")) or rel == SELF:
            continue
        if rel.endswith(".md"):
            md_links(top, rel, docs, errors)
        if rel.endswith((".c", ".h", ".py", ".sh", ".yaml", ".yml", ".md", ".txt", ".json")) or \
                os.path.basename(rel) in ("Makefile", "Dockerfile"):
            doc_mentions(top, rel, docs, errors)
    return errors


def self_test():
    assert slug("Tune from your own history: `--search`") == "tune-from-your-own-history---search"
    assert slug("The floor: why not 3.5%") == "the-floor-why-not-35"
    assert slug("What the extender would send kube-scheduler: `--extender-scores`") == \
        "what-the-extender-would-send-kube-scheduler---extender-scores"
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "docs"))
        with open(os.path.join(t, "docs", "a.md"), "w") as f:
            f.write("# A\n\n## Two words\n\n## Two words\n\n```\n## Not a heading\n```\n"
                    "[ok](b.md#b) [ok](#two-words-1) [bad](b.md#nope) [bad](c.md) [bad](#not-a-heading)\n"
                    'b.md, "B" and b.md, "Gone"\n')
        with open(os.path.join(t, "docs", "b.md"), "w") as f:
            f.write("# B\n")
        with open(os.path.join(t, "x.c"), "w") as f:
            f.write('/* docs/a.md#two-words, docs/a.md, "Two words", docs/a.md "Three",'
                    " docs/a.md#three, docs/z.md#a, docs/a.md#runbook-<alert> */\n")
        errs = check(t, ["docs/a.md", "docs/b.md", "x.c"])
        want = ["b.md#nope", "c.md: no such file", "#not-a-heading", 'section "Three"', 'section "Gone"',
                "#three", "docs/z.md: no such file"]
        for w in want:
            assert any(w in e for e in errs), (w, errs)
        assert not any("runbook" in e for e in errs), errs
        assert len(errs) == len(want), errs


# The front door and the replay's page stay short: a reader gets the whole of each.
MAX_LINES = {"README.md": 150, "docs/replay.md": 600}


def too_long(top):
    errs = []
    for rel, most in MAX_LINES.items():
        with open(os.path.join(top, rel), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > most:
            errs.append("%s: %d lines, at most %d" % (rel, n, most))
    return errs


def main():
    self_test()
    files = tracked(TOP)
    errors = check(TOP, files) + too_long(TOP)
    ndocs = sum(1 for f in files if f.endswith(".md"))
    if ndocs < 5:
        print("links_test: found only %d Markdown files under %s" % (ndocs, TOP))
        return 1
    for e in errors:
        print(e)
    if errors:
        print("links_test: %d broken references or pages too long" % len(errors))
        return 1
    print("links_test: every doc link and doc section named in %d files resolves" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
