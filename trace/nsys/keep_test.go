package nsys

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/trace"
)

// The literal prefilter must never reject a name the regexp matches: it is
// checked against the regexp itself on names that do and do not match.
func TestNameMatcherPrefilter(t *testing.T) {
	patterns := []*regexp.Regexp{
		analysis.DefaultStepPattern, analysis.DefaultDataPattern, analysis.DefaultSyncProxyPattern,
		regexp.MustCompile(`(?i)step`), regexp.MustCompile(`^a?step$`), regexp.MustCompile(`x*`),
		regexp.MustCompile(`^(?:FSDP::root_pre_forward|Optimizer\.step#\w+\.step)`), regexp.MustCompile(`(?m)^step`),
		regexp.MustCompile(`\bstep\b|^iter(ation)?_\d+$`), regexp.MustCompile(`^$`), regexp.MustCompile(`a+b{2,}c`),
		regexp.MustCompile(`^ab(c|de)f`), regexp.MustCompile(`^(?:ab|c)d`), regexp.MustCompile(`^é+x`), regexp.MustCompile(`^x{2}y`),
		regexp.MustCompile(`^a\bb`), regexp.MustCompile(`\Aaten::(?:_local_scalar_dense|tolist)\z`), regexp.MustCompile(`^(?i:k)x`),
		regexp.MustCompile(`(?i)optimizer`), regexp.MustCompile(`(?i)zero_grad`), regexp.MustCompile(`^(?i)step\b`),
		regexp.MustCompile(`(?i)xk`), regexp.MustCompile(`(?i)éa`), regexp.MustCompile(`a(?i:b)c`), regexp.MustCompile(`^x(?i:yz)`),
	}
	names := []string{
		"", "step", "step 3", "ProfilerStep#12", "ProfilerStep#", "train_step", "training_step", "train_stepper",
		"stepping", "astep", "a step", "xstep\nstep", "STEP", "Step", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
		"DataLoader.__next__", "train_dataloader_next", "aten::_local_scalar_dense", "aten::tolist", "aten::tolist2",
		"sync:Tensor.item[3]", "aten::empty_strided, op_id = 999730", "FSDP::root_pre_forward", "Optimizer.step#AdamW.step",
		"iteration_12", "iter_3", "abbc", "aabbbc", "abc", "line1\nstep",
		"abcf", "abdef", "abdf", "abd", "cd", "abcd", "ééx", "éx", "x", "xxy", "xy", "xxxy", "a b", "ab",
		"\u212ax", "kx", "Kx", "xkx", "x\u212a", "XK", "xK",
		"Optimizer.step#AdamW.step", "OPTIMIZER", "optimizer", "OptimizeR!", "optimize", "zero_grad", "Module.ZERO_GRAD",
		"zero-grad", "STEP 1", "Step_", "éa", "ÉA", "éA", "aBc", "abC", "ABC", "xYz", "XYZ", "xyZ1", "ÿoptimizer",
	}
	for _, re := range patterns {
		m := newNameMatcher(re)
		for _, n := range names {
			if got, want := m.match([]byte(n)), re.MatchString(n); got != want {
				t.Errorf("%q on %q: matcher %v, regexp %v", re, n, got, want)
			}
		}
	}
	// The default patterns do get a prefilter (else it would not save anything).
	// Nor do step inference's, two of which ignore case: without a prefilter
	// every NVTX range of an export runs through their regexps.
	for _, re := range append([]*regexp.Regexp{analysis.DefaultStepPattern, analysis.DefaultDataPattern, analysis.DefaultSyncProxyPattern}, analysis.InferencePatterns()...) {
		if newNameMatcher(re).pre == nil {
			t.Errorf("%q: no literal prefilter", re)
		}
	}
}

// A lean read (Options.RangeNames) keeps a fraction of the ranges and API
// calls, and analysis of it must give exactly what analysis of a full read
// gives: every step metric, the warnings and the findings with their
// culprits (which name the ranges around syncs and idle gaps).
func TestLeanReadAnalyzesTheSame(t *testing.T) {
	files := []string{
		fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite"),
		fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_after.sqlite"),
		fixtures.Path(t, "nsys-sqlite/extrap-concurrent-gtx1060-toy/profile1.sqlite"),
		testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql")),
		testdb.FromSQL(t, filepath.Join("testdata", "ptsz-2022.4.sql")),
	}
	steps := []*regexp.Regexp{nil, regexp.MustCompile(`^ncclGroupStart`), regexp.MustCompile(`^FlashAttnFunc`), regexp.MustCompile(`record_param_comms`)}
	for _, f := range files {
		full, err := ReadFile(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range steps {
			opt := analysis.Options{StepPattern: step}
			names := []*regexp.Regexp{cmp.Or(step, analysis.DefaultStepPattern), analysis.DefaultDataPattern, analysis.DefaultSyncProxyPattern}
			lean, err := ReadFileOptions(context.Background(), f, Options{RangeNames: names})
			if err != nil {
				t.Fatal(err)
			}
			if len(lean) != len(full) {
				t.Fatalf("%s: %d profiles lean, %d full", f, len(lean), len(full))
			}
			for i := range full {
				a, b := analysis.Analyze(full[i], opt), analysis.Analyze(lean[i], opt)
				if diff := gocmp.Diff(summary(a), summary(b)); diff != "" {
					t.Errorf("%s step %v pid %d: lean read differs (-full +lean):\n%s", filepath.Base(f), step, full[i].Process, diff)
				}
				if len(lean[i].Ranges) > len(full[i].Ranges) || len(lean[i].API) > len(full[i].API) {
					t.Errorf("lean read kept more than the full one")
				}
				// The H100 exports hold ~9,500 emit_nvtx op ranges per process
				// (and ~2,600 GPU idle gaps, of which 512 keep ranges): the lean
				// read must really leave most of them out.
				if strings.Contains(f, "mfu_2gpu") && len(lean[i].Ranges)*3 > len(full[i].Ranges) {
					t.Errorf("%s: lean read kept %d of %d ranges", filepath.Base(f), len(lean[i].Ranges), len(full[i].Ranges))
				}
			}
		}
	}
}

type result struct {
	Steps                []analysis.Step
	Warnings             []string
	Findings             []analysis.Finding
	Start, End           int64
	Kernels, Memcpy      int
	GPUBusy              int64
	WholeProfile, HasGPU bool
	KernelStats          []analysis.KernelStat
	Gaps                 []analysis.Gap
}

func summary(r *analysis.Result) result {
	return result{r.Steps, r.Warnings, r.Findings(), r.Start, r.End, r.Kernels, r.MemcpyCount, r.GPUBusy, r.WholeProfile, r.HasGPU, r.KernelStats, r.Gaps}
}

// Reading the pages directly gives exactly the rows SQLite gives, on every
// nsys fixture and hand-made export, full and lean.
func TestDirectReadsMatchSQLite(t *testing.T) {
	files := []string{
		fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite"),
		fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_after.sqlite"),
		fixtures.Path(t, "nsys-sqlite/extrap-concurrent-gtx1060-toy/profile1.sqlite"),
		testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql")),
		testdb.FromSQL(t, filepath.Join("testdata", "ptsz-2022.4.sql")),
	}
	defer func() { directReads = true }()
	before := directTasks.Load()
	for _, f := range files {
		for _, opt := range []Options{{}, {RangeNames: []*regexp.Regexp{analysis.DefaultStepPattern}}} {
			directReads = false
			want, err := ReadFileOptions(context.Background(), f, opt)
			if err != nil {
				t.Fatal(err)
			}
			directReads = true
			got, err := ReadFileOptions(context.Background(), f, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d profiles, want %d", f, len(got), len(want))
			}
			for i := range want {
				if diff := gocmp.Diff(flat(want[i]), flat(got[i])); diff != "" {
					t.Errorf("%s lean=%v: direct read differs (-sqlite +direct):\n%s", filepath.Base(f), opt.RangeNames != nil, diff)
				}
			}
		}
	}
	if directTasks.Load() == before {
		t.Error("no table was read directly")
	}
}

// flat is a profile with names in place of Names, for comparing two reads.
type flatProfile struct {
	Process, Rank    int
	Variant          string
	Devices          []trace.Device
	GPU, API, Ranges []string
	SyncWaits        []trace.SyncWait
	Warnings         []string
}

func flat(p *trace.Profile) flatProfile {
	f := flatProfile{Process: p.Process, Rank: p.Rank, Variant: p.Variant, Devices: p.Devices, SyncWaits: p.SyncWaits, Warnings: p.Warnings}
	for _, op := range p.GPU {
		n := op.Name
		op.Name = 0
		f.GPU = append(f.GPU, fmt.Sprintf("%+v %q", op, p.Names.String(n)))
	}
	for _, a := range p.API {
		n := a.Name
		a.Name = 0
		f.API = append(f.API, fmt.Sprintf("%+v %q", a, p.Names.String(n)))
	}
	for _, rg := range p.Ranges {
		n := rg.Name
		rg.Name = 0
		f.Ranges = append(f.Ranges, fmt.Sprintf("%+v %q", rg, p.Names.String(n)))
	}
	return f
}
