package baseline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/baseline"
)

// firstStepTime is the first step's step_time_ns in an analysis document.
var firstStepTime = regexp.MustCompile(`"step_time_ns": -?[0-9.eE+]+`)

// hostileExports are exports an attacker (or a broken tool) can hand to
// gpugate baseline import, as JSON text, and whether each must be taken.
// Built from one good run (exportRun) by editing its text.
func hostileExports(t *testing.T) []struct {
	name string
	json string
	ok   bool
} {
	d := string(doc(t))
	if !firstStepTime.MatchString(d) {
		t.Fatal("the document has no step_time_ns")
	}
	stepTime := func(v string) string {
		return exportRun(t, "1", firstStepTime.ReplaceAllLiteralString(d, `"step_time_ns": `+v), "", "")
	}
	return []struct {
		name string
		json string
		ok   bool
	}{
		{"id 2^63-1", exportRun(t, "9223372036854775807", d, "", ""), false},
		{"id 2^53+1", exportRun(t, "9007199254740993", d, "", ""), false},
		{"id -1", exportRun(t, "-1", d, "", ""), false},
		{"id 2^53", exportRun(t, "9007199254740992", d, "", ""), true},
		{"id of a stored run", exportRun(t, "1", d, "", ""), true},
		{"step_time_ns 1e308", stepTime("1e308"), false},
		{"step_time_ns 2^63", stepTime("9223372036854775808"), false},
		{"step_time_ns 1.5", stepTime("1.5"), false},
		// Issue 26: every time is not negative and within its bound.
		{"step_time_ns 9.2e18", stepTime("9.2e18"), false},
		{"step_time_ns -1", stepTime("-1"), false},
		{"step_time_ns 2^63-1", stepTime("9223372036854775807"), false},
		{"step_time_ns 10^14", stepTime("100000000000000"), true},
		{"ncu rank 2^40", exportRun(t, "1", d, "", `[{"rank": 1099511627776, "kernel": "k", "function_name": "k", "ncu_version": "", "launch": {"id": 0}}]`), false},
		{"ncu rank 2^31", exportRun(t, "1", d, "", `[{"rank": 2147483648, "kernel": "k", "function_name": "k", "ncu_version": "", "launch": {"id": 0}}]`), false},
		{"ncu rank 10", exportRun(t, "1", d, "", `[{"rank": 10, "kernel": "k", "function_name": "k", "ncu_version": "", "launch": {"id": 0}}]`), true},
		{"ncu launch 1e308", exportRun(t, "1", d, "", `[{"rank": 1, "kernel": "k", "function_name": "k", "ncu_version": "", "launch": {"x": 1e308}}]`), false},
		{"conditions 1e308", exportRun(t, "1", d, `{"sampled": true, "gpus": [{"index": 0, "max_temp_c": 1e308}]}`, ""), false},
		{"conditions index 2^63", exportRun(t, "1", d, `{"sampled": true, "gpus": [{"index": 9223372036854775808}]}`, ""), false},
	}
}

// exportRun is an export of one run with the given id, analysis,
// conditions and ncu kernels (JSON text; "" for none).
func exportRun(t *testing.T, id, analysis, conditions, ncu string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"gpugate_baseline_export": 1, "runs": [{"id": %s, "workload": "w", "branch": "main", "commit": "imported", "created_at": 1700000000,
		"kind": "baseline", "profiler": "nsys", "fingerprint_hash": "abc", "fingerprint": {"gpu": "A100"}, "gpugate_version": "t", "analysis": %s`, id, analysis)
	if conditions != "" {
		fmt.Fprintf(&b, `, "conditions": %s`, conditions)
	}
	if ncu != "" {
		fmt.Fprintf(&b, `, "ncu_kernels": %s`, ncu)
	}
	b.WriteString("}]}")
	if !json.Valid([]byte(b.String())) {
		t.Fatalf("test export is not JSON: %.200s", b.String())
	}
	return b.String()
}

// The same hostile exports go to SQLite and to PostgreSQL: both take
// exactly the same ones, and after each the store still records (the
// next id is the next in line: no forged id reached the identity
// sequence) and serves every baseline.
func TestHostileImportsAlikeOnBothBackends(t *testing.T) {
	cases := hostileExports(t)
	outcome := map[string][]string{}
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s, err := baseline.Open(ctx, be.new(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Record(ctx, run(doc(t), "before")); err != nil {
			t.Fatal(err)
		}
		stored := 1
		for _, c := range cases {
			var e baseline.Export
			if err := json.Unmarshal([]byte(c.json), &e); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			n, err := s.Import(ctx, &e)
			outcome[be.name] = append(outcome[be.name], fmt.Sprintf("%s: imported %d, refused %v", c.name, n, err != nil))
			if (err == nil) != c.ok {
				t.Errorf("%s: import error %v, want ok=%v", c.name, err, c.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "nothing imported") {
				t.Errorf("%s: %v, want 'nothing imported'", c.name, err)
			}
			stored += n
			id, err := s.Record(ctx, run(doc(t), "after "+c.name))
			stored++
			if err != nil || id != int64(stored) {
				t.Errorf("%s: record after the import: id %d, %v; want %d", c.name, id, err, stored)
			}
			rs, err := s.Baselines(ctx, "w", "main", "abc", 1000)
			if err != nil || len(rs) != stored {
				t.Errorf("%s: %d baselines, %v; want %d", c.name, len(rs), err, stored)
			}
			for _, r := range rs {
				if r.ID > int64(stored) {
					t.Errorf("%s: a run has id %d: the export's id was written", c.name, r.ID)
				}
			}
		}
	})
	if a, b := strings.Join(outcome["sqlite"], "\n"), strings.Join(outcome["postgres"], "\n"); a != b {
		t.Errorf("SQLite and PostgreSQL differ:\n%s\n---\n%s", a, b)
	}
}
