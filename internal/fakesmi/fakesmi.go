// Package fakesmi is a stand-in nvidia-smi for tests: a test binary that
// finds itself run as "nvidia-smi" (a link on PATH) calls Main, which
// replays a real recording of nvidia-smi's CSV output
// (runner/testdata/smi). Runner tests and the CLI's end-to-end scripts
// share it.
//
// Environment: GPUGATE_FAKE_SMI the recording folder,
// GPUGATE_FAKE_SMI_HELP the --help-query-gpu text, GPUGATE_FAKE_SMI_DONE
// where to mark the end of a replay; GPUGATE_FAKE_SMI_INTERVAL_MS replaces
// the -lms interval (a whole recording replays within a short job);
// GPUGATE_FAKE_SMI_PID_OFFSET is added to every recorded pid, so that a
// recorded pid never names a live process of the test machine (above
// Linux's largest pid_max, 2^22, no process exists).
// GPUGATE_FAKE_SMI_ONESHOT=1 answers a query without -lms once, as
// nvidia-smi does (the first block, no header with --format=csv,noheader),
// and exits; GPUGATE_FAKE_SMI_DRIVER then answers driver_version, which the
// recordings lack.
package fakesmi

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Main is the stand-in nvidia-smi: it replays a recording folder
// (GPUGATE_FAKE_SMI; runner/testdata/smi/README.md): the help
// text, or the recorded CSV restricted to the requested fields, one block
// per -lms interval; after the last block it writes <dir>/done.<query> in
// GPUGATE_FAKE_SMI_DONE and waits to be killed, as a looping nvidia-smi
// would.
func Main(args []string) int {
	dir := os.Getenv("GPUGATE_FAKE_SMI")
	help := os.Getenv("GPUGATE_FAKE_SMI_HELP")
	var query, fields string
	noheader, lms := false, false
	interval := time.Duration(0)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--help-query-gpu":
			b, err := os.ReadFile(help)
			if err != nil {
				fmt.Println(err)
				return 1
			}
			os.Stdout.Write(b)
			return 0
		case strings.HasPrefix(a, "--query-gpu="), strings.HasPrefix(a, "--query-compute-apps="):
			query, fields, _ = strings.Cut(strings.TrimPrefix(a, "--"), "=")
		case strings.HasPrefix(a, "--format=") && strings.Contains(a, "noheader"):
			noheader = true
		case a == "-lms" && i+1 < len(args):
			lms = true
			ms, _ := strconv.Atoi(args[i+1])
			interval = time.Duration(ms) * time.Millisecond
			i++
		}
	}
	if ms, err := strconv.Atoi(os.Getenv("GPUGATE_FAKE_SMI_INTERVAL_MS")); err == nil {
		interval = time.Duration(ms) * time.Millisecond
	}
	pidOffset, _ := strconv.Atoi(os.Getenv("GPUGATE_FAKE_SMI_PID_OFFSET"))
	if b, err := os.ReadFile(filepath.Join(dir, "fail.txt")); err == nil {
		os.Stdout.Write(b)
		os.WriteFile(filepath.Join(os.Getenv("GPUGATE_FAKE_SMI_DONE"), "done."+query), nil, 0o644)
		return 9
	}
	name := map[string]string{"query-gpu": "query-gpu.csv", "query-compute-apps": "query-compute-apps.csv"}[query]
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	oneshot := os.Getenv("GPUGATE_FAKE_SMI_ONESHOT") == "1" && !lms
	if d := os.Getenv("GPUGATE_FAKE_SMI_DRIVER"); oneshot && d != "" && !strings.Contains(lines[0], "driver_version") {
		lines[0] += ", driver_version"
		for i := 1; i < len(lines); i++ {
			lines[i] += ", " + d
		}
	}
	header := strings.Split(lines[0], ", ")
	var cols []int
	for _, f := range strings.Split(fields, ",") {
		j := -1
		for k, h := range header {
			if n, _, _ := strings.Cut(h, " ["); n == f {
				j = k
			}
		}
		if j < 0 {
			fmt.Printf("Field \"%s\" is not a valid field to query.\n\n", f)
			return 2
		}
		cols = append(cols, j)
	}
	pidCol := slicesIndex(header, "pid")
	project := func(line string) string {
		vals := strings.Split(line, ", ")
		if pidCol >= 0 && pidOffset != 0 && pidCol < len(vals) {
			if p, err := strconv.Atoi(vals[pidCol]); err == nil {
				vals[pidCol] = strconv.Itoa(p + pidOffset)
			}
		}
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = vals[c]
		}
		return strings.Join(out, ", ")
	}
	if !noheader || !oneshot {
		fmt.Println(project(lines[0]))
	}
	// Blocks: one row per GPU until an index (or, for processes, a
	// timestamp) repeats.
	var blocks [][]string
	seen := map[string]bool{}
	key := slicesIndex(header, "index")
	if key < 0 {
		key = slicesIndex(header, "timestamp")
	}
	for _, l := range lines[1:] {
		k := strings.Split(l, ", ")[key]
		if query == "query-compute-apps" {
			if len(blocks) == 0 {
				blocks = append(blocks, nil)
			}
		} else if len(blocks) == 0 || seen[k] {
			blocks = append(blocks, nil)
			seen = map[string]bool{}
		}
		seen[k] = true
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
	}
	if oneshot && len(blocks) > 0 {
		for _, l := range blocks[0] {
			fmt.Println(project(l))
		}
		return 0
	}
	for i, bl := range blocks {
		if i > 0 {
			time.Sleep(interval)
		}
		for _, l := range bl {
			fmt.Println(project(l))
		}
	}
	os.WriteFile(filepath.Join(os.Getenv("GPUGATE_FAKE_SMI_DONE"), "done."+query), nil, 0o644)
	time.Sleep(time.Hour)
	return 0
}

func slicesIndex(h []string, name string) int {
	for i, x := range h {
		if n, _, _ := strings.Cut(x, " ["); n == name {
			return i
		}
	}
	return -1
}
