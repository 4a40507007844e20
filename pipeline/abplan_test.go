package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/config"
)

// TestABPlan: the defaults sample until decided, with α spent over the
// planned looks; a fixed number of pairs looks once at 5%.
func TestABPlan(t *testing.T) {
	p := NewABPlan(0, 0, 0, &config.Config{})
	if p.Fixed || p.MinPairs != 3 || p.MaxPairs != 10 || p.Budget != 10*time.Minute || p.Looks() != 8 || p.LookAlpha() != 0.02/8 {
		t.Errorf("defaults: %+v, looks %d at %v", p, p.Looks(), p.LookAlpha())
	}
	c := &config.Config{}
	c.AB.MaxPairs, c.AB.Budget = 6, config.Duration(3*time.Minute)
	if p = NewABPlan(0, 0, 0, c); p.MaxPairs != 6 || p.Budget != 3*time.Minute || p.Looks() != 4 {
		t.Errorf("perf.yaml ab: %+v", p)
	}
	if p = NewABPlan(0, 12, time.Minute, c); p.MaxPairs != 12 || p.Budget != time.Minute {
		t.Errorf("flags over perf.yaml: %+v", p)
	}
	c.AB.Pairs = 5
	if p = NewABPlan(0, 0, 0, c); !p.Fixed || p.MaxPairs != 5 || p.Looks() != 1 || p.LookAlpha() != 0.05 || !strings.Contains(p.String(), "5 pair(s)") {
		t.Errorf("ab.pairs 5: %+v %s", p, p)
	}
	if p = NewABPlan(2, 0, 0, c); !p.Fixed || p.MaxPairs != 2 {
		t.Errorf("-pairs 2 over ab.pairs: %+v", p)
	}
}

// TestPairOrder: BH HB BH HB …, the warm-up pair base first.
func TestPairOrder(t *testing.T) {
	b, h := &Side{Name: "base"}, &Side{Name: "head"}
	var got []string
	for i := 0; i <= 4; i++ {
		for _, s := range pairOrder(i, b, h) {
			got = append(got, s.Name[:1])
		}
	}
	if s := strings.Join(got, ""); s != "bhbhhbbhhb" {
		t.Errorf("order %s, want bh (warm-up) bh hb bh hb", s)
	}
}
