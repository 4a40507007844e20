package runner

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
)

// Fingerprint describes the hardware and software a run was made on. Runs
// are compared only with runs of the same fingerprint. It never holds
// environment variables, host names, user names or paths.
type Fingerprint struct {
	GPU      string `json:"gpu"`       // model, "none" without a GPU
	GPUCount int    `json:"gpu_count"` // 0 without a GPU
	Driver   string `json:"driver"`
	CUDA     string `json:"cuda"` // the CUDA version torch was built with
	CPU      string `json:"cpu"`
	CPUs     int    `json:"cpus"`
	Torch    string `json:"torch"`
	Python   string `json:"python"`
	// CUDNN and NCCL are the versions torch reports (cuDNN as its number,
	// e.g. "90100"), from inside the job; empty for a build without them,
	// so that CPU fingerprints hash as before they existed.
	CUDNN    string `json:"cudnn,omitempty"`
	NCCL     string `json:"nccl,omitempty"`
	Nsys     string `json:"nsys,omitempty"`
	Profiler string `json:"profiler"`
	OS       string `json:"os"`
	// Nodes is the number of Slurm nodes the job ran on and NodeGPUs each
	// node's GPU model and count ("NVIDIA H100 80GB HBM3 ×8; none"),
	// sorted, without node names; absent outside Slurm, so that other
	// fingerprints hash as before. A string: fingerprints stay comparable.
	Nodes    int    `json:"nodes,omitempty"`
	NodeGPUs string `json:"node_gpus,omitempty"`
}

// Hash is a short stable digest of the fingerprint.
func (f Fingerprint) Hash() string {
	b, _ := json.Marshal(f)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Diff lists the fields that differ, as "field: a != b", in the order of
// the struct's fields (a mismatch message reads the same every time).
func (f Fingerprint) Diff(g Fingerprint) []string {
	var a, b map[string]any
	ja, _ := json.Marshal(f)
	jb, _ := json.Marshal(g)
	json.Unmarshal(ja, &a)
	json.Unmarshal(jb, &b)
	var out []string
	t := reflect.TypeFor[Fingerprint]()
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		v, inA := a[k]
		w, inB := b[k]
		if (inA || inB) && v != w {
			out = append(out, k+": "+toString(v)+" != "+toString(w))
		}
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case string:
		return strconv.Quote(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func output(ctx context.Context, name string, args ...string) string {
	out, _ := probe(ctx, 30*time.Second, name, args...)
	return out
}

// probe runs a command for its output; timedOut says that it did not
// answer within the limit (as opposed to failing), which a fingerprint
// must not take for "not installed".
func probe(ctx context.Context, limit time.Duration, name string, args ...string) (out string, timedOut bool) {
	// Bounded (internal/bounded): a hostile nvidia-smi that streamed
	// 40 MB/s here drove gpugate to 4.2 GB; a fingerprint needs a few
	// lines.
	// The job's Python runs the pull request's code (a sitecustomize.py or
	// torch.py beside it): the denied environment, and gpugate closed to
	// it, as for the job.
	notDumpable()
	res, err := bounded.Run(ctx, bounded.Options{Limit: limit, MaxOutput: 64 << 10, Env: jobEnv(os.Environ())}, name, args...)
	if err != nil {
		return "", res.TimedOut
	}
	return strings.TrimSpace(string(res.Out)), false
}

// probeIsolated is probe for the job's Python, which runs the pull
// request's code (a torch.py or sitecustomize.py beside it): in namespaces
// like the job's (isolatedArgv) where they can be made, so that it sees no
// other process and no credential file either.
func probeIsolated(ctx context.Context, limit time.Duration, name string, args ...string) (out string, timedOut bool) {
	path := name
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", false
		}
		path = p
	}
	notDumpable()
	self, argv, ok := isolatedArgv(path, append([]string{name}, args...))
	if !ok {
		return probe(ctx, limit, name, args...)
	}
	res, err := bounded.Run(ctx, bounded.Options{Limit: limit, MaxOutput: 64 << 10, Env: jobEnv(os.Environ()), Argv0: argv[0]}, self, argv[1:]...)
	if err != nil {
		return "", res.TimedOut
	}
	return strings.TrimSpace(string(res.Out)), false
}

// probeScript prints what gpugate_job.versions() reports from inside a
// job, the same way, so that a probed fingerprint and one from inside the
// job hash alike: python, torch, CUDA ("none"), cuDNN and NCCL ("-" for
// none).
const probeScript = `import sys, torch
def v(f):
    try:
        x = f()
    except Exception:
        return "-"
    return ".".join(map(str, x)) if isinstance(x, tuple) else (str(x) if x else "-")
print(sys.version.split()[0], torch.__version__, torch.version.cuda or "none", v(torch.backends.cudnn.version), v(torch.cuda.nccl.version))`

// torchProbeLimit bounds the job's Python importing torch: a cold import
// on a loaded 2-core runner has been seen to take over 30 s.
var torchProbeLimit = 3 * time.Minute

// TakeFingerprint reads the machine: nvidia-smi for GPUs and the driver,
// /proc/cpuinfo, the job's Python for torch, and nsys --version. The
// versions it probes with python -c are a fallback: a profiled run
// replaces them with those its training process reports (FromJob).
func TakeFingerprint(ctx context.Context, python, nsys, profiler string) Fingerprint {
	f := Fingerprint{GPU: "none", CPUs: runtime.NumCPU(), Profiler: profiler, OS: runtime.GOOS + "/" + runtime.GOARCH}
	if smi := output(ctx, "nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"); smi != "" {
		lines := strings.Split(smi, "\n")
		f.GPUCount = len(lines)
		name, driver, _ := strings.Cut(lines[0], ",")
		f.GPU, f.Driver = strings.TrimSpace(name), strings.TrimSpace(driver)
	}
	if fh, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				f.CPU = strings.TrimSpace(v)
				break
			}
		}
		fh.Close()
	}
	if python != "" {
		v, timedOut := probeIsolated(ctx, torchProbeLimit, python, "-c", probeScript)
		switch {
		case timedOut:
			// Never record a machine without torch because the import was
			// slow: that fingerprint would match no baseline, silently.
			// This one differs visibly, field by field.
			f.Torch, f.CUDA = "unknown (import torch timed out)", "unknown (import torch timed out)"
		case v != "":
			if p := strings.Fields(v); len(p) == 5 {
				f.Python, f.Torch, f.CUDA = p[0], p[1], p[2]
				f.CUDNN, f.NCCL = strings.Trim(p[3], "-"), strings.Trim(p[4], "-")
			}
		}
		if v == "" {
			v, _ = probeIsolated(ctx, 30*time.Second, python, "-c", "import sys; print(sys.version.split()[0])")
			f.Python = v
		}
	}
	if nsys != "" && profiler == Nsys {
		if m := strings.Fields(output(ctx, nsys, "--version")); len(m) > 0 {
			f.Nsys = m[len(m)-1]
		}
	}
	return f
}

// HasGPU reports whether nvidia-smi sees a GPU.
func HasGPU(ctx context.Context) bool {
	return output(ctx, "nvidia-smi", "-L") != ""
}
