package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileSMI writes an nvidia-smi that misbehaves as mode says and puts it
// first on PATH; it returns its path.
//
//	helpchild  --help-query-gpu leaves a child holding stdout
//	flood      --query-gpu prints a new GPU UUID per line, as fast as it can
//	huge       --query-gpu prints 1e308 and negative values
//	stream     --query-gpu=name,driver_version (the fingerprint) never ends
func hostileSMI(t *testing.T, mode string) string {
	t.Helper()
	help, err := filepath.Abs(filepath.Join("testdata", "smi", "help-query-gpu-580.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `#!/bin/sh
mode=` + mode + `
case "$1" in
--help-query-gpu)
  if [ $mode = helpchild ]; then sleep 300 & fi
  cat ` + help + `
  exit 0;;
--query-gpu=name,driver_version)
  if [ $mode = stream ]; then exec yes 'NVIDIA H200, 580.95.05'; fi
  echo 'NVIDIA H200, 580.95.05'; exit 0;;
--query-gpu=*)
  exec awk -v f="${1#--query-gpu=}" -v mode=$mode 'BEGIN {
    n = split(f, a, ",")
    for (i = 0; i < 2000000; i++) {
      line = ""
      for (j = 1; j <= n; j++) {
        k = a[j]; v = "1000"
        if (k == "index") v = 0
        else if (k == "uuid") v = (mode == "flood") ? "GPU-" i : "GPU-1"
        else if (k ~ /reasons/) v = "Not Active"
        else if (k == "name") v = "Fake"
        else if (mode == "huge" && k != "clocks.max.sm") v = (k == "temperature.gpu" || k == "clocks.current.sm") ? "1e308" : "-5"
        line = line (j > 1 ? ", " : "") v
      }
      print line; fflush()
      if (mode != "flood") system("sleep 0.02")
    }
  }';;
--query-compute-apps=*)
  echo 'gpu_uuid, pid, used_gpu_memory [MiB], process_name'
  exec sleep 300;;
esac
exit 1
`
	p := filepath.Join(dir, "nvidia-smi")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	return p
}

// TestSMIHostileHelp: a --help-query-gpu that left a child holding its
// stdout hung gpugate until the child ended (here 300 s).
func TestSMIHostileHelp(t *testing.T) {
	smi := hostileSMI(t, "helpchild")
	start := time.Now()
	_, _, _, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", "echo hi; sleep 0.5"}, SMIPath: smi})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 0.5 s job took %s", d.Round(time.Second))
	}
}

// TestSMIFlood: a new GPU UUID per line made a 15 s job keep 292,571
// GPUs; now 64 are kept, and the flood is a warning.
func TestSMIFlood(t *testing.T) {
	smi := hostileSMI(t, "flood")
	s := StartSMI(context.Background(), SMIOptions{Path: smi, Interval: 20 * time.Millisecond, Owned: func(int) (bool, bool) { return false, true }})
	time.Sleep(2 * time.Second)
	start := time.Now()
	c := s.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %s", d.Round(time.Second))
	}
	if len(c.GPUs) != 64 || !strings.Contains(strings.Join(c.Warnings, "\n"), "more than 64 GPUs") {
		t.Errorf("%d GPUs, warnings %q; want 64 and a warning", len(c.GPUs), c.Warnings)
	}
}

// TestSMIOutOfRange: 1e308 and negative values were kept and printed as
// 309-digit numbers; now they are dropped with a warning.
func TestSMIOutOfRange(t *testing.T) {
	smi := hostileSMI(t, "huge")
	s := StartSMI(context.Background(), SMIOptions{Path: smi, Interval: 20 * time.Millisecond, Owned: func(int) (bool, bool) { return false, true }})
	time.Sleep(time.Second)
	c := s.Stop()
	if len(c.GPUs) != 1 {
		t.Fatalf("GPUs %+v (%s)", c.GPUs, c.NotSampled)
	}
	g := c.GPUs[0]
	if g.SMClockMedianMHz != nil || g.TempMaxC != nil || g.PowerMedianW != nil || g.UtilMedianPct != nil || g.MemClockMedianMHz != nil {
		t.Errorf("values out of range kept: %+v", g)
	}
	if g.SMClockMaxMHz == nil || *g.SMClockMaxMHz != 1000 {
		t.Errorf("the in-range clocks.max.sm was lost: %v", g.SMClockMaxMHz)
	}
	w := strings.Join(c.Warnings, "\n")
	for _, f := range []string{"temperature.gpu = \"1e308\"", "power.draw = \"-5\"", "utilization.gpu = \"-5\""} {
		if !strings.Contains(w, f) || !strings.Contains(w, "dropped") {
			t.Errorf("no warning for %s: %q", f, c.Warnings)
		}
	}
}

// TestFingerprintStream: a fingerprint probe that streamed without end
// was read into memory for 30 s (4.2 GB at 40 MB/s); now 64 KiB are read
// and the tool is stopped.
func TestFingerprintStream(t *testing.T) {
	hostileSMI(t, "stream")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f := TakeFingerprint(context.Background(), "", "", None)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d.Round(time.Second))
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("allocated %d MB reading the probe", grew>>20)
	}
	if f.GPU != "none" {
		t.Errorf("a probe cut short gave GPU %q, want none", f.GPU)
	}
}
