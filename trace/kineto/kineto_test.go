package kineto

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
)

// want holds counts from ../shared/fixtures/PROVENANCE.md, which the fixture
// collector computed with a separate Python json pass over the same bytes.
type want struct {
	kernels, memcpy, memset, api int
	rank, world                  int // -1 / 0: absent
	devices                      string
	variant                      string
}

var provenance = map[string]want{
	"hta-alexnet-a100/benchmark_result_2869224_1695835535_trace.json.gz":                        {79, 16, 3, 361, 0, 0, "NVIDIA A100-PG509-200", "kineto"},
	"hta-amd-mi250-rocm/mi250_minitoy_train_ROCm6_2_kineto.json.gz":                             {14, 2, 0, 21, -1, 0, "AMD Radeon Graphics", "kineto"},
	"hta-cpu-only-edge/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz":                           {0, 0, 0, 0, 34, 300, "", "kineto"},
	"hta-df-index-resolver-v100-2rank/df_index_resolver.json.gz":                                {19370, 2040, 880, 42373, 1, 2, "Tesla V100-SXM2-32GB", "kineto"},
	"hta-gpu-user-annotation-gp100/step_based_trace_2543932.json.gz":                            {130, 10, 0, 180, 0, 0, "Quadro GP100", "kineto"},
	"hta-negative-queue-length-a100-16rank/rank0.json.gz":                                       {6080, 1390, 277, 33924, 0, 16, "NVIDIA A100-SXM4-80GB", "kineto"},
	"hta-ns-resolution-v100-resnet/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz":                {4350, 1600, 145, 15329, 0, 1, "Tesla V100-SXM2-32GB", "kineto"},
	"hta-sampled-128rank/sampled_rank-0.json.gz":                                                {1154, 40, 10, 1204, 0, 128, "", "kineto"},
	"hta-sampled-128rank/sampled_rank-1.json.gz":                                                {1104, 40, 10, 1154, 1, 128, "", "kineto"},
	"hta-trace-diff/control.json.gz":                                                            {8568, 228, 654, 24692, 3, 8, "NVIDIA A100-PG509-200", "kineto"},
	"hta-trace-diff/test.json.gz":                                                               {9876, 4856, 900, 21167, 1, 2, "Tesla V100-SXM2-16GB", "kineto"},
	"kineto-tbplugin-resnet50-v100-legacy/num_workers_0/worker0.1623143089861.pt.trace.json.gz": {8772, 12, 312, 11923, -1, 0, "Tesla V100-DGXS-32GB", "kineto-legacy-2021"},
	"kineto-tbplugin-resnet50-v100-legacy/num_workers_0/worker0.1623143566756.pt.trace.json.gz": {8772, 12, 312, 11923, -1, 0, "Tesla V100-DGXS-32GB", "kineto-legacy-2021"},
	"kineto-tbplugin-resnet50-v100-legacy/num_workers_0_nometa/worker0.pt.trace.json.gz":        {9538, 12, 377, 10800, -1, 0, "", "kineto-legacy-2021"},
	"kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz": {8868, 12, 378, 12085, -1, 0, "Tesla V100-DGXS-32GB", "kineto-legacy-2021"},
	// The two TraceLens captures: PROVENANCE.md gives no counts; these are
	// from a plain Python json pass over the same bytes (2026-12-03): X
	// events by cat, cuda_runtime + cuda_driver as API calls (B200: 1151 +
	// 221), distributedInfo and deviceProperties[0].name as written.
	"tracelens-b200-eager-nosteps/eager_trace.json.gz":             {768, 161, 0, 1372, 0, 8, "NVIDIA B200", "kineto"},
	"tracelens-mi300x-ddp-resnet18-nosteps/train_resnet18.json.gz": {2360, 5, 10, 5587, -1, 0, "AMD Instinct MI300X", "kineto"},
	"param-resnet-rtx2080ti/resnet_kineto.json.gz":                 {9628, 123, 362, 25928, -1, 0, "NVIDIA GeForce RTX 2080 Ti", "kineto"},
}

func init() {
	// The 8 DLRM ranks, from PROVENANCE.md's per-worker lines.
	for r, c := range [][4]int{{245, 16, 0, 525}, {310, 16, 0, 527}, {246, 16, 0, 513}, {315, 16, 6, 541}, {251, 16, 6, 523}, {245, 16, 0, 505}, {246, 16, 0, 515}, {246, 16, 0, 504}} {
		provenance["param-dlrm-8rank-v100/worker"+string(rune('0'+r))] = want{c[0], c[1], c[2], c[3], r, 8, "Tesla V100-SXM2-32GB", "kineto"}
	}
}

func lookupWant(rel string) (want, bool) {
	if w, ok := provenance[rel]; ok {
		return w, true
	}
	if strings.HasPrefix(rel, "param-dlrm-8rank-v100/") {
		w, ok := provenance[rel[:len("param-dlrm-8rank-v100/worker0")]]
		return w, ok
	}
	return want{}, false
}

func TestFixtures(t *testing.T) {
	dir := filepath.Join(fixtures.Dir(t), "kineto")
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel, _ := filepath.Rel(dir, path)
		t.Run(rel, func(t *testing.T) {
			w, ok := lookupWant(filepath.ToSlash(rel))
			if !ok {
				t.Fatalf("no independent expectation for fixture %s: add its PROVENANCE.md counts", rel)
			}
			p, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var k, m, ms int
			for _, op := range p.GPU {
				switch op.Kind {
				case trace.Kernel:
					k++
				case trace.Memcpy:
					m++
				case trace.Memset:
					ms++
				}
			}
			got := [4]int{k, m, ms, len(p.API)}
			if got != [4]int{w.kernels, w.memcpy, w.memset, w.api} {
				t.Errorf("kernels, memcpy, memset, runtime = %v, want %v", got, [4]int{w.kernels, w.memcpy, w.memset, w.api})
			}
			if p.Rank != w.rank || p.WorldSize != w.world {
				t.Errorf("rank/world = %d/%d, want %d/%d", p.Rank, p.WorldSize, w.rank, w.world)
			}
			if w.devices != "" && (len(p.Devices) == 0 || p.Devices[0].Name != w.devices) {
				t.Errorf("devices = %v, want %s", p.Devices, w.devices)
			}
			if p.Variant != w.variant {
				t.Errorf("variant = %q, want %q", p.Variant, w.variant)
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no Kineto fixtures under %s", dir)
	}
}

// The ns-resolution V100 trace writes ts as microsecond floats with ns
// fractions; they must become exact integers.
func TestNanosecondTimestamps(t *testing.T) {
	p, err := ReadFile(fixtures.Path(t, "kineto/hta-ns-resolution-v100-resnet/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	// The raw bytes of the event: "cat": "cuda_runtime", "name": "cudaLaunchKernel",
	// "ts": 1712195495505543.140, "dur": 41.768, "args": {... "correlation": 135071}.
	for _, a := range p.API {
		if a.Corr == 135071 {
			if a.Start != 1712195495505543140 || a.End != 1712195495505543140+41768 {
				t.Errorf("cudaLaunchKernel corr 135071 = [%d, %d), want [1712195495505543140, %d)", a.Start, a.End, int64(1712195495505543140+41768))
			}
			return
		}
	}
	t.Fatal("runtime call with correlation 135071 not found")
}

func TestUsToNs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1", 1000}, {"41.768", 41768}, {"1712195495519695.8", 1712195495519695800},
		{"53.09", 53090}, {"1.0005", 1001}, {"1.0004", 1000}, {"-2.5", -2500}, {"1e3", 1000000},
		{"1623142623460111", 1623142623460111000}, {"0.000001", 0},
	} {
		got, ok := usToNs([]byte(c.in))
		if !ok || got != c.want {
			t.Errorf("usToNs(%q) = %d, %v, want %d", c.in, got, ok, c.want)
		}
	}
}

// The CPU-only autograd-profiler format that Debian's torch 1.13 writes:
// a bare array, no cat, pid "CPU functions", empty args (see
// ../shared/research/local-profiling-cpu.md for the recorded events).
func TestAutogradCPUFormat(t *testing.T) {
	in := `[{"name": "ProfilerStep#4", "ph": "X", "ts": 287, "dur": 32379, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ph": "X", "ts": 300, "dur": 20000, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::item", "ph": "X", "ts": 30000, "dur": 10.5, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::_local_scalar_dense", "ph": "X", "ts": 30001, "dur": 5, "tid": 1, "pid": "CPU functions", "args": {}}
]`
	p, err := Parse(strings.NewReader(in), "cpu.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.Variant != "autograd-cpu" || len(p.Ranges) != 4 || len(p.GPU) != 0 {
		t.Fatalf("variant %q, %d ranges, %d GPU ops; want autograd-cpu, 4, 0", p.Variant, len(p.Ranges), len(p.GPU))
	}
	r := p.Ranges[0]
	if p.Names.String(r.Name) != "ProfilerStep#4" || r.Start != 287000 || r.End != 287000+32379000 || r.Thread != 1 {
		t.Errorf("first range = %+v (%s)", r, p.Names.String(r.Name))
	}
	if got := p.Ranges[2].End - p.Ranges[2].Start; got != 10500 {
		t.Errorf("aten::item dur = %d ns, want 10500", got)
	}
}

func TestEscapes(t *testing.T) {
	in := `{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\ud83d\ude00\n", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "args": {"x": [1, {"y": "}]"}], "z": null}}]}`
	p, err := Parse(strings.NewReader(in), "esc.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Names.String(p.Ranges[0].Name); got != "a\"b\\cé😀\n" {
		t.Errorf("name = %q", got)
	}
}

func TestBadInput(t *testing.T) {
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		io.WriteString(w, s)
		w.Close()
		return b.String()
	}
	full := gz(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}`)
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "empty file"},
		{"spaces", "  \n", "empty file"},
		{"truncated json", `{"traceEvents": [{"ph": "X", "cat": "ker`, "truncated trace"},
		{"truncated array", `[{"ph": "X"}, `, "truncated trace"},
		{"not json", "hello world", "not a JSON trace"},
		{"no events", `{"schemaVersion": 1}`, `no "traceEvents"`},
		{"bad char", `{"traceEvents": [{"ph": "X",, }]}`, "unexpected character"},
		{"truncated gzip", full[:len(full)/2], "truncated gzip"},
		{"corrupt gzip", full[:len(full)-8] + "\x00\x00\x00\x00\x00\x00\x00\x00", "gzip"},
		{"trailing garbage", `[] x`, "end of input"},
	} {
		_, err := Parse(strings.NewReader(c.in), "t.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "t.json") {
			t.Errorf("%s: Parse error = %v, want one naming t.json and containing %q", c.name, err, c.want)
		}
	}
}
