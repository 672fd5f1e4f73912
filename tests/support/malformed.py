"""Malformed case files, each with the code of the first finding lint gives it."""

from __future__ import annotations

HEAD = b"scenarios:\n  - id: a\n    user: hi\n"


BOMB = b"".join(
    [b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n".encode()
       for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
)


#: (id, bytes, code of the first finding)
CORPUS: list[tuple[str, bytes, str]] = [
    ("empty", b"", "GE105"),
    ("only-comments", b"# nothing here\n# at all\n", "GE105"),
    ("only-whitespace", b"   \n\n  \n", "GE105"),
    ("document-marker-only", b"---\n", "GE109"),
    ("top-level-list", b"- id: a\n  user: hi\n", "GE109"),
    ("top-level-scalar", b"hello\n", "GE109"),
    ("top-level-null", b"~\n", "GE109"),
    ("latin-1", b"scenarios:\n  - id: caf\xe9\n", "GE102"),
    ("utf-16", "scenarios: []\n".encode("utf-16"), "GE102"),
    ("cp1252-quotes", b"a: \x93quoted\x94\n", "GE102"),
    ("binary-junk", bytes(range(256)) * 4, "GE102"),
    ("nul-byte", b"scenarios:\n  - id: a\x00\n", "GE101"),
    ("bell-char", b"a: ding\x07\n", "GE101"),
    ("over-1-mib", b"a: 1\n" + b"#" * (1024 * 1024), "GE104"),
    ("tab-indent", b"scenarios:\n\t- id: a\n", "GE103"),
    ("tab-indent-nested", HEAD + b"\t  trials: 2\n", "GE103"),
    ("duplicate-top-key", HEAD + b"scenarios: []\n", "GE108"),
    ("duplicate-nested-key", HEAD + b"    user: again\n", "GE108"),
    ("alias-bomb", BOMB, "GE106"),
    ("anchor", b"defaults: &d {trials: 2}\n" + HEAD, "GE106"),
    ("alias", b"x: 1\ny: *x\n", "GE106"),
    ("python-object", b"a: !!python/object:os.system {}\n", "GE107"),
    ("python-name", b"scenarios: !!python/name:os.system\n", "GE107"),
    ("python-apply", b"a: !!python/object/apply:os.system [ls]\n", "GE107"),
    ("custom-tag", b"a: !secret 1\n", "GE107"),
    ("binary-tag", b"a: !!binary aGVsbG8=\n", "GE107"),
    ("set-tag", b"!!set {a, b}\n", "GE107"),
    ("complex-key", b"? [a, b]\n: 1\n", "GE110"),
    ("deep-flow", b"[" * 100_000, "GE101"),
    ("deep-flow-mappings", b"{a: " * 300 + b"1" + b"}" * 300, "GE111"),
    ("deep-block", b"a:\n" + b"".join(b" " * (2 * i) + b"b:\n" for i in range(1, 200)), "GE111"),
    ("deep-compact-sequences", b"- " * 5000 + b"x\n", "GE101"),
    ("unclosed-flow", b"scenarios: [{id: a\n", "GE101"),
    ("unterminated-quote", b"a: 'open\n", "GE101"),
    ("bad-indentation", b"a: |\n  x\n b: 1\n", "GE101"),
    ("two-values-one-line", b"a: b: c\n", "GE101"),
    ("two-documents", b"a: 1\n---\nb: 2\n", "GE101"),
    ("merge-key", b"<<: {a: 1}\n", "GE201"),
    ("numeric-key", b"1: x\n" + HEAD, "GE201"),
    ("scenarios-null", b"scenarios:\n", "GE202"),
    ("scenario-items-null", b"scenarios: [null, null]\n", "GE202"),
    ("nested-lists", b"scenarios: [[]]\n", "GE202"),
    ("expect-null-item", HEAD + b"    expect: [null]\n", "GE202"),
    ("trials-infinity", HEAD + b"    trials: .inf\n", "GE202"),
    ("everything-refused", b"suite: s\nagent: a\ntool: t\nfiles: []\n" + HEAD, "GE301"),
]
