package action

import (
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// gatherEvidence copies what a reviewer needs into the artifact folder:
// the traces (Kineto JSON gzipped, nsys reports as they are, nsys SQLite
// exports left out: the report holds the same and is smaller), smallest
// first until the size cap, the job logs, and the per-run analyses. It
// returns the trace names in the artifact and how many were left out.
func gatherEvidence(runs, art string, sizeCap int64) (traces []string, omitted int, err error) {
	if err := os.MkdirAll(art, 0o755); err != nil {
		return nil, 0, err
	}
	type file struct {
		path, rel string
		size      int64
	}
	var tr []file
	err = filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(runs, p)
		if strings.HasPrefix(rel, "inject") || strings.Contains(rel, string(filepath.Separator)+"inject"+string(filepath.Separator)) || strings.Contains(rel, string(filepath.Separator)+"tmp"+string(filepath.Separator)) {
			return nil
		}
		n := d.Name()
		info, _ := d.Info()
		switch {
		case n == "job.log", n == "analysis.json", n == "conditions.json":
			return copyFile(p, filepath.Join(art, "logs", rel))
		case strings.HasSuffix(n, ".json"), strings.HasSuffix(n, ".json.gz"), strings.HasSuffix(n, ".nsys-rep"), strings.HasSuffix(n, ".qdrep"):
			tr = append(tr, file{p, rel, info.Size()})
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, 0, err
	}
	slices.SortFunc(tr, func(a, b file) int { return int(a.size - b.size) })
	var used int64
	for _, f := range tr {
		dst := filepath.Join(art, "traces", f.rel)
		if strings.HasSuffix(f.rel, ".json") {
			dst += ".gz"
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, 0, err
		}
		var n int64
		if strings.HasSuffix(f.rel, ".json") {
			n, err = gzipFile(f.path, dst)
		} else {
			n, err = f.size, copyFile(f.path, dst)
		}
		if err != nil {
			return nil, 0, err
		}
		if used+n > sizeCap {
			os.Remove(dst)
			omitted++
			continue
		}
		used += n
		rel, _ := filepath.Rel(art, dst)
		traces = append(traces, filepath.ToSlash(rel))
	}
	return traces, omitted, nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gzipFile compresses src into dst and returns the compressed size.
func gzipFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return 0, err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return 0, err
	}
	st, err := out.Stat()
	if err != nil {
		out.Close()
		return 0, err
	}
	return st.Size(), out.Close()
}
