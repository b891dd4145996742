#!/usr/bin/env bash
# The Action's campaign step: `normfuzz conform --config` into the report folder. normfuzz itself
# appends the summary to $GITHUB_STEP_SUMMARY and, with GITHUB_ACTIONS=true, prints an
# annotation per new finding. The exit code and verdict go to $GITHUB_OUTPUT and this step
# succeeds, so the report is uploaded before the Verdict step fails the job.
set -uo pipefail

config="${INPUT_CONFIG:-normfuzz.toml}"
report="${INPUT_REPORT:-normfuzz-report}"
if [[ ! -f "$config" ]]; then
  echo "::error title=normfuzz::$config not found (run \`normfuzz init\` in the repository, or set the config input)" >&2
  code=2
else
  read -r -a extra <<<"${INPUT_ARGS:-}"
  normfuzz conform --config "$config" --report "$report" ${extra[@]+"${extra[@]}"}
  code=$?
fi
case "$code" in
  0) verdict=pass ;;
  1) verdict=fail ;;
  *) verdict=error ;;
esac
{
  echo "exit-code=$code"
  echo "verdict=$verdict"
  echo "report=$report"
} >>"${GITHUB_OUTPUT:-/dev/null}"
echo "normfuzz: $verdict (exit $code); report in $report"
