package kineto

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpugate/gpugate/internal/benchgen"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
)

// TestParallelEqualsSequential parses a 51 MB trace (two copies of a real
// A100 trace) with the parallel reader and with the sequential one.
func TestParallelEqualsSequential(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 51 MB trace")
	}
	src := fixtures.Path(t, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz")
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := benchgen.Kineto(f, src, 2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	par, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := os.Open(path)
	defer g.Close()
	seq, err := Parse(g, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(par.GPU) != 2*(6080+1390+277) || len(par.API) != 2*33924 {
		t.Errorf("parallel read %d GPU ops and %d API calls, want %d and %d", len(par.GPU), len(par.API), 2*(6080+1390+277), 2*33924)
	}
	type rec struct {
		start, end, corr, thread int64
		name                     string
	}
	flat := func(p *trace.Profile) []rec {
		var out []rec
		for _, g := range p.GPU {
			out = append(out, rec{g.Start, g.End, g.Corr, int64(g.Stream), p.Names.String(g.Name)})
		}
		for _, a := range p.API {
			out = append(out, rec{a.Start, a.End, a.Corr, a.Thread, p.Names.String(a.Name)})
		}
		for _, r := range p.Ranges {
			out = append(out, rec{r.Start, r.End, 0, r.Thread, p.Names.String(r.Name)})
		}
		slices.SortFunc(out, func(a, b rec) int {
			return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), cmp.Compare(a.corr, b.corr),
				cmp.Compare(a.thread, b.thread), cmp.Compare(a.name, b.name))
		})
		return out
	}
	a, b := flat(par), flat(seq)
	if !slices.Equal(a, b) {
		t.Fatalf("parallel and sequential reads differ: %d vs %d records", len(a), len(b))
	}
	if par.Rank != seq.Rank || par.WorldSize != seq.WorldSize || len(par.Devices) != len(seq.Devices) || par.Variant != seq.Variant {
		t.Errorf("metadata differs: %+v vs %+v", par.Devices, seq.Devices)
	}
}

func TestGuessStart(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"\"ts\": 1},\n  {\"ph\"", 12},
		{"\"a, b\n{", -1}, // no ',' at the end of the previous line
		{"x,\n\t {", 5},
		{"{}", -1},
	} {
		if got := guessStart([]byte(c.in)); got != c.want {
			t.Errorf("guessStart(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
