package runner

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
)

var (
	hiddenMu sync.Mutex
	hidden   []string
)

// SetHidden sets the files that hold credentials gpugate read or may read
// (the store's -db-file, ~/.pgpass, the Actions runner's .credentials):
// every job this process starts sees each covered by an empty read-only
// file, where its mount namespace can be made (isolate_linux.go). cmd sets
// them once from its flags and environment, for every job of the command
// (the runs, A/B's setup, the deep-dive's ncu runs).
func SetHidden(paths []string) {
	hiddenMu.Lock()
	defer hiddenMu.Unlock()
	hidden = append([]string(nil), paths...)
}

// hiddenFiles is SetHidden's list and extra, absolute, cleaned, without
// duplicates, in order; only those that exist (gpugate runs as the job's
// user: what it cannot see, the job cannot read either), so that the log
// names what was covered.
func hiddenFiles(extra []string) []string {
	hiddenMu.Lock()
	all := append(append([]string(nil), hidden...), extra...)
	hiddenMu.Unlock()
	var out []string
	for _, p := range all {
		if p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

var (
	storeMu     sync.Mutex
	stores      []string
	storeSecret bool
)

// SetStoreSecret says the store's location is itself a secret (it came
// from -db-file or $GPUGATE_DB): its folder is then not made read-only,
// since the mounts the init makes travel on its command line, which the
// job can read (/proc/1/cmdline in its namespace).
func SetStoreSecret(secret bool) {
	storeMu.Lock()
	defer storeMu.Unlock()
	storeSecret = secret
}

// SetStore names a SQLite store's file that gpugate reads after the job:
// the pipeline opens it before the job and picks the baseline from it
// after. In a namespace the folder that holds it is mounted read-only for
// the job (jobReach), so that a job, gpugate's own user there, cannot
// insert slow baseline runs and pass its own regression (issue 34's
// review). "" forgets them.
func SetStore(path string) {
	storeMu.Lock()
	defer storeMu.Unlock()
	if path == "" {
		stores = nil
		return
	}
	if a, err := filepath.Abs(path); err == nil && !slices.Contains(stores, a) {
		stores = append(stores, a)
	}
}

// storeFolders are the folders of SetStore's files; secret when
// SetStoreSecret says their location may not be named.
func storeFolders() (out []string, secret bool) {
	storeMu.Lock()
	defer storeMu.Unlock()
	if storeSecret && len(stores) > 0 {
		return nil, true
	}
	for _, s := range stores {
		if d, err := filepath.EvalSymlinks(filepath.Dir(s)); err == nil && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, false
}
