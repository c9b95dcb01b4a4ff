#!/usr/bin/env bash
# Mutation score of one module:
#   scripts/mutation.sh inbox|accounting|wire|sse|streaming|paths|protected|safe_text|secrets|
#                       sandbox|restore
#
# Runs mutmut 3 (every generated mutant, nothing sampled) over the module's source files with
# the module's own test files, in a copy of the working tree in a temporary folder: mutmut's
# mutants/ folder never lands in the tree. mutmut's progress goes to stderr; the last two lines
# on stdout are the surviving mutants' names and `mutation.score: X` (percent, killed /
# (killed + survived); a timeout counts as killed, a mutant no test runs as survived).
#
# MUTATION_JOBS (default 1) is how many mutants run at once; the run is niced.
# MUTATION_SHOW=1 prints each survivor's diff to stderr.
# MUTATION_KEEP=1 keeps the temporary folder (for `mutmut show NAME` there) and prints its path.
# MUTATION_TESTS="a.py b.py" runs those test files instead of the module's (a quicker, narrower
# run: what they miss survives).
set -euo pipefail
# One brace group: bash reads it whole before it runs, so an edit of this file while a
# measurement runs cannot change what that run does next.
{

module="${1:-}"
case "$module" in
  inbox)
    sources=(agent/inbox.py)
    tests=(tests/unit/agent/test_inbox.py)
    ;;
  accounting)
    sources=(storage/accounting.py storage/deltas.py)
    tests=(tests/unit/storage/test_storage_accounting.py tests/unit/storage/test_storage_locking.py)
    ;;
  wire)
    sources=(agent/providers/wire.py agent/httpx_compat.py)
    tests=(tests/unit/agent/providers/test_wire.py tests/integration/test_wire_slot.py
           tests/integration/test_wire_abort_drain.py tests/unit/agent/test_httpx_compat.py)
    ;;
  sse)
    sources=(agent/providers/sse.py)
    tests=(tests/unit/agent/providers/test_sse_parse.py)
    ;;
  streaming)
    sources=(agent/providers/streaming.py agent/providers/sdk_compat.py)
    tests=(tests/unit/agent/providers/test_streaming.py tests/integration/test_wire_retries.py
           tests/unit/agent/providers/test_sdk_compat.py
           tests/integration/test_wire_abort_drain.py
           tests/unit/agent/providers/test_server_errors.py tests/integration/test_server_limits.py)
    ;;
  paths)
    sources=(agent/tools/paths.py)
    # The checkpointer's restores are what remove files (remove_file).
    tests=(tests/unit/agent/tools/test_tools_paths.py tests/integration/test_checkpoints.py
           tests/security/test_hostile_checkpoints.py tests/unit/agent/test_checkpointer_links.py)
    ;;
  protected)
    sources=(agent/tools/protected.py)
    tests=(tests/unit/agent/tools/test_tools_protected.py tests/unit/test_security_tables.py
           tests/security/test_hostile_protected_paths.py tests/security/test_hostile_app_home.py)
    ;;
  safe_text)
    sources=(hermes_tui/safe_text.py)
    tests=(tests/security/test_safe_text.py tests/unit/test_security_tables.py
           tests/security/test_hostile_names.py)
    ;;
  secrets)
    sources=(agent/secrets.py agent/providers/secret_forms.py agent/credentials.py)
    tests=(tests/unit/agent/test_secrets.py tests/unit/agent/providers/test_secret_forms.py
           tests/unit/agent/tools/test_tools_shell_env.py tests/security/test_hostile_secrets.py)
    ;;
  sandbox)
    sources=(agent/tools/sandbox.py agent/tools/hiding.py)
    tests=(tests/unit/agent/tools/test_sandbox_decisions.py
           tests/unit/agent/tools/test_hiding_mounts.py tests/unit/test_security_tables.py
           tests/security/test_hostile_sandbox.py tests/security/test_hostile_sandbox_secrets.py
           tests/unit/agent/tools/test_plan_mode.py)  # plan mode's read-only workspace
    ;;
  restore)
    sources=(agent/checkpoints/restore.py agent/checkpoints/session.py)
    tests=(tests/unit/agent/test_restore_plans.py tests/integration/test_checkpoints.py
           tests/security/test_hostile_checkpoints.py tests/integration/test_mcp_checkpoints.py
           tests/ui/test_tui_rewind.py)
    ;;
  *)
    echo "usage: scripts/mutation.sh inbox|accounting|wire|sse|streaming|paths|protected|safe_text|secrets|sandbox|restore" >&2
    exit 2
    ;;
esac

if [[ -n "${MUTATION_TESTS:-}" ]]; then
  read -r -a tests <<< "$MUTATION_TESTS"
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v mutmut >/dev/null || { echo "mutmut is not installed: pip install 'mutmut>=3,<4'" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/hermes-mutation.XXXXXX")"
if [[ "${MUTATION_KEEP:-0}" == 1 ]]; then
  echo "mutation: working copy kept in $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi

# The working tree as it is (tracked and new files, edits included), without ignored files.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$root" && python3 -c '
import os, shutil, sys
dest = sys.argv[1]
for name in sys.stdin.buffer.read().decode().split("\0"):
    if name and os.path.isfile(name):
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(name, os.path.join(dest, name))
' "$work")

# The module and its tests join the [tool.mutmut] table of the copy's pyproject.toml.
python3 - "$work/pyproject.toml" "${sources[*]}" "${tests[*]}" <<'PY'
import json, sys
path, sources, tests = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
lines = open(path).read().splitlines()
at = lines.index("[tool.mutmut]") + 1
lines[at:at] = [
    f"only_mutate = {json.dumps(sources)}",
    f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
]
open(path, "w").write("\n".join(lines) + "\n")
PY

cd "$work"
echo "mutation: mutmut run over ${sources[*]} with ${tests[*]}" >&2
if ! nice -n 10 mutmut run --max-children "${MUTATION_JOBS:-1}" > mutmut.log 2>&1; then
  # The log without mutmut's spinner lines (braille characters, U+2800-U+28FF).
  python3 -c 'import re, sys
for line in open(sys.argv[1], errors="replace").read().replace("\r", "\n").splitlines()[-400:]:
    if not re.match("[\u2800-\u28ff]", line):
        print(line)' mutmut.log | tail -40 >&2
  echo "mutation: mutmut run failed" >&2
  exit 1
fi
nice -n 10 mutmut results --all true > results.txt
status=0
python3 - results.txt > summary.txt <<'PY' || status=$?
import sys
killed, survived, other = [], [], []
for line in open(sys.argv[1]):
    name, sep, status = line.strip().rpartition(": ")
    if not sep:
        continue
    if status in ("killed", "timeout", "segfault"):
        killed.append(name)
    elif status in ("survived", "no tests"):
        survived.append(name)
    else:
        other.append(f"{name} ({status})")
if other:
    print("mutation.unsettled:", " ".join(other))
total = len(killed) + len(survived)
score = 100.0 * len(killed) / total if total else 0.0
print(f"mutation.counts: {len(killed)} killed, {len(survived)} survived", file=sys.stderr)
open("survivors.txt", "w").write("".join(f"{name}\n" for name in survived))
print("mutation.survivors:", " ".join(survived) or "none")
print(f"mutation.score: {score:.1f}")
sys.exit(1 if other else 0)
PY
if [[ "${MUTATION_SHOW:-0}" == 1 ]]; then
  while read -r name; do mutmut show "$name" >&2; done < survivors.txt
fi
cat summary.txt
exit "$status"
}
