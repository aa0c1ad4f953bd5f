"""Checks the tracked tree (`git ls-files`) describes the product only, and that its links hold.

  (a) no file name or text file holds words about how the work was organised rather than about
      the product: numbered work periods, tracker numbers, acceptance thresholds, machine loans
      (the patterns are in WORDS below; ALLOWED lists the few lines where a word is product
      meaning);
  (b) every relative link in a tracked Markdown file resolves to a tracked file or folder inside
      the repository, and links to outside sites are only the upstream references in URLS;
  (c) docs/ holds no raw data (.jsonl, .json, .txt, .csv): measured data lives in bench/results/.

Run by test/Docs/tree-hygiene.test: tree_hygiene.py SOURCE_ROOT. Prints one line per problem.
"""
import os
import re
import subprocess
import sys

WORDS = [
    (r"(?<![a-z])sessions?(?![a-z])", "a work period"),
    (r"\bissue #?\d+(?![-\w])|\bissues #\d+", "a tracker number"),
    (r"\b(?:the|this|that|an|open|filed) issue\b|\bissue's\b", "a tracker item"),
    # "blocked" of the code cache's layout is product meaning
    (r"\bblocked\b(?!,? (?:transposed|code|nibble))|\bunblock", "a work status"),
    (r"acceptance bar|\bthe bar(?![.\w])|\bbars? (?:is |was )?(?:not )?met\b", "a work threshold"),
    (r"device time|device machine|\blease[sd]?\b|\blent\b|\blending\b|\.device/",
     "how hardware was obtained"),
    (r"\bhelpers?\b|\bthe lead\b|work period", "how the work was organised"),
]
WORD_RE = [(re.compile(p, re.IGNORECASE), why) for p, why in WORDS]

# (path, substring of the line) where a matched word is product meaning.
ALLOWED = []

# Upstream references a page may link to.
URLS = [
    "https://mlir.llvm.org/",
    "https://llvm.org/",
    "https://docs.nvidia.com/cuda/",
    "https://arxiv.org/abs/",
    "https://github.com/Dao-AILab/flash-attention",
    "https://github.com/deepseek-ai/FlashMLA",
    "https://github.com/facebookresearch/faiss",
]

RAW_DATA = (".jsonl", ".json", ".txt", ".csv")
SELF = "test/Docs/tree_hygiene.py"


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"tree_hygiene.py: {root} is not a git checkout ({e})")
    return [p for p in out.decode().split("\0") if p]


def text_of(root, path):
    try:
        data = open(os.path.join(root, path), "rb").read()
    except OSError:
        return None  # deleted in the work tree, or a submodule
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def allowed(path, line):
    return any(path == p and s in line for p, s in ALLOWED)


def check_words(root, files, problems):
    for path in files:
        for rx, why in WORD_RE:
            m = rx.search(path)
            if m:
                problems.append(f"{path}: file name has '{m.group(0)}' ({why})")
        if path == SELF:
            continue
        text = text_of(root, path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for rx, why in WORD_RE:
                m = rx.search(line)
                if m and not allowed(path, line):
                    problems.append(f"{path}:{n}: '{m.group(0)}' ({why}): {line.strip()[:120]}")


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def check_links(root, files, problems):
    present = set(files)
    folders = {os.path.dirname(p) for p in files}
    for f in list(folders):
        while f:
            f = os.path.dirname(f)
            folders.add(f)
    for path in files:
        if not path.endswith(".md"):
            continue
        text = text_of(root, path)
        if text is None:
            continue
        text = CODE.sub("", FENCE.sub("", text))
        for target in LINK.findall(text) + REF.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                if not any(target.startswith(u) for u in URLS):
                    problems.append(f"{path}: link outside the repository: {target}")
                continue
            local = target.split("#", 1)[0].split("?", 1)[0]
            if not local:
                continue  # an anchor in the same page
            if local.startswith("/"):
                problems.append(f"{path}: absolute link {target}")
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), local))
            if resolved.startswith(".."):
                problems.append(f"{path}: link leaves the repository: {target}")
            elif resolved not in present and resolved.rstrip("/") not in folders:
                problems.append(f"{path}: dead link {target}")


def check_raw_data(files, problems):
    for path in files:
        if path.startswith("docs/") and path.endswith(RAW_DATA) and \
                os.path.basename(path) != "CMakeLists.txt":
            problems.append(f"{path}: raw data under docs/ (move it to bench/results/)")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = tracked(root)
    if not files:
        sys.exit("tree_hygiene.py: git ls-files listed nothing")
    problems = []
    check_words(root, files, problems)
    check_links(root, files, problems)
    check_raw_data(files, problems)
    for p in problems:
        print(p)
    print(f"{len(problems)} problems in {len(files)} tracked files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
