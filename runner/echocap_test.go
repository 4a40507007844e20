package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The echo keeps the lines of its first EchoHead and last EchoTail bytes,
// and one line between them counts exactly what it left out.
func TestEchoCap(t *testing.T) {
	var out bytes.Buffer
	e := &echoCap{w: &out}
	const n = 10_000
	line := strings.Repeat("a", 999) // 1000 bytes with its \n
	total := 0
	for i := range n {
		s := fmt.Sprintf("%05d%s\n", i, line[5:])
		total += len(s)
		e.line(s)
	}
	e.flush("w", "job.log")
	got := out.String()
	head, tail := EchoHead/1000, EchoTail/1000 // whole lines of each
	left := n - head - tail
	want := fmt.Sprintf("[w] gpugate: %d lines (%d bytes) of the job's output left out of this echo here", left, left*1000)
	if !strings.Contains(got, want) {
		t.Fatalf("no line %q in the echo's %d bytes", want, len(got))
	}
	if len(got) > EchoHead+EchoTail+400 {
		t.Errorf("echoed %d bytes of %d, want at most the head, the tail and one line", len(got), total)
	}
	if !strings.HasPrefix(got, "00000") || !strings.Contains(got, fmt.Sprintf("\n%05d", head-1)) || strings.Contains(got, fmt.Sprintf("\n%05d", head)) {
		t.Errorf("the head is not the first %d lines", head)
	}
	if !strings.HasSuffix(got, fmt.Sprintf("%05d%s\n", n-1, line[5:])) || !strings.Contains(got, fmt.Sprintf("\n%05d", n-tail)) || strings.Contains(got, fmt.Sprintf("\n%05d", n-tail-1)) {
		t.Errorf("the tail is not the last %d lines", tail)
	}
	// Under the cap: everything, and no line about it.
	out.Reset()
	e = &echoCap{w: &out}
	e.line("one\n")
	e.flush("w", "job.log")
	if out.String() != "one\n" {
		t.Errorf("short output echoed as %q", out.String())
	}
}
