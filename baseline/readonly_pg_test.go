package baseline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/pgtest"
)

// TestPostgresOpenReadOnlyNeverMigrates: OpenReadOnly never writes to the
// store, even where its role could; a PostgreSQL store whose schema is
// older than this gpugate's (version 3, from before the deep-dive's and
// the run conditions' migrations) is refused as a read-only SQLite file
// is, and left as it was, rather than migrated by a run of untrusted code.
func TestPostgresOpenReadOnlyNeverMigrates(t *testing.T) {
	ctx := context.Background()
	target := pgtest.DB(t)
	s, err := baseline.Open(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, run(doc(t), "c1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	super := pgtest.Super(t, pgtest.Name(target))
	for _, q := range []string{`DROP TABLE gpugate.ncu_kernels`, `ALTER TABLE gpugate.runs DROP COLUMN conditions`, `UPDATE gpugate.schema_version SET version = 3`} {
		if _, err := super.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r, err := baseline.OpenReadOnly(ctx, target)
	if err == nil {
		r.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "needs upgrading") {
		t.Errorf("OpenReadOnly of a version 3 store: %v, want a needs-upgrading error", err)
	}
	var v int
	if err := super.QueryRow(`SELECT version FROM gpugate.schema_version`).Scan(&v); err != nil || v != 3 {
		t.Errorf("schema version after OpenReadOnly: %d, %v; want 3, untouched", v, err)
	}
	// Opened for writing, it migrates.
	w, err := baseline.Open(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if r, err := baseline.OpenReadOnly(ctx, target); err != nil {
		t.Errorf("OpenReadOnly after the migration: %v", err)
	} else {
		r.Close()
	}
}
