package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// realNsys is the nsys CLI the tests run (GPUGATE_NSYS, as scripts/test.sh
// sets it); the test is skipped without it, and fails under CI=true.
func realNsys(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GPUGATE_NSYS")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("GPUGATE_NSYS not set under CI=true (scripts/test.sh sets it)")
		}
		t.Skip("GPUGATE_NSYS not set: skipping the nsys retry test (scripts/setup-profilers.sh installs nsys; scripts/test.sh sets it)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("GPUGATE_NSYS=%s: %v", p, err)
	}
	return p
}

// nsysStandIn writes an nsys that fails its first `fail` profile calls the
// way script says, then runs the real nsys; everything else (export,
// --version) goes to the real nsys. It counts its profile calls in a file.
func nsysStandIn(t *testing.T, fail int, script string) (bin, calls string) {
	t.Helper()
	real := realNsys(t)
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	sem, err := filepath.Abs("testdata/nsys-2022.4-sem-open.log")
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "nsys")
	sh := `#!/bin/sh
# stand-in nsys (runner/nsysretry_test.go)
if [ "$1" = profile ]; then
	echo x >> '` + calls + `'
	n=$(wc -l < '` + calls + `')
	if [ "$n" -le ` + strconv.Itoa(fail) + ` ]; then
		SEM='` + sem + `'
		` + script + `
	fi
fi
exec '` + real + `' "$@"
`
	if err := os.WriteFile(bin, []byte(sh), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, calls
}

func countCalls(t *testing.T, calls string) int {
	b, _ := os.ReadFile(calls)
	return strings.Count(string(b), "\n")
}

// nsys 2022.4 on a busy machine sometimes fails within half a second,
// before the target runs (its process waiter's sem_open of a semaphore its
// launcher had not made yet; runner/testdata/nsys-2022.4-sem-open.log is
// the real output, seen under scripts/busy.sh). That is retried, with a
// log line, up to nsysAttempts times; a job's own failure is not.
func TestNsysRetry(t *testing.T) {
	job := func(t *testing.T, bin string, args ...string) (*Result, error, string) {
		var out bytes.Buffer
		res, err := Run(context.Background(), Job{Name: "j", Args: args, Dir: t.TempDir(), Profiler: Nsys, Out: t.TempDir(),
			NsysPath: bin, NsysTrace: "osrt", Output: &out, Timeout: 2 * time.Minute})
		return res, err, out.String()
	}
	semFail := `cat "$SEM"; exit 1`

	t.Run("transient then fine", func(t *testing.T) {
		bin, calls := nsysStandIn(t, 1, semFail)
		res, err, out := job(t, bin, "sh", "-c", "echo job ran")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if n := countCalls(t, calls); n != 2 {
			t.Errorf("%d profile calls, want 2", n)
		}
		if !strings.Contains(out, "gpugate: nsys failed before the job made a step (its process waiter's sem_open failed, a start-up race inside nsys)") ||
			!strings.Contains(out, fmt.Sprintf("retrying, attempt 2 of %d", nsysAttempts)) {
			t.Errorf("no retry line:\n%s", out)
		}
		kept, _ := os.ReadFile(filepath.Join(filepath.Dir(res.Log), "job-attempt1.log"))
		now, _ := os.ReadFile(res.Log)
		if !strings.Contains(string(kept), "sem_open") || !strings.Contains(string(now), "job ran") || strings.Contains(string(now), "sem_open") {
			t.Errorf("attempt 1's log %q, the run's log %q; want the failure kept apart", kept, now)
		}
		if len(res.Traces) != 1 {
			t.Errorf("traces %v, want the exported report", res.Traces)
		}
	})
	t.Run("transient every time", func(t *testing.T) {
		bin, calls := nsysStandIn(t, 9, semFail)
		_, err, out := job(t, bin, "sh", "-c", "echo job ran")
		if err == nil || !strings.Contains(err.Error(), "failed: exit status 1") {
			t.Fatalf("error %v, want the last attempt's failure", err)
		}
		if n := countCalls(t, calls); n != nsysAttempts {
			t.Errorf("%d profile calls, want %d", n, nsysAttempts)
		}
		if !strings.Contains(out, fmt.Sprintf("nsys failed before the job made a step, %d times (its process waiter's sem_open failed, a start-up race inside nsys): giving up", nsysAttempts)) {
			t.Errorf("no giving-up line:\n%s", out)
		}
	})
	for _, c := range []struct{ name, script string }{
		// The job's own lost peer (gloo, NCCL): not nsys's exception.
		{"the job's own connection reset", `echo "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection reset by peer"; exit 1`},
		// nsys's exception, but after the job's first step: the job ran.
		{"after a step", `echo "gpugate-step 1"; cat "$SEM"; exit 1`},
		// Not one of the known transient failures of nsys.
		{"another nsys exception", `echo "Dynamic exception type: boost::wrapexcept<QuadDCommon::InvalidArgumentException>"; exit 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, calls := nsysStandIn(t, 1, c.script)
			_, err, out := job(t, bin, "sh", "-c", "echo job ran")
			if err == nil || strings.Contains(out, "retrying") {
				t.Fatalf("error %v, output:\n%s\nwant a failure, not retried", err, out)
			}
			if n := countCalls(t, calls); n != 1 {
				t.Errorf("%d profile calls, want 1", n)
			}
		})
	}
}

func TestNsysTransient(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ log, want string }{
		{"", ""},
		{"Traceback (most recent call last):\nConnectionResetError: [Errno 104] Connection reset by peer\n", ""},
		{"Dynamic exception type: boost::wrapexcept<QuadDCommon::NetworkException>\nstd::exception::what: read: Connection reset by peer\n", "Connection reset by peer between nsys's own processes"},
	} {
		p := filepath.Join(dir, "log")
		os.WriteFile(p, []byte(c.log), 0o644)
		if got := nsysTransient(p); got != c.want {
			t.Errorf("nsysTransient(%q) = %q, want %q", c.log, got, c.want)
		}
	}
	if got := nsysTransient("testdata/nsys-2022.4-sem-open.log"); !strings.Contains(got, "sem_open") {
		t.Errorf("the real sem_open failure: %q", got)
	}
}
