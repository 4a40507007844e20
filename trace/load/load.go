// Package load opens a trace file of any supported kind, recognised by its
// content: Kineto JSON (plain or gzip), an nsys SQLite export, or an nsys
// report (.nsys-rep, .qdrep) that is exported with the nsys CLI first.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

// Options configure loading.
type Options struct {
	// Nsys is the nsys CLI used to export reports; empty means search.
	Nsys string
	// TempDir receives exported SQLite files; empty means os.TempDir.
	TempDir string
	// RangeNames, when not nil, lets the nsys reader keep only the NVTX
	// ranges analysis can use (nsys.Options.RangeNames): pass every
	// pattern that analysis matches range names with.
	RangeNames []*regexp.Regexp
	// Limits on a Kineto trace (flags -max-trace-bytes, -max-string and
	// -max-events); zero means kineto's defaults (DefaultMaxBytes, ...).
	// Passing one is a *trace.LimitError naming the flag and the field.
	MaxBytes  int64 // JSON bytes after decompression
	MaxString int   // bytes in one kept string (names, categories)
	MaxEvents int   // entries of traceEvents
	// Open, when set, opens each trace: it marks the traces as files an
	// untrusted job wrote (a gpugate run's), and opens them safely
	// (runner.Result.Files.Open: never a link, never a FIFO, a regular
	// file of at most max bytes, MaxBytes or kineto.DefaultMaxBytes).
	// An SQLite export or an nsys report, which only a path can name to
	// SQLite or to nsys, is then copied from the open file into a private
	// folder (TempDir) and read from there, never by its path in the
	// job's folder. Nil opens the path as given: a trace the user named.
	Open func(path string, max int64) (*os.File, error)
}

// File reads the trace at path. An nsys export yields one profile per
// process that ran GPU work; a Kineto trace yields one.
func File(ctx context.Context, path string, opt Options) ([]*trace.Profile, error) {
	var f *os.File
	var err error
	if opt.Open != nil {
		max := opt.MaxBytes
		if max <= 0 {
			max = kineto.DefaultMaxBytes
		}
		if f, err = opt.Open(path, max); err != nil {
			var se *safefile.Error
			if errors.As(err, &se) {
				return nil, &trace.SyntaxError{File: path, Msg: se.Why}
			}
			return nil, err
		}
	} else if f, err = os.Open(path); err != nil {
		return nil, err
	}
	defer f.Close()
	hdr := make([]byte, 512)
	n, err := f.ReadAt(hdr, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	hdr = hdr[:n]
	if n == 0 {
		return nil, &trace.SyntaxError{File: path, Msg: "empty file: not a trace"}
	}
	ext := strings.ToLower(filepath.Ext(path))
	switch {
	case nsys.IsSQLite(hdr):
		if opt.Open == nil {
			return nsys.ReadFileOptions(ctx, path, nsys.Options{RangeNames: opt.RangeNames})
		}
		return private(f, path, "export.sqlite", opt, func(p string) ([]*trace.Profile, error) {
			return nsys.ReadFileOptions(ctx, p, nsys.Options{RangeNames: opt.RangeNames})
		})
	case ext == ".nsys-rep" || ext == ".qdrep":
		if opt.Open == nil {
			return exportReport(ctx, path, path, opt)
		}
		return private(f, path, "report"+ext, opt, func(p string) ([]*trace.Profile, error) {
			return exportReport(ctx, p, path, opt)
		})
	case len(hdr) >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b, looksJSON(hdr), ext == ".json":
		p, err := kineto.Limits{MaxBytes: opt.MaxBytes, MaxString: opt.MaxString, MaxEvents: opt.MaxEvents}.ReadOpen(f, path)
		if err != nil {
			return nil, err
		}
		return []*trace.Profile{p}, nil
	}
	return nil, &trace.SyntaxError{File: path, Msg: "not a trace: want Kineto JSON (.json, .json.gz), an nsys SQLite export or an .nsys-rep report"}
}

func looksJSON(hdr []byte) bool {
	t := bytes.TrimLeft(hdr, " \t\r\n\xef\xbb\xbf")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// private copies the open file f (the job's trace at path) to a new file
// named name in a private folder of gpugate's (0700) and reads that copy
// with read; the profiles and errors name path.
func private(f *os.File, path, name string, opt Options, read func(string) ([]*trace.Profile, error)) ([]*trace.Profile, error) {
	dir, err := os.MkdirTemp(opt.TempDir, "gpugate-trace-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cp := filepath.Join(dir, name)
	if _, err := safefile.CopyTo(f, cp); err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	ps, err := read(cp)
	for _, p := range ps {
		p.Path = path
	}
	var se *trace.SyntaxError
	if errors.As(err, &se) && se.File == cp {
		se.File = path
	}
	return ps, err
}

// exportReport exports the report at path with the nsys CLI and reads the
// export; name is the report's name in profiles and errors.
func exportReport(ctx context.Context, path, name string, opt Options) ([]*trace.Profile, error) {
	cli, err := nsys.FindCLI(opt.Nsys)
	if err != nil {
		return nil, &trace.SyntaxError{File: name, Msg: "an nsys report must be exported to SQLite first, but " + err.Error()}
	}
	dir, err := os.MkdirTemp(opt.TempDir, "gpugate-export-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := nsys.Export(ctx, cli, path, dir)
	if err != nil {
		return nil, err
	}
	ps, err := nsys.ReadFileOptions(ctx, db, nsys.Options{RangeNames: opt.RangeNames})
	for _, p := range ps {
		p.Path = name
	}
	return ps, err
}
