// Package testdb builds SQLite files from the readable .sql fixtures that
// tests keep in testdata/.
package testdb

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

// FromSQL executes the SQL script at path into a new database file in a
// temporary folder and returns the file's path.
func FromSQL(t testing.TB, path string) string {
	t.Helper()
	script, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path)+".sqlite")
	db, err := sql.Open("sqlite", out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(script)); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return out
}
