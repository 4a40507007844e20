package action

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

type envMap map[string]string

func (e envMap) get(k string) string { return e[k] }

func TestSlugAndCacheKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"resnet", "resnet"}, {"bert-large_v2.1", "bert-large_v2.1"}} {
		if got := Slug(c.in); got != c.want {
			t.Errorf("Slug(%q) = %q", c.in, got)
		}
	}
	for _, in := range []string{"../x", "a b", "x</details>", "-->", "", strings.Repeat("a", 100), "a/b"} {
		s := Slug(in)
		if config.CheckName(s) != nil || s == Slug(in+"x") {
			t.Errorf("Slug(%q) = %q: not safe or not distinct", in, s)
		}
	}
	k := CacheKey("resnet", "0123456789abcdef", "42", "2")
	if k != "gpugate-baseline-v1-resnet-0123456789abcdef-42-2" || !strings.HasPrefix(k, CacheKeyPrefix("resnet", "0123456789abcdef")) {
		t.Errorf("cacheKey = %q", k)
	}
	// Another workload or fingerprint never restores this one's store.
	if strings.HasPrefix(k, CacheKeyPrefix("res", "0123456789abcdef")) || strings.HasPrefix(k, CacheKeyPrefix("resnet", "0123456789abcdee")) {
		t.Errorf("prefixes of other workloads or fingerprints match %q", k)
	}
	// The store lives outside the workspace, per workload.
	env := envMap{"HOME": "/home/runner", "GITHUB_WORKSPACE": "/home/runner/work/x/x"}
	cfg, err := config.Parse([]byte("version: 1\nworkloads:\n  - name: resnet\n    command: x\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := store(env.get, inputs{}, cfg, &cfg.Workloads[0]); got != "/home/runner/.cache/gpugate/resnet/baseline.db" {
		t.Errorf("store = %q", got)
	}
	if got := store(env.get, inputs{db: "postgres://h/db"}, cfg, &cfg.Workloads[0]); got != "postgres://h/db" {
		t.Errorf("store with an input = %q", got)
	}
}

// TestRederiveKeepsConditions: the fork flow's comment re-derives the
// verdict from the artifact's metrics; the run conditions that voided it
// in the run must void it again, or a regression measured on a throttled
// GPU is posted as a regression and a pass against a baseline that ran
// throttled is posted as a pass.
func TestRederiveKeepsConditions(t *testing.T) {
	sm := 1410.0
	gpu := func(share float64) *runcond.Conditions {
		return &runcond.Conditions{Sampled: true, GPUs: []runcond.GPUConditions{{Index: 0, Name: "NVIDIA H100", Samples: 10, Busy: 10,
			SMClockMedianMHz: &sm, ReasonShare: map[string]float64{"hw_slowdown": share}}}}
	}
	for _, tc := range []struct {
		name       string
		metric     stats.Verdict
		base, cand *runcond.Conditions
		want       stats.Verdict
	}{
		{"regression on a throttled candidate", stats.Regression, gpu(0), gpu(0.4), stats.Inconclusive},
		{"pass against a throttled baseline", stats.Pass, gpu(0.4), gpu(0), stats.Inconclusive},
		{"regression under good conditions", stats.Regression, gpu(0), gpu(0), stats.Regression},
		{"pass on a throttled candidate", stats.Pass, gpu(0), gpu(0.4), stats.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &gate.Report{Verdict: tc.metric, Metrics: []stats.Result{{Name: "step_time", Gate: true, Verdict: tc.metric}}}
			gate.ApplyConditions(rep, []*runcond.Conditions{tc.base}, []*runcond.Conditions{tc.cand}, gate.DefaultConditionMargins, "")
			if rep.Verdict != tc.want {
				t.Fatalf("the run's verdict %s, want %s", rep.Verdict, tc.want)
			}
			before := len(rep.Warnings)
			rederive(rep) // what the comment posts
			if rep.Verdict != tc.want {
				t.Errorf("re-derived verdict %s, want %s (conditions %+v)", rep.Verdict, tc.want, rep.Conditions)
			}
			n := 0
			for _, w := range rep.Warnings {
				if strings.HasPrefix(w, "run conditions void") {
					n++
				}
			}
			if len(rep.Warnings) != before || n > 1 {
				t.Errorf("warnings %q: the reasons said twice", rep.Warnings)
			}
		})
	}
}
