package baseline

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// DefaultDB is the store outside GitHub Actions: a SQLite file in the
// folder gpugate runs in.
const DefaultDB = ".gpugate/baseline.db"

// Location resolves where a workload's baseline store is. The CLI
// (gpugate run, ab, baseline ...) and the GitHub Action both use it, so
// that the two never record into different stores on one runner:
//
//  1. explicit: the -db flag, or the Action's baseline-db input;
//  2. $GPUGATE_DB;
//  3. perf.yaml's baseline.db (configured), when it is not DefaultDB;
//     under GitHub Actions only a postgres:// URL or an absolute path,
//     because a relative path lies in the workspace, which
//     actions/checkout cleans;
//  4. under GitHub Actions (GITHUB_ACTIONS=true): DIR/WORKLOAD/baseline.db
//     outside the workspace, DIR being $GPUGATE_STORE_DIR, else
//     $XDG_CACHE_HOME/gpugate, else $HOME/.cache/gpugate, else
//     $RUNNER_TEMP/gpugate-store. One file per workload, so that the
//     Action's actions/cache entries of two workloads never overwrite
//     each other; the Action carries it across ephemeral runners;
//  5. DefaultDB.
//
// getenv reads the environment (os.Getenv; tests pass their own). A
// command without a workload (baseline export, import, prune) passes "":
// under GitHub Actions, where the default is one store per workload, that
// is an error asking for -db or a workload.
func Location(explicit, configured, workload string, getenv func(string) string) (string, error) {
	actions := getenv("GITHUB_ACTIONS") == "true"
	switch {
	case explicit != "":
		return explicit, nil
	case getenv("GPUGATE_DB") != "":
		return getenv("GPUGATE_DB"), nil
	case configured != "" && configured != DefaultDB && (!actions || isURL(configured) || filepath.IsAbs(configured)):
		return configured, nil
	case !actions:
		return DefaultDB, nil
	}
	dir := getenv("GPUGATE_STORE_DIR")
	switch {
	case dir != "":
	case getenv("XDG_CACHE_HOME") != "":
		dir = filepath.Join(getenv("XDG_CACHE_HOME"), "gpugate")
	case getenv("HOME") != "":
		dir = filepath.Join(getenv("HOME"), ".cache", "gpugate")
	case getenv("RUNNER_TEMP") != "":
		dir = filepath.Join(getenv("RUNNER_TEMP"), "gpugate-store")
	default:
		return "", errors.New("baseline store: under GitHub Actions with neither $GPUGATE_STORE_DIR, $XDG_CACHE_HOME, $HOME nor $RUNNER_TEMP set: pass -db")
	}
	if workload == "" {
		return "", fmt.Errorf("baseline store: under GitHub Actions the default store is one per workload (%s): pass -workload or -db", filepath.Join(dir, "WORKLOAD", "baseline.db"))
	}
	if !safeElement(workload) {
		return "", fmt.Errorf("baseline store: workload name %q cannot name a folder: pass -db", workload)
	}
	return filepath.Join(dir, workload, "baseline.db"), nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// safeElement reports whether name is one safe path element: the
// characters config.CheckName allows, never "." or "..".
func safeElement(name string) bool {
	if name == "" || name[0] == '.' || len(name) > 255 {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
