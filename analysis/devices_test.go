package analysis

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

// TestDevicesTheRankUsed: both readers list, as a profile's devices, the
// GPUs its GPU ops ran on, not every GPU the trace names
// (docs/json.md, "devices"; without GPU activity both list every GPU
// named: TestDevicesWithoutActivity in trace/nsys). Counted with Python's
// json and the sqlite3 CLI: the A100 AlexNet trace's deviceProperties name
// 8 GPUs and its ops run on device 0; the GTX 1060 export's
// TARGET_INFO_GPU names 3 adapters (the GeForce, an Intel iGPU and
// Microsoft's render driver, the last two without SMs) and its kernels run
// on device 0; the H100 export's pid 144 runs on device 0 and pid 145 on
// device 1, and it has no TARGET_INFO_GPU.
func TestDevicesTheRankUsed(t *testing.T) {
	names := func(ds []trace.Device) string {
		s := ""
		for _, d := range ds {
			s += fmt.Sprintf("[%d %s]", d.ID, d.Name)
		}
		return s
	}
	files := fixtures.Glob(t, "kineto/hta-alexnet-a100/*.json.gz")
	if len(files) == 0 {
		t.Fatal("no A100 AlexNet fixture")
	}
	p, err := kineto.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p.Devices); got != "[0 NVIDIA A100-PG509-200]" {
		t.Errorf("A100 AlexNet devices %s, want device 0 only", got)
	}
	for _, c := range []struct{ file, want string }{
		{"nsys-sqlite/extrap-concurrent-gtx1060-toy/profile1.sqlite", "5360: [0 GeForce GTX 1060 with Max-Q Design]"},
		{"nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite", "144: [0 unknown (the export has no TARGET_INFO_GPU)] 145: [1 unknown (the export has no TARGET_INFO_GPU)]"},
	} {
		ps, err := nsys.ReadFile(context.Background(), fixtures.Path(t, c.file))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, p := range ps {
			if got != "" {
				got += " "
			}
			got += fmt.Sprintf("%d: %s", p.Process, names(p.Devices))
		}
		if got != c.want {
			t.Errorf("%s: devices %s, want %s", c.file, got, c.want)
		}
	}
}
