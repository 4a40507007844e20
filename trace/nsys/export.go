package nsys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
	"github.com/gpugate/gpugate/trace"
)

// KnownPaths are where Nsight Systems' CLI is found when it is not on PATH:
// Debian's nsight-systems package, gpugate's own installer
// (scripts/setup-profilers.sh) and NVIDIA's installers.
var KnownPaths = []string{
	"/usr/lib/nsight-systems/bin/nsys",
	"/opt/gpugate/nsight-systems/usr/lib/nsight-systems/bin/nsys",
	"/usr/local/cuda/bin/nsys",
	"/opt/nvidia/nsight-systems/bin/nsys",
}

// FindCLI returns the nsys binary to use: explicit if set, else nsys on
// PATH, else the first of KnownPaths that exists.
func FindCLI(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("nsys %s: %w", explicit, err)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath("nsys"); err == nil {
		return p, nil
	}
	for _, p := range KnownPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("nsys not found (install Nsight Systems: scripts/setup-profilers.sh, or set GPUGATE_NSYS)")
}

var versionRE = regexp.MustCompile(`(\d{4}\.\d+(?:\.\d+)*)`)

// CLIVersion returns the version nsys reports, e.g. "2022.4.2.1".
func CLIVersion(ctx context.Context, nsys string) string {
	res, err := bounded.Run(ctx, bounded.Options{Limit: 30 * time.Second, MaxOutput: 64 << 10, Stderr: true}, nsys, "--version")
	out := res.Out
	if err != nil {
		return "unknown"
	}
	if m := versionRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// reportVersionRE matches nsys's complaint about a report from a newer
// version: "Version number is invalid: 2025@5@1@121-255136380782v0".
var reportVersionRE = regexp.MustCompile(`Version number is invalid: (\d+)@(\d+)@(\d+)`)

// Export converts a .nsys-rep or .qdrep report into an SQLite file in dir
// with the nsys CLI and returns its path.
func Export(ctx context.Context, nsys, report, dir string) (string, error) {
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(report), filepath.Ext(report))+".sqlite")
	// Bounded (internal/bounded): own process group, output capped.
	res, err := bounded.Run(ctx, bounded.Options{Limit: 10 * time.Minute, MaxOutput: 1 << 20, Stderr: true}, nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", out, report)
	buf := bytes.NewBuffer(res.Out)
	if m := reportVersionRE.FindSubmatch(buf.Bytes()); m != nil {
		return "", &trace.SyntaxError{File: report, Msg: fmt.Sprintf(
			"report was written by Nsight Systems %s.%s.%s, newer than the installed nsys %s (%s): export it to SQLite with that version (nsys export --type sqlite) and pass the .sqlite file",
			m[1], m[2], m[3], CLIVersion(ctx, nsys), nsys)}
	}
	if err != nil {
		msg := strings.TrimSpace(buf.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
		return "", &trace.SyntaxError{File: report, Msg: fmt.Sprintf("nsys export failed (%v): %s", err, msg)}
	}
	if _, err := os.Stat(out); err != nil {
		return "", &trace.SyntaxError{File: report, Msg: "nsys export wrote no SQLite file: " + strings.TrimSpace(buf.String())}
	}
	return out, nil
}
