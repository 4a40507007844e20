package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/pipeline"
)

var actionCmd = &command{
	usage: "action [-db-file FILE]",
	short: "run as the GitHub Action (reads the inputs that action.yml passes)",
	long: `
Action is what action.yml runs. It reads its inputs from GPUGATE_* variables
(composite steps get no INPUT_* on the real runner): GPUGATE_CONFIG,
GPUGATE_WORKLOAD, GPUGATE_BASELINE_DB (or -db-file FILE, which action.yml
uses: the prepare step writes the store to a file only this user can read,
and the later steps pass its path, so that a store URL with its password is
never in a step's environment), GPUGATE_BASE_BRANCH, GPUGATE_MODE (pr,
refresh or comment), GPUGATE_FAIL_ON_REGRESSION, GPUGATE_ON_INCONCLUSIVE
(fail, neutral or pass: an inconclusive verdict fails the step only with
fail), GPUGATE_COMMENT (always,
on-regression, never), GPUGATE_CHECK_RUN, GPUGATE_ACCEPT_LABEL,
GPUGATE_BOT_LOGIN, GPUGATE_TRACE_SIZE_CAP (MB), GPUGATE_CACHE, GPUGATE_RESULT
and GPUGATE_GITHUB_TOKEN. GPUGATE_PHASE picks one step of action.yml:
prepare (resolve the baseline store outside the workspace, write it to the
file that -db-file reads, and its actions/cache key), run (profile, compare,
write the evidence), post (judge the result again from its samples with
perf.yaml's settings, comment, check run, exit status); empty does run and
post at once.

In pr mode it runs the workload and compares it with the baseline as gpugate
run does, opening the store read-only (the PR's code is not trusted to write
baselines), writes the report to the job summary, gathers the evidence
(traces, compressed and capped; the report as Markdown and JSON; the job's
log; gpugate-result.json, the comparison as data) into one folder per
workload (output artifacts-path) for actions/upload-artifact, annotates
config errors at their line, job failures with the log's last lines,
regressions, and missing, stale or mismatched baselines, and posts one pull
request comment per workload that later runs edit. A pull request label
(accept-label) turns a regression into "accepted". A read-only token (a
pull request from a fork) does not fail the job: the summary says how to
post comments with the two-workflow pattern.

In comment mode (the privileged workflow_run job of that pattern) it reads
gpugate-result.json from the untrusted run's artifact as data and finds the
pull request itself: for a pull_request run from the workflow_run event
(head repository and head SHA); for a pull_request_target run, whose event
carries the base branch's commit, from GPUGATE_PR_INFO (the number and head
commit that a job running no PR code recorded), checked against the API. It
refuses an artifact that disagrees, judges every metric again from the
artifact's samples with gpugate's own rule and the settings of the trusted
perf.yaml (GPUGATE_CONFIG in this workflow's checkout, the base branch's:
its gate list, allowances, level and max_runs, never the artifact's),
re-renders the comment with every name escaped and posts it. A result whose
metric list is not one a comparison yields is refused, and the pull request
comment says so (exit 2). In refresh mode it records baseline runs.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		// action.yml passes the store as -db-file FILE (the prepare step
		// writes it), never in a step's environment: see -db-file.
		db := fs.String("db", "", "the baseline store (a SQLite path; a postgres:// URL with a password only through -db-file): replaces GPUGATE_BASELINE_DB")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) > 0 {
				return usagef("action takes no arguments: its inputs are GPUGATE_* variables")
			}
			getenv := os.Getenv
			if *db != "" {
				getenv = func(k string) string {
					if k == "GPUGATE_BASELINE_DB" {
						return *db
					}
					return os.Getenv(k)
				}
			}
			return runAction(ctx, getenv, stdout, stderr)
		}
	},
}

// runAction runs the action (package action has its flow) and maps its
// outcome to the exit status.
func runAction(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	oc, err := action.Run(ctx, action.Env{Getenv: getenv, Stdout: stdout, Stderr: stderr, Run: actionPipeline})
	if err != nil || !oc.Exit {
		return err
	}
	return verdictError(oc.Verdict, false)
}

// actionPipeline runs a workload for the action as gpugate run does: with
// the checkout's branch and commit and this binary's version.
func actionPipeline(ctx context.Context, o pipeline.Options) (*pipeline.Outcome, error) {
	o.Branch, o.Commit = gitInfo(ctx, filepath.Dir(o.Config.File))
	o.Version = version()
	return pipeline.Run(ctx, o)
}
