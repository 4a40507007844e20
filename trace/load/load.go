// Package load opens a trace file of any supported kind, recognised by its
// content: Kineto JSON (plain or gzip), an nsys SQLite export, or an nsys
// report (.nsys-rep, .qdrep) that is exported with the nsys CLI first.
package load

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

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
}

// File reads the trace at path. An nsys export yields one profile per
// process that ran GPU work; a Kineto trace yields one.
func File(ctx context.Context, path string, opt Options) ([]*trace.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 512)
	n, err := io.ReadFull(f, hdr)
	f.Close()
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	hdr = hdr[:n]
	if n == 0 {
		return nil, &trace.SyntaxError{File: path, Msg: "empty file: not a trace"}
	}
	ext := strings.ToLower(filepath.Ext(path))
	switch {
	case nsys.IsSQLite(hdr):
		return nsys.ReadFileOptions(ctx, path, nsys.Options{RangeNames: opt.RangeNames})
	case ext == ".nsys-rep" || ext == ".qdrep":
		return exportReport(ctx, path, opt)
	case len(hdr) >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b, looksJSON(hdr), ext == ".json":
		p, err := kineto.Limits{MaxBytes: opt.MaxBytes, MaxString: opt.MaxString, MaxEvents: opt.MaxEvents}.ReadFile(path)
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

func exportReport(ctx context.Context, path string, opt Options) ([]*trace.Profile, error) {
	cli, err := nsys.FindCLI(opt.Nsys)
	if err != nil {
		return nil, &trace.SyntaxError{File: path, Msg: "an nsys report must be exported to SQLite first, but " + err.Error()}
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
		p.Path = path
	}
	return ps, err
}
