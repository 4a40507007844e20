package slurmtest

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCluster starts the cluster and runs one task on each node.
func TestCluster(t *testing.T) {
	c := Start(t)
	out, err := exec.Command("srun", "--nodes=2", "--ntasks-per-node=1", "--label", "--gres=gpu:1", "sh", "-c", `echo "$SLURMD_NODENAME $SLURM_PROCID/$SLURM_NTASKS"`).CombinedOutput()
	if err != nil {
		t.Fatalf("srun -N2: %v: %s", err, out)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{"0: n1 0/2", "1: n2 1/2"} {
		if !got[want] {
			t.Errorf("srun -N2 printed %q, want a line %q", out, want)
		}
	}
	// srun returns before the controller forgets the job (COMPLETING):
	// gone within a few seconds (MinJobAge=2).
	deadline := time.Now().Add(20 * time.Second)
	for c.Squeue() != "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue 20 s after srun: %q, want nothing", q)
	}
}
