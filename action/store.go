package action

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
)

// Slug makes a workload name safe for paths, artifact names, cache keys and
// the comment's marker: a name that is not already safe becomes its safe
// characters plus a short hash of the whole name, so that two names never
// share a slug.
func Slug(name string) string {
	if config.CheckName(name) == nil {
		return name
	}
	s := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return r
		}
		return '-'
	}, name)
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = s[:40]
	}
	sum := sha256.Sum256([]byte(name))
	if s == "" {
		s = "workload"
	}
	return s + "-" + hex.EncodeToString(sum[:4])
}

// Folders are where a workload's runs and evidence go: under RUNNER_TEMP,
// never in the checkout.
func Folders(getenv func(string) string, workload string) (runs, art string) {
	tmp := getenv("RUNNER_TEMP")
	if tmp == "" {
		tmp = os.TempDir()
	}
	s := Slug(workload)
	return filepath.Join(tmp, "gpugate-runs", s), filepath.Join(tmp, "gpugate-artifacts", s)
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// store resolves the baseline store of a workload: the baseline-db input;
// else perf.yaml's baseline.db when it is a postgres:// URL or an absolute
// path; else a SQLite file outside the workspace (actions/checkout cleans
// the workspace, and a relative path is inside it), one per workload so
// that the caches of two workloads never overwrite each other:
// $GPUGATE_STORE_DIR, else $HOME/.cache/gpugate, /WORKLOAD/baseline.db.
func store(getenv func(string) string, in inputs, c *config.Config, w *config.Workload) string {
	env := func(k string) string {
		if k == "GITHUB_ACTIONS" {
			return "true"
		}
		return getenv(k)
	}
	db, err := baseline.Location(in.db, c.Baseline.DB, Slug(w.Name), env)
	if err != nil { // only without HOME and RUNNER_TEMP: a bare environment
		db = filepath.Join(os.TempDir(), "gpugate-store", Slug(w.Name), "baseline.db")
	}
	return db
}

// CacheKeyPrefix and CacheKey are the actions/cache keys of a workload's
// store on machines of one fingerprint. A cache entry cannot be
// overwritten, so every save gets its own key (the run id and attempt);
// restoring with the prefix as restore-key gets the newest entry saved for
// this workload and fingerprint (actions/cache picks the most recent of
// several prefix matches). Version v1 changes with the store's layout.
func CacheKeyPrefix(workload, fingerprint string) string {
	return "gpugate-baseline-v1-" + Slug(workload) + "-" + keyPart(fingerprint) + "-"
}

func CacheKey(workload, fingerprint, runID, attempt string) string {
	if runID == "" {
		runID = "local"
	}
	if attempt == "" {
		attempt = "1"
	}
	return CacheKeyPrefix(workload, fingerprint) + keyPart(runID) + "-" + keyPart(attempt)
}

var keyUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// keyPart reduces a value from the environment to what a cache key may
// hold.
func keyPart(s string) string {
	s = strings.Trim(keyUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-.")
	if s == "" {
		return "x"
	}
	return s
}

// StoreFor is the store the Action uses for workload w with the
// baseline-db input db: the CLI under Actions resolves the same one
// (baseline.Location; cmd/gpugate's TestStoreCLIAndActionAgree).
func StoreFor(getenv func(string) string, db string, c *config.Config, w *config.Workload) string {
	return store(getenv, inputs{db: db}, c, w)
}
