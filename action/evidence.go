package action

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/newfile"
	"github.com/gpugate/gpugate/internal/safefile"
)

// The evidence folder is uploaded as an artifact, and the job under test
// runs as the same user as gpugate and can predict its path
// ($RUNNER_TEMP/gpugate-artifacts/WORKLOAD): a job that planted
// report.md → a victim file there made gpugate overwrite the victim, and
// planted files and symlinks (traces/x.nsys-rep → /etc/shadow) were
// uploaded. So the folder is made only after the job has ended, anew and
// private (freshDir), files are created there with O_EXCL|O_NOFOLLOW
// (newfile.Create), and only regular files that gpugate wrote or read are
// copied in, opened with O_NOFOLLOW (evidenceFiles, gatherEvidence).

// freshDir makes dir anew, mode 0700, after the job has ended: whatever
// the job left at that path (a symlink, a folder of planted files) is
// removed without following links, and the folder is made with mkdir,
// which fails rather than follow or reuse anything put there since. Its
// parent must be a real folder of this user; a symlink or file in its
// place is removed and the folder made private.
func freshDir(dir string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
		return err
	}
	if err := privateDir(parent); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil { // unlinks a symlink, never follows it
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return ownDir(dir)
}

// privateDir makes p a folder of this user with mode 0700.
func privateDir(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.Mkdir(p, 0o700)
	case err != nil:
		return err
	case !fi.IsDir(): // a symlink (to a folder or not) or a file
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Mkdir(p, 0o700)
	}
	if err := ownDir(p); err != nil {
		return err
	}
	return os.Chmod(p, 0o700)
}

// ownDir checks that p is a real folder (not a symlink) owned by this
// process's user.
func ownDir(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 || (ok && int(st.Uid) != os.Geteuid()) {
		return fmt.Errorf("%s is not a folder of this user", p)
	}
	return nil
}

// evidenceFiles are the files of a run's folder that may go into the
// evidence, by absolute path: the traces gpugate read (an nsys report's
// .nsys-rep stands for the .sqlite export gpugate made of it), and the
// job.log, analysis.json and conditions.json that gpugate wrote in the
// folder of each run. Anything else in the folder was put there by the
// job and is left out, whatever its name.
func evidenceFiles(runs string, cand []gate.Run, repeat int) map[string]bool {
	ok := map[string]bool{}
	add := func(p string) {
		if a, err := filepath.Abs(p); err == nil {
			ok[a] = true
		}
	}
	for _, run := range cand {
		for _, r := range run {
			p := r.Profile.Path
			if strings.HasSuffix(p, ".sqlite") {
				p = strings.TrimSuffix(p, ".sqlite") + ".nsys-rep"
			}
			add(p)
		}
	}
	dirs := []string{runs, filepath.Join(runs, "unprofiled")}
	for i := 1; i <= repeat; i++ {
		dirs = append(dirs, filepath.Join(runs, fmt.Sprintf("run%d", i)))
	}
	for _, d := range dirs {
		for _, n := range []string{"job.log", "analysis.json", "conditions.json"} {
			add(filepath.Join(d, n))
		}
	}
	return ok
}

// gatherEvidence copies what a reviewer needs into the artifact folder
// art (made by freshDir): the traces (Kineto JSON gzipped, nsys reports
// as they are, nsys SQLite exports left out: the report holds the same
// and is smaller), smallest first until the size cap, the job logs, and
// the per-run analyses. Only the regular files in allowed (evidenceFiles)
// are copied: the walk never follows a symlink, and each file is opened
// with O_NOFOLLOW and must still be a regular file. It returns the trace
// names in the artifact and how many were left out.
func gatherEvidence(runs, art string, sizeCap int64, allowed map[string]bool) (traces []string, omitted int, err error) {
	type file struct {
		path, rel string
		size      int64
	}
	var tr []file
	err = filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if a, err := filepath.Abs(p); err != nil || !allowed[a] {
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
			_, err := copyFile(p, filepath.Join(art, "logs", rel), false)
			return err
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
		gz := strings.HasSuffix(f.rel, ".json")
		if gz {
			dst += ".gz"
		}
		n, err := copyFile(f.path, dst, gz)
		if errors.Is(err, errNotRegular) {
			continue
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

var errNotRegular = errors.New("not a regular file")

// copyFile copies (gzip: compresses) the regular file src into the new
// file dst and returns dst's size. src is opened with O_NOFOLLOW and must
// be a regular file (errNotRegular otherwise, and nothing is written).
func copyFile(src, dst string, gz bool) (int64, error) {
	in, err := safefile.Open(src, 0)
	if errors.Is(err, safefile.ErrNotRegular) {
		return 0, errNotRegular
	}
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	out, err := newfile.Create(dst)
	if err != nil {
		return 0, err
	}
	var w io.Writer = out
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(out)
		w = zw
	}
	if _, err := io.Copy(w, in); err != nil {
		out.Close()
		return 0, err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			out.Close()
			return 0, err
		}
	}
	st, err := out.Stat()
	if err != nil {
		out.Close()
		return 0, err
	}
	return st.Size(), out.Close()
}
