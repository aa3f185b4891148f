#!/usr/bin/env bash
# Copyright The meshinit Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Runs the stages of a make target one after another, each given as
# "name::command" (the command runs in bash), prints a progress line as each
# starts and ends, and at the end a table of every stage: its time and its
# result. It stops at the first stage that fails (later ones are "not run")
# and exits with that stage's status. The Makefile's test, test-matrix,
# test-e2e and ci targets are lists of stages; docs/development.md says what
# each runs and how long it takes.
#
#   hack/stages.sh "go vet::go vet ./..." "go test::go test ./..."
#
# STAGES_LOG, when set, names a file the summary table is appended to too.
{ # read whole before running: a checkout during a run cannot change the script under it
set -uo pipefail

names=() commands=()
for arg; do
	if [[ "$arg" != *::* ]]; then
		echo "hack/stages.sh: stage \"$arg\": want \"name::command\"" >&2
		exit 2
	fi
	names+=("${arg%%::*}")
	commands+=("${arg#*::}")
done

n=${#names[@]}
times=() results=()
status=0 began=$SECONDS
for ((i = 0; i < n; i++)); do
	if ((status != 0)); then
		times+=("") results+=("not run")
		continue
	fi
	echo "==> [$((i + 1))/$n] ${names[i]} ($(date +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	start=$SECONDS
	bash -c "${commands[i]}"
	status=$?
	took=$((SECONDS - start))
	times+=("$(printf '%d:%02d' $((took / 60)) $((took % 60)))")
	if ((status == 0)); then
		results+=("ok")
	else
		results+=("FAILED (exit $status)")
	fi
	echo "<== [$((i + 1))/$n] ${names[i]}: ${results[i]} in ${times[i]}" >&2
done

summary() {
	local total=$((SECONDS - began)) width=5 i
	for ((i = 0; i < n; i++)); do ((${#names[i]} > width)) && width=${#names[i]}; done
	printf '\n%-*s  %6s  %s\n' "$width" stage time result
	for ((i = 0; i < n; i++)); do printf '%-*s  %6s  %s\n' "$width" "${names[i]}" "${times[i]}" "${results[i]}"; done
	printf '%-*s  %6s  %s\n' "$width" total "$(printf '%d:%02d' $((total / 60)) $((total % 60)))" \
		"$([[ $status == 0 ]] && echo ok || echo FAILED) (load at the end $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
}
summary >&2
[[ -z "${STAGES_LOG:-}" ]] || summary >>"$STAGES_LOG"
exit "$status"
}
