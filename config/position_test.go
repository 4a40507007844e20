package config

import "testing"

func TestPosition(t *testing.T) {
	c, err := Parse([]byte("version: 1\nworkloads:\n  - name: a\n    command: x\nallowances:\n  step_time: 10%\ngate:\n  - step_time\n  - kernels\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Gate) != 2 || c.Gate[1] != "kernels" {
		t.Errorf("Gate = %q", c.Gate)
	}
	for _, p := range []struct {
		path      []string
		line, col int
	}{
		{[]string{"gate", "1"}, 9, 5},
		{[]string{"allowances", "step_time"}, 6, 3},
		{[]string{"workloads", "0"}, 3, 5},
		{[]string{"gate", "7"}, 8, 3}, // past the end: the list itself
		{[]string{"nothing"}, 0, 0},
	} {
		if l, c := c.Position(p.path...); l != p.line || c != p.col {
			t.Errorf("Position(%q) = %d:%d, want %d:%d", p.path, l, c, p.line, p.col)
		}
	}
}
