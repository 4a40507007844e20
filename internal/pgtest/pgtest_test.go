package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestWatchStopsOrphan starts a cluster in a child test binary that then
// dies without Stop, as a binary killed by go test's timeout does: the
// watchdog must stop its server and remove its folder within seconds.
func TestWatchStopsOrphan(t *testing.T) {
	if os.Getenv("PGTEST_ORPHAN") == "1" {
		if err := Available(); err != nil {
			fmt.Println("no cluster:", err)
			os.Exit(2)
		}
		fmt.Println("dir=" + Dir())
		os.Exit(3) // no Stop: the epilogue a killed binary never runs
	}
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL server binaries missing: run scripts/setup-postgres.sh")
		}
		t.Skip("PostgreSQL server binaries missing: scripts/setup-postgres.sh")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchStopsOrphan$")
	cmd.Env = append(os.Environ(), "PGTEST_ORPHAN=1")
	out, _ := cmd.Output()
	dir := ""
	for _, l := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(l, "dir="); ok {
			dir = d
		}
	}
	if dir == "" || !strings.Contains(dir, "gpugate-pg-") {
		t.Fatalf("the child started no cluster: %s", out)
	}
	running := func() bool {
		ps, _ := exec.Command("ps", "-eo", "args").Output()
		return strings.Contains(string(ps), dir+"/data")
	}
	deadline := time.Now().Add(30 * time.Second)
	for running() || exists(dir) {
		if time.Now().After(deadline) {
			exec.Command("sh", "-c", "pkill -f "+dir).Run()
			t.Fatalf("30 s after its test binary died, the cluster in %s still runs (%v) or its folder is there (%v)", dir, running(), exists(dir))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
