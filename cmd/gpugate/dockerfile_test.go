package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Op, Args string
	Line     int
}

// stage is one FROM ... [AS name] and what follows it.
type stage struct {
	Base, Name string
	Ins        []instruction
}

// parseDockerfile reads the instructions of a Dockerfile into stages.
// Hand-written: the build's one test needs FROM/RUN/COPY with comments and
// backslash continuations, which does not justify BuildKit's parser and
// its dependency tree in go.sum.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	sc := bufio.NewScanner(f)
	var cur strings.Builder
	start, n := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		op, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{Op: strings.ToUpper(op), Args: strings.TrimSpace(args), Line: start}
		if in.Op == "FROM" {
			f := strings.Fields(in.Args)
			st := stage{Base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.Name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.Op == "ARG" {
				continue
			}
			t.Fatalf("%s:%d: %s before FROM", path, in.Line, in.Op)
		}
		stages[len(stages)-1].Ins = append(stages[len(stages)-1].Ins, in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// TestDockerfile checks the image without a Docker daemon (none here):
// the build stage's go build command, run as it is written, makes a
// static binary of gpugate; the final stage is FROM scratch and holds only
// that binary (and the CA bundle, for GitHub's API and TLS PostgreSQL),
// at the path the README's COPY --from= names; .dockerignore keeps
// .git and .gpugate/ (local traces and stores) out of the build context.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	if len(stages) != 2 || stages[0].Name != "build" || !strings.HasPrefix(stages[0].Base, "golang:") {
		t.Fatalf("want two stages, a golang build stage named build and the image: %+v", stages)
	}
	// The Go of the build stage is the one go.mod asks for.
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil || stages[0].Base != "golang:"+string(m[1]) {
		t.Errorf("build stage %s, go.mod asks for go %s", stages[0].Base, m[1])
	}
	var build string
	for _, in := range stages[0].Ins {
		if in.Op == "RUN" && strings.Contains(in.Args, "go build") {
			build = in.Args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0 ", "-trimpath", "-o /gpugate ", "./cmd/gpugate"} {
		if !strings.Contains(build+" ", want) {
			t.Errorf("build command %q lacks %q", build, want)
		}
	}
	final := stages[1]
	if final.Base != "scratch" {
		t.Errorf("final stage FROM %s, want scratch: only the binary", final.Base)
	}
	copies := map[string]bool{}
	for _, in := range final.Ins {
		switch in.Op {
		case "COPY":
			copies[in.Args] = true
		case "ENTRYPOINT", "LABEL":
		default:
			t.Errorf("Dockerfile:%d: %s in the final stage: it holds only the binary", in.Line, in.Op)
		}
	}
	want := map[string]bool{
		"--from=build /gpugate /usr/local/bin/gpugate":                                       true,
		"--from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt": true,
	}
	if len(copies) != len(want) {
		t.Errorf("final stage copies %v, want %v", copies, want)
	}
	for c := range want {
		if !copies[c] {
			t.Errorf("final stage lacks COPY %s", c)
		}
	}

	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git", ".gpugate", "**/.gpugate"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(p) + `$`).Match(ignore) {
			t.Errorf(".dockerignore lacks %s", p)
		}
	}

	if testing.Short() {
		t.Skip("-short: the build command is not run")
	}
	// The build stage's command, as written (VERSION empty), in this tree.
	out := filepath.Join(t.TempDir(), "gpugate")
	cmdline := strings.ReplaceAll(strings.ReplaceAll(build, "${VERSION}", ""), "-o /gpugate ", "-o "+out+" ")
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	bin, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a dynamic loader: not static")
		}
	}
	if libs, _ := bin.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v: not static", libs)
	}
	if v, err := exec.Command(out, "--version").Output(); err != nil || !strings.HasPrefix(string(v), "gpugate ") {
		t.Errorf("%s --version: %q %v", out, v, err)
	}
}
