package runner

import (
	"os"
	"strings"
)

// DeniedEnv lists the variables of gpugate's environment that a job does
// not inherit: gpugate's own GitHub token and every other credential of the
// workflow, the action inputs, and the workflow's command files (a job that
// could append to GITHUB_ENV or GITHUB_OUTPUT could set variables for later
// steps or forge gpugate's verdict), and the baseline store's URL and
// PostgreSQL's connection variables. A trailing * matches a prefix. More
// names (or prefixes) can be denied with GPUGATE_ENV_DENY, a comma-separated
// list; a variable the job needs anyway goes in perf.yaml's env: (perf.yaml
// values are added after the filter, so they always reach the job).
var DeniedEnv = []string{
	"GPUGATE_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN",
	"INPUT_*",
	"ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_ID_TOKEN_REQUEST_*",
	"ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL",
	"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
	// The baseline store's credentials: a pull request's code that had the
	// writer's URL could write the baselines pr mode opens read-only.
	"GPUGATE_BASELINE_DB", "GPUGATE_DB", "DATABASE_URL",
	// libpq's (and pgx's) connection variables: a password, the files
	// that hold passwords or whole connection settings, and the rest of
	// the connection, which together with a password file picks the role.
	"PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE", "PGSERVICE", "PGUSER", "PGHOST", "PGHOSTADDR",
	"PGPORT", "PGDATABASE", "PGSSLKEY", "PGSSLCERT", "PGSSLROOTCERT", "PGSSLPASSWORD", "PGOPTIONS",
}

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

// jobEnv is environ without the denied variables.
func jobEnv(environ []string) []string {
	patterns := DeniedEnv
	if extra := os.Getenv("GPUGATE_ENV_DENY"); extra != "" {
		patterns = append(append([]string(nil), DeniedEnv...), strings.Split(extra, ",")...)
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
