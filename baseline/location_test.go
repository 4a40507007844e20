package baseline

import (
	"strings"
	"testing"
)

func TestLocation(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	gha := []string{"GITHUB_ACTIONS", "true", "HOME", "/home/r", "RUNNER_TEMP", "/rt"}
	for _, tc := range []struct {
		name, explicit, configured, workload string
		env                                  []string
		want, err                            string
	}{
		{"flag first", "x.db", "y.db", "w", append([]string{"GPUGATE_DB", "z.db"}, gha...), "x.db", ""},
		{"GPUGATE_DB", "", "y.db", "w", []string{"GPUGATE_DB", "z.db"}, "z.db", ""},
		{"perf.yaml", "", "y.db", "w", nil, "y.db", ""},
		{"default", "", DefaultDB, "w", nil, DefaultDB, ""},
		{"default, no config", "", "", "", nil, DefaultDB, ""},
		{"actions: relative perf.yaml is in the workspace", "", "y.db", "w", gha, "/home/r/.cache/gpugate/w/baseline.db", ""},
		{"actions: absolute perf.yaml", "", "/data/b.db", "w", gha, "/data/b.db", ""},
		{"actions: postgres", "", "postgres://h/db", "w", gha, "postgres://h/db", ""},
		{"actions: GPUGATE_STORE_DIR", "", "", "w", append([]string{"GPUGATE_STORE_DIR", "/s"}, gha...), "/s/w/baseline.db", ""},
		{"actions: XDG", "", "", "w", append([]string{"XDG_CACHE_HOME", "/x"}, gha...), "/x/gpugate/w/baseline.db", ""},
		{"actions: no HOME", "", "", "w", []string{"GITHUB_ACTIONS", "true", "RUNNER_TEMP", "/rt"}, "/rt/gpugate-store/w/baseline.db", ""},
		{"actions: no workload", "", "", "", gha, "", "one per workload"},
		{"actions: unsafe workload", "", "", "../x", gha, "", "cannot name a folder"},
	} {
		got, err := Location(tc.explicit, tc.configured, tc.workload, env(tc.env...))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want error %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
