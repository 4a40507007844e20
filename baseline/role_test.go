package baseline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/pgtest"
)

// TestReadOnlyRoleWarning: pr mode opened a PostgreSQL store read-only
// through whatever role its URL named, a writer's included, and said
// nothing; a pull request's code then was one leaked password away from
// rewriting the baselines. Now OpenReadOnly asks the server (with the real
// PostgreSQL of internal/pgtest) and a writer's role gets a warning that
// says how to fix it; a reader's gets none.
func TestReadOnlyRoleWarning(t *testing.T) {
	ctx := context.Background()
	target := pgtest.DB(t)
	s, err := baseline.Open(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	s.Record(ctx, run(doc(t), "c1"))
	s.Close()

	w, err := baseline.OpenReadOnly(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	warn := w.RoleWarning()
	w.Close()
	for _, want := range []string{`role "gpugate_test"`, "can write the store", "GRANT SELECT ON ALL TABLES IN SCHEMA gpugate", "docs/security.md"} {
		if !strings.Contains(warn, want) {
			t.Errorf("writer's warning %q lacks %q", warn, want)
		}
	}
	if strings.Contains(warn, pgtest.Password) {
		t.Errorf("the warning shows the password: %q", warn)
	}

	super := pgtest.Super(t, pgtest.Name(target))
	for _, q := range []string{`DROP ROLE IF EXISTS gpugate_pr_reader`, `CREATE ROLE gpugate_pr_reader LOGIN PASSWORD 'pr-reader-pw'`,
		`GRANT USAGE ON SCHEMA gpugate TO gpugate_pr_reader`, `GRANT SELECT ON ALL TABLES IN SCHEMA gpugate TO gpugate_pr_reader`} {
		if _, err := super.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		super.Exec(`REVOKE ALL ON ALL TABLES IN SCHEMA gpugate FROM gpugate_pr_reader`)
		super.Exec(`REVOKE ALL ON SCHEMA gpugate FROM gpugate_pr_reader`)
	})
	r, err := baseline.OpenReadOnly(ctx, pgtest.URLAs("gpugate_pr_reader", "pr-reader-pw", pgtest.Name(target)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.RoleWarning() != "" {
		t.Errorf("a reader's role got a warning: %q", r.RoleWarning())
	}
	if rs, err := r.Baselines(ctx, "w", "main", "abc", 5); err != nil || len(rs) != 1 {
		t.Errorf("Baselines as a reader: %d, %v", len(rs), err)
	}
}
