package runner

import "github.com/gpugate/gpugate/internal/denyenv"

// DeniedEnv lists the variables of gpugate's environment that a job does
// not inherit (internal/denyenv, which every other tool gpugate starts
// gets too): gpugate's own GitHub token and every other credential of the
// workflow, the action inputs, the workflow's command files, and the
// baseline store's URL and PostgreSQL's connection variables. A trailing *
// matches a prefix. More names (or prefixes) can be denied with
// GPUGATE_ENV_DENY, a comma-separated list; a variable the job needs
// anyway goes in perf.yaml's env: (perf.yaml values are added after the
// filter, so they always reach the job).
var DeniedEnv = denyenv.Names

// jobEnv is environ without the denied variables.
func jobEnv(environ []string) []string { return denyenv.Filter(environ) }
