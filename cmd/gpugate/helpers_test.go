package main

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"
)

func mkPlainSQLite(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
}
