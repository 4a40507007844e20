package main

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/gpugate/gpugate/baseline"
)

// A store URL with a password never travels on gpugate's command line:
// /proc/PID/cmdline is readable by every process on the machine, the job
// under test's included, whatever else gpugate does to hide (runner's
// isolation, PR_SET_DUMPABLE). Every command with -db also takes -db-file
// FILE, read after the flags are parsed, and refuses a -db that holds a
// password, saying where to put it instead.

// dbFileFlag registers -db-file beside a command's -db; nil for a command
// without -db.
func dbFileFlag(fs *flag.FlagSet) *string {
	if fs.Lookup("db") == nil {
		return nil
	}
	return fs.String("db-file", "", "read the baseline store (a SQLite `file`'s path or a postgres:// URL) from this file: for a URL with a password, which must not be on the command line")
}

// applyDBFile refuses a -db URL with a password and puts -db-file's
// content in -db.
func applyDBFile(fs *flag.FlagSet, file *string) error {
	if file == nil {
		return nil
	}
	db := fs.Lookup("db")
	if hasPassword(db.Value.String()) {
		return usagef("-db holds a password, and every process on this machine can read gpugate's command line (/proc/PID/cmdline), the job under test's included: give the URL in $GPUGATE_DB or in a file with -db-file FILE, or the password in PGPASSWORD or ~/.pgpass")
	}
	if *file == "" {
		return nil
	}
	if db.Value.String() != "" {
		return usagef("-db and -db-file: give one")
	}
	f, err := os.Open(*file)
	if err != nil {
		return fmt.Errorf("-db-file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return fmt.Errorf("-db-file %s: %w", *file, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" || strings.ContainsAny(v, "\n\r\x00") {
		return fmt.Errorf("-db-file %s: want one line, the store's path or URL", *file)
	}
	return fs.Set("db", v)
}

// hasPassword reports whether a postgres:// URL holds a password (in its
// user part or as password=).
func hasPassword(target string) bool {
	if !baseline.IsURL(target) {
		return false
	}
	u, err := url.Parse(target)
	if err != nil {
		return baseline.Mask(target) != target
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	return u.Query().Has("password")
}
