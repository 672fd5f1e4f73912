"""Every lint code: its meaning, how to fix it and its usual severity, as the tables of
docs/lint-codes.md give them (tests/lint/test_codes.py keeps the two equal, so a code added
to one must be added to the other).

Reporters that describe the rules themselves read this registry: ``--format sarif`` writes
one rule per code with this help text, so code scanning can explain a finding without the
docs at hand. The text is the docs' Markdown (backticks, ``**bold**``), kept as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitevals.findings import Severity


@dataclass(frozen=True)
class Code:
    """One lint code. ``severity`` is the usual one: a rule may report either (a finding
    carries its own)."""

    code: str
    meaning: str
    fix: str
    severity: Severity = "error"

    @property
    def family(self) -> str:
        """``GE5xx`` for ``GE512``: the key of :data:`FAMILIES`."""
        return f"{self.code[:3]}xx"


#: What each family of codes checks (the docs' range table).
FAMILIES: dict[str, str] = {
    "GE1xx": ("the file itself: encoding, size, YAML syntax and the YAML features cases "
              "may not use"),
    "GE2xx": "the case schema (`schemas/case.schema.json`)",
    "GE3xx": "refused keys",
    "GE4xx": "rules across values: ids, assertion combinations, thresholds, trials",
    "GE5xx": "graders: the name (GE501) and its resolution in the tree (GE502+)",
    "GE6xx": "`goldens.jsonl`",
    "GE7xx": "settings (`[tool.gitevals]` / `gitevals.toml`)",
    "GE8xx": "the eval tree's layout: what is not a regular file, case files run would not take",
    "GE9xx": "task directories (`<root>/tasks/<name>/`, `schemas/task.schema.json`)",
}

CODES: tuple[Code, ...] = (
    Code("GE101",
         "YAML syntax error (also: a control character such as NUL, nesting that libyaml itself "
         "refuses, more than one document in the file)",
         "fix the syntax at the position given"),
    Code("GE102",
         "the file is not UTF-8 (the column points at the first bad byte)",
         "save the file as UTF-8"),
    Code("GE103",
         "a tab in indentation (tabs that are content — in a `|` block, in quotes, in a flow "
         "list — are fine)",
         "indent with spaces"),
    Code("GE104",
         "the file is over its size limit: 1 MiB (cases, graders), 256 MiB (`goldens.jsonl`); "
         "found from its size (`lstat`, or the blob's header in the index and a revision) and "
         "never read",
         "split it into several files"),
    Code("GE105",
         "the file is empty (or only comments)",
         "write a case, or delete the file"),
    Code("GE106",
         "an anchor (`&x`) or alias (`*x`) — refused before anything is expanded, so an alias "
         "bomb costs nothing",
         "write every value out in full"),
    Code("GE107",
         "a tag: `!!python/object`, `!!binary`, `!!set`, `!custom`...",
         "plain strings, numbers, booleans, null, lists and mappings only"),
    Code("GE108",
         "a duplicate mapping key (YAML would silently keep the last one); the message names "
         "the first one's line",
         "remove or rename one of them"),
    Code("GE109",
         "the top level is not a mapping (a list, a string, null...)",
         "write `scenarios:` (and optionally `defaults:`) at the top"),
    Code("GE110",
         "a mapping key that is not a plain scalar (`? [a, b]`)",
         "keys are names"),
    Code("GE111",
         "nested deeper than 64 levels",
         "flatten the structure"),
    Code("GE112",
         "an integer too long to read (Python refuses `int()` of more than 4,300 digits)",
         "write a smaller number"),
    Code("GE201",
         "unknown key (in the file, `defaults`, a scenario or an assertion's arguments); says "
         '"did you mean ...?" for a near miss, else lists the allowed keys',
         "rename or remove the key"),
    Code("GE202",
         "wrong type: `trials: '3'`, `timeout: 30`, `user: {..}`, `tool_called: shell`, `id: "
         "7`...",
         "write the type the message names (quote numbers meant as text; give durations a unit)"),
    Code("GE203",
         "a required key is missing: `scenarios`; a scenario's `id` or `user`; an assertion's "
         "`name`, `count`, `first`/`then`, `substring`",
         "add the key (the message shows the expected shape, e.g. `{name, count}`)"),
    Code("GE204",
         "bad value: `trials` < 1, a `timeout` without a unit, an `id` with spaces, empty "
         "`scenarios`/`user`/text, a negative `count`, `no_error: false`",
         "follow the message"),
    Code("GE205",
         'unknown assertion kind; "did you mean ...?" for a near miss, else the list of the 12 '
         "kinds",
         "use one of the kinds of the table below"),
    Code("GE206",
         "an `expect` item that does not hold exactly one key (`- {}`, two kinds in one item)",
         "one assertion per `- ` item"),
    Code("GE207",
         "an assertion whose arguments are not indented under it (`- tool_called:` then `name: "
         "x` at the same indentation, which YAML reads as two keys)",
         "indent the arguments two more spaces"),
    Code("GE208",
         "a bad `cluster:` (the case's top level): not a string, empty, over 100 "
         'characters, or other characters than letters, digits, `_`, `.`, `-`',
         'name the cluster, e.g. `cluster: capitals`; cases naming one cluster count as '
         "one in `diff`'s suite interval ([statistics.md](statistics.md))"),
    Code("GE301",
         "a refused key in the top level, `defaults` or a scenario; the message gives the reason",
         "remove it"),
    Code("GE401",
         "duplicate scenario `id` in the file; names the first one's line",
         "give each scenario its own id"),
    Code("GE402",
         "`tool_order` with `first` == `then`",
         "name two different tools (to expect repeats, use `min_tool_calls`)"),
    Code("GE403",
         "`min_tool_calls` count above `max_tool_calls` count for the same tool in one scenario "
         "(no run can pass both); names the max's line",
         "lower the min or raise the max"),
    Code("GE404",
         "`pass_below` outside 0..1 (also `.nan`, `.inf`)",
         "a score threshold, e.g. `0.7`"),
    Code("GE405",
         "a scenario that names a grader runs one trial: one trial cannot tell flaky from pass",
         "set `trials: 3` (or more) on the scenario or in `defaults`",
         "warning"),
    Code("GE406",
         "a `timeout` over 24 h (a conversation never waits longer; longer waits overflow the "
         "clock). `trials` has a maximum of 10,000 in the schema (GE204)",
         "use 24h or less"),
    Code("GE501",
         "the grader name is not `<file>.<function>` with both parts plain identifiers: `a.b.c` "
         "(more than one dot: read up to the first), `../x.f` or `x/y.f` (a path), `x.` / `.f` "
         "(an empty part), `x` (no function), `my-file.f` (not an identifier), `class.f` (a "
         "keyword)",
         "name a file in `<root>/graders/` without directories or `.py`, then the function"),
    Code("GE502",
         '`<root>/graders/<file>.py` is not in that tree ("did you mean" over the modules there)',
         "create the module, or fix the name"),
    Code("GE503",
         "the grader module does not parse (Python syntax error, NUL byte, bad encoding, an "
         "expression nested past the parser or more than 500 levels deep: lint, diff and run "
         "refuse it alike); at the module's own `path:line:col`",
         "fix the module's syntax"),
    Code("GE504",
         'no top-level name `<function>` in the module ("did you mean" over its functions)',
         "define `def <function>(t, case, run):` at top level"),
    Code("GE505",
         "`<function>` is a method of a class (the message names the class and line)",
         "move it out of the class"),
    Code("GE506",
         "`<function>` is bound to something that is not a `def`: a variable, a `lambda`, a "
         "class or an import",
         "define it with `def` in this module"),
    Code("GE507",
         "`<function>` is `async def`",
         "make it a plain `def`: graders are called synchronously"),
    Code("GE508",
         "it cannot be called as `fn(t, case, run)`: under 3 positional parameters without "
         "`*args`, over 3 required ones, or a keyword-only parameter without a default",
         "accept exactly `(t, case, run)`"),
    Code("GE509",
         '`<function>` is not bound statically (see the list above; the message says how: "it '
         'is bound under `try` on line 3", "it is deleted by `del` on line 9", "a decorator '
         '(line 5) may replace it with anything", "the module uses `globals` (line 12), which '
         'can rebind any name")',
         "define it once, undecorated, as `def <function>(t, case, run):` at the module's top "
         "level and bind nothing else to that name; for a module-wide cause, remove the use of "
         "`globals()` & co."),
    Code("GE510",
         "no calibration record for the grader",
         "`gitevals calibrate <file>.<function> --labels FILE --final`, commit the record",
         "warning"),
    Code("GE511",
         "the record cannot be used (not JSON, not a `gitevals-calibration/1` record, a field "
         "missing, no readable date)",
         "restore it from git, or calibrate again",
         "warning"),
    Code("GE512",
         "the record holds dev-split numbers only",
         "calibrate with `--final` when the prompt is settled",
         "warning"),
    Code("GE513",
         "the grader module changed since it was calibrated (another blob)",
         "calibrate the new version with `--final`",
         "warning"),
    Code("GE514",
         "it was calibrated with another judge model (or none is configured now)",
         "calibrate with the configured model",
         "warning"),
    Code("GE515",
         "TPR or TNR below `min_tpr` / `min_tnr` (default 0.9), or not measured",
         "improve the prompt and few-shot examples, calibrate the new version",
         "warning"),
    Code("GE516",
         "the calibration is more than 90 days older than now",
         "calibrate again",
         "warning"),
    Code("GE517",
         "run only: the judge's API answered as another model than the configured "
         "`judge.model`, or its model changed during the run (the `model` field of its "
         "replies, recorded per call): every judge grader of the run is advisory, and "
         "doctor's judges item is missing while the commit's run shows it",
         "set `judge.model` to the dated snapshot the endpoint answers as, calibrate with "
         "it, and run again",
         "warning"),
    Code("GE601",
         "the file is not UTF-8 (line and column of the first bad byte)",
         "save it as UTF-8"),
    Code("GE602",
         "a line is not valid JSON (column from the parser; `NaN`/`Infinity` refused)",
         "one JSON object per line"),
    Code("GE603",
         "a line is JSON but not an object (list, string, number, null)",
         'write `{"id": ..., ...}`'),
    Code("GE604",
         "a row has no `id`",
         "give every row a unique, never-reused id"),
    Code("GE605",
         'a row violates the golden schema (e.g. `"label": 3`), pointing at the field',
         "see the message"),
    Code("GE606",
         'an `id` already used on an earlier line; names both lines (`7` and `"7"` are the same '
         "id)",
         "give this row a new id (ids are never reused)"),
    Code("GE607",
         "a row nested more than 200 levels deep (100,000 deep is read without crashing)",
         "flatten the row"),
    Code("GE608",
         'a row holding a lone UTF-16 surrogate escape (`"\\ud800"`) in an id, key or value: no '
         "UTF-8 file or terminal can hold it",
         "write the character itself, or a valid surrogate pair"),
    Code("GE609",
         "a row holding a number too large to read or hold: an integer past 4,300 digits, a "
         "float past 1.8e308 (`1e400` would read as infinity)",
         "write it as a string"),
    Code("GE620",
         "an id left `goldens.jsonl` (deleted, or renamed) and is not in `goldens.retired`; at "
         "the line after the last of `goldens.retired`, naming the id's line in the commit "
         "before",
         "add the id to `goldens.retired` in the same commit, or restore the row"),
    Code("GE621",
         "a row of `goldens.jsonl` carries an id listed in `goldens.retired`; at the row's "
         "`id`, naming the retired line",
         "give the row a new id: ids are never reused"),
    Code("GE622",
         "`goldens.retired` is not UTF-8 (at the line of the first bad byte)",
         "save it as UTF-8 text, one id a line"),
    Code("GE623",
         "an id was taken out of `goldens.retired`",
         "put the line back: a retired id stays retired"),
    Code("GE610",
         "a bucket present in `goldens.jsonl` has no grader (at its first row)",
         'map it: `graders = {<bucket> = "file.function", ...}`'),
    Code("GE611",
         "a row has no `bucket` while buckets are mapped (at the first such row; the count of "
         "the others)",
         "give the row one of the mapped buckets"),
    Code("GE612",
         "warning: a mapped bucket has no row in `goldens.jsonl`",
         "remove the mapping, or add the bucket's goldens",
         "warning"),
    Code("GE613",
         "a row's `input` is not a string or a non-empty list of strings, so it cannot be sent "
         "to the target (first 20 rows; for a drift slice, the first row of its sample, at the "
         "source)",
         "write the user turn(s) in `input`"),
    Code("GE614",
         "buckets are mapped but `goldens.jsonl` does not exist (at the settings)",
         "add the goldens, or remove the mapping"),
    Code("GE615",
         "warning: one grader is mapped to several buckets (at the second bucket): the goldens "
         "document asks for one grader per bucket, so each bucket's pass rate measures its own "
         "failure mode",
         "give each bucket a grader of its own (a thin wrapper function is enough), or merge "
         "the buckets",
         "warning"),
    Code("GE630",
         "the suite violates its schema (also: `n_items_range` running backwards; a slice with "
         "`choices` that names a `grader`, or whose `max_tokens` retry budget is not above the "
         "first)",
         "see the message"),
    Code("GE631",
         "a `source`/`path` is not a file of the linted tree, or not a normalized path inside "
         "the repository",
         "commit the JSONL file and name it by its repository path"),
    Code("GE632",
         "a source holds fewer rows of the split (or passing the filter) than `n_items` (or the "
         "low end of `n_items_range`)",
         "add rows, or lower the count"),
    Code("GE633",
         "the `filter` does not parse (column within the filter)",
         "write e.g. `tag == 'drift-suite'` (`==`, `!=`, `in`, `not in`, `and`, `or`, `not`, "
         "parentheses)"),
    Code("GE634",
         "warning: `n_items` (or the low end of `n_items_range`) gives a 95 % interval "
         "half-width at or above half of `hard_fail_threshold_pts`; says the n that would "
         "suffice",
         "raise the count, or say in a comment holding `sized for` (on the slice's lines or "
         "right above it) what budget the smaller suite was sized for: the comment silences it",
         "warning"),
    Code("GE635",
         "a sampled row has no grader: the slice sets no `grader` and the row's bucket is not "
         "mapped (a slice with `choices`: the row's `expected` is not one of them)",
         "set `grader: file.function` on the slice, or give the rows mapped buckets (or their "
         "correct labels)"),
    Code("GE636",
         "two benchmarks share a `name`",
         "name each benchmark once"),
    Code("GE637",
         "a line of a source is not a JSON object (the first, with the count of the others)",
         "one JSON object a line"),
    Code("GE638",
         "`hard_fail_threshold_pts` is not above `noise_tolerance_pts`",
         "raise the threshold or lower the tolerance"),
    Code("GE639",
         "`publish-check --require-gate NAME` only: the revision's pinned run does not pass the "
         "gate against its `baseline-NAME.json` (or there is no baseline, no run, or another "
         "measuring stick)",
         "fix the regression, or run and gate again (`gitevals gate`)"),
    Code("GE640",
         "a committed `baseline-<model>.json` is not a gitevals baseline (not JSON, or it does "
         "not match `schemas/baseline.schema.json`): `gate` would refuse it and doctor does not "
         "count it",
         "write it again with `gitevals baseline ARTIFACT --model NAME` and commit it"),
    Code("GE645",
         "warning: `[tool.gitevals.goldens] axes` are declared and a combination of their values "
         "has no golden (one line, at `axes`, with the first five), or a row's `axes` holds a "
         "value the declaration does not (at the row)",
         "add rows for the missing combinations (`gitevals goldens synth`), or fix the value",
         "warning"),
    Code("GE700",
         "the settings file cannot be read (TOML syntax, not UTF-8, arrays or tables nested "
         "more than 100 levels deep, an integer past 4,300 digits), or a gitevals setting holds "
         "a number it cannot use (past 64 bits, `inf`, `nan`); at the line",
         "fix the TOML"),
    Code("GE701",
         "a setting violates `schemas/settings.schema.json`",
         "see the message"),
    Code("GE702",
         "the `root` the settings name does not exist in the linted tree (working tree, index "
         "or revision): nothing would be checked",
         "add the eval tree there (`gitevals init` scaffolds one) or set `root` to where it is"),
    Code("GE703",
         "`root` is not a normalized relative path inside the repository: `./evals`, `evals/.`, "
         "`evals/cases/..`, `evals/`, `.` (not normal form) or `../x` (leaves the repository); "
         "absolute paths and backslashes are GE701",
         'write the normal form the message gives (`root = "evals"`)'),
    Code("GE704",
         "`[judge] family` equals `[target] family` (compared without case): a judge grades its "
         "own family's habits kindly, so it must come from another model family than the model "
         "under test",
         "pin a judge model of another family and set its `family`"),
    Code("GE705",
         "`results` is not a normalized relative path inside the repository (as GE703 for "
         "`root`), or it is the eval root or a directory holding it: run artifacts would sit "
         "among the files lint checks and a run pins",
         'name a directory of its own, e.g. `results = "runs"`, or leave it out for '
         "`<root>/results`"),
    Code("GE706",
         "warning: a judge is configured but the judge's or the target's `family` is not "
         "set: nothing checks that the judge comes from another model family than the model "
         "under test (GE704); doctor says so too",
         'set `family = "..."` in `[tool.gitevals.judge]` and `[tool.gitevals.target]`',
         "warning"),
    Code("GE801",
         "not a regular file, anywhere under the eval root (or the root itself) or as "
         "`pyproject.toml`/`gitevals.toml`: a symlink, a submodule, a FIFO, socket or device, a "
         "directory where `goldens.jsonl` belongs, a file where `cases/` or `graders/` belongs; "
         "in the working tree, the index and a revision alike. It is never followed or opened: "
         "a link may lead out of the repository, a FIFO would block. Regular files only, as for "
         "task files",
         "commit the file itself at that path, or remove it"),
    Code("GE802",
         "two files for one case name, `x.yaml` beside `x.yml` (at the second; run would take "
         "only the first)",
         "keep one file"),
    Code("GE803",
         "a case file in a subdirectory of `cases/`: run takes `<root>/cases/<name>.yaml` (or "
         "`.yml`) only, so it would never run",
         "move it to `<root>/cases/`"),
    Code("GE901",
         "a file gitevals reads is not a regular file (a symlink, FIFO, directory, submodule in "
         "its place), or `task.toml` is missing from a directory `task_dirs` listed; at "
         "`path:1:1`",
         "commit the file itself at that path"),
    Code("GE902",
         "a file gitevals reads is not UTF-8 (line and column of the first bad byte); an "
         "unreadable `instruction.md` is never replaced by `prompt.md`",
         "save the file as UTF-8"),
    Code("GE903",
         "a file gitevals reads is over 1,048,576 bytes",
         "shorten it"),
    Code("GE904",
         "`task.toml` cannot be read: TOML syntax, nesting past 100 levels, a number past 64 "
         "bits, `inf` or `nan`",
         "fix the TOML at the position given"),
    Code("GE905",
         "a `task.toml` value violates `schemas/task.schema.json`: an empty argv or argv "
         'member, `reward_format` not `reward_text`/`reward_json` (with "did you mean"), '
         "`pass_threshold` outside 0..1, `max_iterations` below 1, a timeout not above 0...",
         "see the message"),
    Code("GE906",
         "(warning) a key `schemas/task.schema.json` does not know; gitevals ignores it, as "
         'Harbor does (a typo gets "did you mean")',
         "fix the spelling, or leave it"),
    Code("GE907",
         "`[verifier] command` is a shell string: gitevals runs an argv, never a shell",
         'write one string per argument, `command = ["bash", "/tests/test.sh"]`'),
    Code("GE908",
         "the instruction is missing (no `instruction.md`, no `prompt.md`), empty (or blank), "
         "or longer than `[tool.gitevals.tasks] max_instruction_chars` (default 4,096 "
         "characters; at the first character over)",
         "write it, shorten it, or raise the setting"),
    Code("GE909",
         "the verifier names a script the task does not hold: `tests/test.sh` for the Harbor "
         "default (no `[verifier] command`), or `/tests/<file>` in the argv; or an argv member "
         "climbs out of `/tests/`",
         "add the script, or fix the command"),
    Code("GE910",
         "a file of the task a run could not copy: a symlink that leads out of the task "
         "(absolute, or climbing above it, also through other links), a FIFO, socket or device",
         "commit the file itself, or remove it"),
    Code("GE911",
         "a multi-step task (`[[steps]]`): not supported yet",
         "split it into one task directory per step"),
    Code("GE912",
         "a value written twice: `reward_format` or `pass_threshold` both at the top level and "
         "in `[verifier]`, or `[environment]` `docker_image` beside `image`",
         "write it once"),
    Code("GE913",
         "warning: the task has no `solution/solve.sh`, so `gitevals task check` cannot run its "
         "oracle control (its do-nothing control still runs)",
         "add `solution/solve.sh`, a reference solution that solves the task in the workspace",
         "warning"),
)

#: The registry by code.
BY_CODE: dict[str, Code] = {c.code: c for c in CODES}
