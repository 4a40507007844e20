// Package denyenv is the environment every process gpugate starts gets:
// gpugate's own minus the credentials and the workflow's command files.
// The job under test gets it (runner), and so does every tool gpugate runs
// for facts or exports (nvidia-smi, nsys, ncu, the job's Python, git): a
// tool is a process of the same user, often dumpable (nvidia-smi), whose
// /proc/PID/environ a job without a namespace can read while it runs, and
// some run the pull request's code (the job's Python imports what lies
// beside it; git runs the repository's hooks).
package denyenv

import "strings"

// Names lists the variables of gpugate's environment that no process it
// starts inherits: gpugate's own GitHub token and every other credential of
// the workflow, the action inputs, and the workflow's command files (a job
// that could append to GITHUB_ENV or GITHUB_OUTPUT could set variables for
// later steps or forge gpugate's verdict), and the baseline store's URL and
// PostgreSQL's connection variables. A trailing * matches a prefix. More
// names (or prefixes) can be denied with GPUGATE_ENV_DENY, a
// comma-separated list.
var Names = []string{
	"GPUGATE_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN",
	"INPUT_*",
	"ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_ID_TOKEN_REQUEST_*",
	"ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL",
	"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
	// GitLab CI (gpugate ci): gpugate's own token that posts the merge
	// request note, and the job token in every form GitLab hands it out
	// (CI_REPOSITORY_URL embeds it, the registry and dependency proxy
	// passwords are it), deploy credentials and ID tokens' JWTs. The job
	// token can read the project's other repositories and packages and
	// write some: the training job under test does not need it (install
	// dependencies in the script lines before gpugate ci, which still have
	// it: docs/gitlab.md).
	"GPUGATE_GITLAB_TOKEN", "CI_JOB_TOKEN", "CI_JOB_JWT*", "CI_REPOSITORY_URL", "CI_REGISTRY_PASSWORD",
	"CI_DEPENDENCY_PROXY_PASSWORD", "CI_DEPLOY_PASSWORD",
	// Buildkite (gpugate ci): the agent's session token (buildkite-agent
	// annotate, meta-data and artifact upload act as the build with it)
	// and the job API, which can rewrite the job's environment.
	"BUILDKITE_AGENT_ACCESS_TOKEN", "BUILDKITE_AGENT_JOB_API_*",
	// The baseline store's credentials: a pull request's code that had the
	// writer's URL could write the baselines pr mode opens read-only.
	"GPUGATE_BASELINE_DB", "GPUGATE_DB", "DATABASE_URL",
	// libpq's (and pgx's) connection variables: a password, the files
	// that hold passwords or whole connection settings, and the rest of
	// the connection, which together with a password file picks the role.
	"PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE", "PGSERVICE", "PGUSER", "PGHOST", "PGHOSTADDR",
	"PGPORT", "PGDATABASE", "PGSSLKEY", "PGSSLCERT", "PGSSLROOTCERT", "PGSSLPASSWORD", "PGOPTIONS",
}

// Extra is the variable that denies more names, comma-separated.
const Extra = "GPUGATE_ENV_DENY"

// denied reports whether the variable key matches a pattern.
func denied(key string, patterns []string) bool {
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(key, prefix) {
				return true
			}
		} else if key == p {
			return true
		}
	}
	return false
}

// Filter is environ without the denied variables: Names and those that
// environ's own GPUGATE_ENV_DENY names.
func Filter(environ []string) []string {
	patterns := Names
	for _, kv := range environ {
		if extra, ok := strings.CutPrefix(kv, Extra+"="); ok && extra != "" {
			patterns = append(append([]string(nil), Names...), strings.Split(extra, ",")...)
		}
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !denied(k, patterns) {
			out = append(out, kv)
		}
	}
	return out
}
