package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
	"github.com/gpugate/gpugate/internal/safefile"
)

// Limits of the files gpugate reads back from a job's folder besides the
// traces (whose limit is the trace reader's, kineto.DefaultMaxBytes or
// -max-trace-bytes): a file over its limit is refused, not read.
const (
	// MaxReportFile is the limit of an nsys report (.nsys-rep).
	MaxReportFile = 16 << 30
	// maxLogFile is the limit of job.log as read back: its head and tail
	// (LogHead, LogTail) and gpugate's line between them.
	maxLogFile = LogHead + LogTail + 4096
)

// exportReport exports the nsys report name of the job's folder files to
// SQLite and returns the export's path, report.sqlite beside the report
// (report-RANK.sqlite for report-RANK.nsys-rep).
//
// The report is the job's file: it is opened through files (never a link,
// never a FIFO, a regular file of at most MaxReportFile bytes) and copied
// into a private folder of gpugate's (0700, made after the job ended), and
// nsys exports that copy, there: nsys, which takes paths, never opens a
// path the job could have replaced, nor writes through a link the job left
// at the export's name. The export is then moved into the job's folder,
// replacing whatever entry is at its name.
func exportReport(ctx context.Context, job Job, files *safefile.Dir, name string) (string, error) {
	in, err := files.Open(name, MaxReportFile)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp, err := os.MkdirTemp("", "gpugate-export-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	rep := filepath.Join(tmp, "report.nsys-rep")
	if _, err := safefile.CopyTo(in, rep); err != nil {
		return "", fmt.Errorf("copy %s: %w", name, err)
	}
	db := filepath.Join(tmp, "report.sqlite")
	// Bounded by the job's timeout, output capped (internal/bounded).
	limit := job.Timeout
	if limit <= 0 {
		limit = 10 * time.Minute
	}
	ex, err := bounded.Run(ctx, bounded.Options{Limit: limit, MaxOutput: 256 << 10, Stderr: true}, job.NsysPath, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", db, rep)
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, lastLine(string(ex.Out)))
	}
	dbName := strings.TrimSuffix(name, filepath.Ext(name)) + ".sqlite"
	if err := files.Place(db, dbName); err != nil {
		return "", fmt.Errorf("keep the export as %s: %w", dbName, err)
	}
	return filepath.Join(files.Path, dbName), nil
}
