package main

import (
	"path/filepath"
)

// credentialFiles are the files that hold credentials gpugate may read or
// that the machine's runner keeps, to be covered in every job's mount
// namespace (runner.SetHidden): the store's -db-file, libpq's password and
// service files (PGPASSFILE, else ~/.pgpass; PGSERVICEFILE, else
// ~/.pg_service.conf), and the GitHub Actions runner's own credentials
// (.credentials, .credentials_rsaparams, .runner in the runner's folder,
// two levels above $RUNNER_WORKSPACE), with which code could impersonate
// the runner. gpugate reads the store's credentials before the job
// starts; the job never needs them.
func credentialFiles(dbFile string, getenv func(string) string) []string {
	var out []string
	if dbFile != "" && dbFile != "-" {
		out = append(out, dbFile)
	}
	home := getenv("HOME")
	if f := getenv("PGPASSFILE"); f != "" {
		out = append(out, f)
	} else if home != "" {
		out = append(out, filepath.Join(home, ".pgpass"))
	}
	if f := getenv("PGSERVICEFILE"); f != "" {
		out = append(out, f)
	} else if home != "" {
		out = append(out, filepath.Join(home, ".pg_service.conf"))
	}
	if ws := getenv("RUNNER_WORKSPACE"); ws != "" {
		dir := filepath.Dir(filepath.Dir(filepath.Clean(ws)))
		for _, f := range []string{".credentials", ".credentials_rsaparams", ".runner"} {
			out = append(out, filepath.Join(dir, f))
		}
	}
	return out
}
