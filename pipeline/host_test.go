package pipeline

import (
	"testing"

	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
)

// perf.yaml's host: margins replace the defaults one by one.
func TestHostMargins(t *testing.T) {
	if got := HostMargins(nil); got != gate.DefaultHostMargins {
		t.Errorf("HostMargins(nil) = %+v, want the defaults %+v", got, gate.DefaultHostMargins)
	}
	c, err := config.Parse([]byte("version: 1\nworkloads:\n  - command: [x]\nhost:\n  other_cpu: 100%\n  cpu_throttled: 0.3\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := gate.DefaultHostMargins
	want.OtherCPU, want.Throttled = 1, 0.3
	if got := HostMargins(c); got != want {
		t.Errorf("HostMargins = %+v, want %+v", got, want)
	}
}
