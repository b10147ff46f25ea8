"""The guard's policy tables: what is human-only, what tht alone writes, how programs behave.

Everything the guard decides *against* lives here as data: the human-only ``tht`` verbs, the
protected folders and files, the raw-text patterns of the fail-closed fallback, the tables of
shells, wrappers, interpreters and writers, the analysis limits and the refusal reasons. The
modules that walk a command (:mod:`tht.hooks.guard_shell`, :mod:`tht.hooks.guard_programs`, …)
read these tables and hold no policy of their own. Standard library only.
"""

from __future__ import annotations

import os
import re

MAX_STDIN_BYTES = 64 * 1024 * 1024
MAX_COMMAND_CHARS = 8 * 1024 * 1024
MAX_SCRIPT_BYTES = 1024 * 1024
MAX_DEPTH = 24
MAX_STEPS = 200_000

HUMAN_ONLY: tuple[tuple[str, ...], ...] = (
    ("review", "answer"),
    ("decision", "retract"),
    ("stage", "skip"),
    ("stage", "reopen"),
    *(("session", v) for v in ("pause", "resume", "finalize", "derive", "abandon")),
    ("ledger", "verify", "--repair"),
    *(("reviewer", v) for v in ("add", "revoke", "approve-workflow")),
    ("serve", "token", "add"),
    ("serve", "token", "revoke"),
    ("memory", "forget"),
    ("catalog", "sensitive", "set"),
    *(("catalog", "relationship", v) for v in ("add", "delete", "restore", "reconstruct")),
    ("catalog", "cleanup"),
    ("catalog", "verify", "--repair"),
    # accepting a workspace-level ledger's rollback (its witness moved back: kernel/ledger_witness)
    *((name, "verify", "--accept-rollback") for name in ("catalog", "memory", "reviewer")),
    ("catalog", "describe", "--as"),  # a Description; `describe --propose` (no --as) is either
    ("catalog", "consolidate"),
    ("evidence", "publish", "--as"),  # a reviewer's approval; plain `publish` is unsigned mode's
    ("store", "init"),
    ("store", "migrate"),
)
PROTECTED_DIRS = frozenset({"sessions", "catalog", "memory", "reviewers", ".tht"})
PROTECTED_FILES = frozenset({"workspace.yaml", "workflow.yaml"})
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # …/tht

_SEP = r"[^A-Za-z0-9_-]+"
RAW_HUMAN = re.compile(
    r"(?<![\w-])(?:review"
    + _SEP
    + r"answer|decision"
    + _SEP
    + r"retract|stage"
    + _SEP
    + r"(?:skip|reopen)|session"
    + _SEP
    + r"(?:pause|resume|finalize|derive|abandon)"
    r"|verify[\s\S]*?--(?:repair|accept-rollback)|reviewer"
    + _SEP
    + r"(?:add|revoke|approve-workflow)|token"
    + _SEP
    + r"(?:add|revoke)|memory"
    + _SEP
    + r"forget|sensitive"
    + _SEP
    + r"set|relationship"
    + _SEP
    + r"(?:add|delete|restore|reconstruct)|catalog"
    + _SEP
    + r"(?:cleanup|consolidate)|(?:describe|publish)[\s\S]*?--as|store"
    + _SEP
    + r"(?:init|migrate))(?![\w-])",
    re.I,
)
RAW_PROTECTED = re.compile(
    r"(?:^|[^\w.-])(?:sessions|catalog|memory|reviewers|\.tht)(?:[/\\]|['\"]|$)"
    r"|workspace\.ya?ml|workflow\.ya?ml|ledger\.(?:jsonl|head)",
    re.M,
)
THT_WORD = re.compile(r"(?<![\w-])tht(?![\w-])")
CODE_VERBS = re.compile(
    r"answer|retract|skip|reopen|pause|resume|finalize|derive|abandon|repair|rollback|reviewer"
    r"|revoke"
    r"|approve|token|forget|sensitive|relationship|cleanup|migrate|consolidate|describe",
    re.I,
)
IMPORTS_THT = re.compile(r"(?m)(?:^|;)\s*(?:from\s+tht\b|import\s+tht\b)|import_module|tht\.cli")
PYTHON = re.compile(r"^(?:python|pypy)[0-9.]*w?$|^py$")
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox", "rbash"})
CODE_RUNNERS = {  # program → options whose value is program text
    "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "bun": ("-e", "--eval"),
    "php": ("-r",), "lua": ("-e",), "Rscript": ("-e",), "osascript": ("-e",),
    "awk": (), "gawk": (), "mawk": (), "nawk": (), "sed": ("-e", "--expression"),
    "jq": (), "sqlite3": (), "tclsh": (), "julia": ("-e",),
}  # fmt: skip
WRAPPERS = frozenset(
    {"env", "nohup", "timeout", "nice", "sudo", "doas", "exec", "command", "builtin", "time",
     "stdbuf", "ionice", "setsid", "chrt", "taskset", "unbuffer", "strace", "ltrace", "flock",
     "watch", "caffeinate", "chroot", "runuser", "su", "script", "faketime", "firejail",
     "unshare", "nsenter", "systemd-run", "proot", "catchsegv", "xvfb-run", "then", "do",
     "else", "elif", "if", "while", "until", "!", "{", "}", "coproc", "exec-once"}
)  # fmt: skip
WRAPPER_VALUE_OPTS = {
    "env": ("-u", "--unset", "-C", "--chdir"), "sudo": ("-u", "-g", "-C", "-D", "-h", "-p", "-U"),
    "nice": ("-n", "--adjustment"), "timeout": ("-s", "--signal", "-k", "--kill-after"),
    "exec": ("-a",), "ionice": ("-c", "-n", "-p"), "stdbuf": ("-i", "-o", "-e"),
    "su": ("-c", "-s", "-g"), "runuser": ("-u", "-g", "-c", "-s"), "script": ("-c", "-t"),
    "flock": ("-w", "-E"), "watch": ("-n", "-d"), "strace": ("-o", "-e", "-p", "-s", "-u"),
}  # fmt: skip
WRAPPER_POSITIONALS = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1, "chroot": 1}
WRITERS = frozenset(
    {"tee", "dd", "cp", "mv", "rm", "rmdir", "ln", "link", "unlink", "install", "truncate",
     "touch", "chmod", "chown", "chgrp", "rsync", "tar", "unzip", "shred", "mkfifo", "mknod",
     "mkdir", "git", "patch", "split", "csplit", "sort", "cpio", "7z", "bsdtar", "gunzip",
     "gzip", "bzip2", "xz", "zstd", "setfacl", "setfattr", "chattr", "ed", "ex", "vi", "vim",
     "nvim", "nano", "emacs", "sponge", "curl", "wget", "scp", "sqlite3", "perl", "sed", "awk",
     "gawk", "find", "fallocate", "mktemp", "ditto", "rename", "mmv", "sd", "yq", "jq"}
)  # fmt: skip
DESTRUCTIVE = frozenset(
    {"rm", "rmdir", "mv", "shred", "chmod", "chown", "chgrp", "rsync", "setfacl", "chattr"}
)  # fmt: skip
FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
NON_COMMAND = frozenset({"for", "select", "case", "[[", "function", "in", "esac", "fi", "done"})
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)", re.S)

REASON_HUMAN = (
    "tht: `{command}` is a human-only decision. Propose instead (`tht propose STAGE --file "
    "P.json`) and let the reviewer answer; the model proposes, a human decides."
)
REASON_LEDGER = (
    "tht: {path} is written only by tht itself (session ledgers, objects, artifacts, catalog, "
    "memory, reviewers, .tht, workspace.yaml, workflow.yaml); use `tht propose` (artifacts go "
    "in the proposal)."
)
REASON_CLOSED = (
    "tht: {why}; it mentions a human-only tht command or a file tht alone writes, so it is "
    "refused (fail closed). Run a plain `tht propose …` instead."
)
