// Package safefile opens the files that gpugate reads after a job ran:
// files the job could have written, replaced or planted (traces, step
// samples, rank reports, timing files, nsys reports, its log). Every one
// is opened
//
//   - never through a symbolic link: O_NOFOLLOW on the file itself, and,
//     through a Dir, relative to a folder gpugate opened before the job
//     started, so that a folder the job swapped for a link is not followed
//     either;
//   - without blocking: O_NONBLOCK, so that a FIFO planted in a file's
//     place never holds gpugate past its timeout;
//   - as a regular file only (checked with fstat on the open file);
//   - within a size limit, which the error names.
//
// Errors name the file and why it was refused, never anything the file
// holds: a refused file may be a link to a secret.
//
// It is hand-written because no library offers this set: os.Root (Go 1.24)
// follows links inside the root and opens a FIFO blocking.
package safefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Error is a file refused: Name is the file (as the caller named it),
// Why the reason, in words that quote nothing the file holds.
type Error struct {
	Name string
	Why  string
	Err  error // the system's error, when there was one
	// kind is ErrNotRegular or ErrTooLarge for a refused file, nil for
	// a file that could not be opened or read.
	kind error
}

func (e *Error) Error() string { return e.Name + ": " + e.Why }

func (e *Error) Unwrap() error { return e.Err }

// ErrNotRegular is matched (errors.Is) by an Error for a link, a FIFO, a
// folder or any other file that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is matched (errors.Is) by an Error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

func (e *Error) Is(target error) bool { return e.kind != nil && target == e.kind }

const openFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// Open opens the file at path for reading as described in the package
// comment, at most max bytes long. The folders on the way to it are
// followed: use a Dir where the job could have written them.
func Open(path string, max int64) (*os.File, error) {
	fd, err := unix.Open(path, openFlags, 0)
	return check(fd, err, path, max)
}

// ReadFile reads the file at path (Open).
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, max)
}

// ReadFileFollow reads the file at path as ReadFile does, but follows a
// link: for a file of the user's that may legitimately be one (perf.yaml)
// and whose content the caller checks against a digest taken before the
// job ran, before it uses or quotes any of it.
func ReadFileFollow(path string, max int64) ([]byte, error) {
	fd, err := unix.Open(path, openFlags&^unix.O_NOFOLLOW, 0)
	f, err := check(fd, err, path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, max)
}

func check(fd int, err error, name string, max int64) (*os.File, error) {
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &Error{Name: name, Why: "refused: a symbolic link (gpugate never follows one left where the job's files are)", Err: err, kind: ErrNotRegular}
		}
		return nil, &Error{Name: name, Why: err.Error(), Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{Name: name, Why: err.Error(), Err: err}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &Error{Name: name, Why: "refused: not a regular file (" + kind(st.Mode()) + ")", kind: ErrNotRegular}
	}
	if max > 0 && st.Size() > max {
		f.Close()
		return nil, &Error{Name: name, Why: fmt.Sprintf("refused: larger than its limit of %s (%d bytes)", Size(max), st.Size()), kind: ErrTooLarge}
	}
	// Reads of a regular file never block; clear the flag all the same,
	// so that the file behaves as one opened the ordinary way.
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	return f, nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return m.Type().String()
}

// Size writes a byte count the way limits are written in the docs.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func readAll(f *os.File, name string, max int64) ([]byte, error) {
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{Name: name, Why: err.Error(), Err: err}
	}
	if max > 0 && int64(len(b)) > max {
		return nil, &Error{Name: name, Why: fmt.Sprintf("refused: larger than its limit of %s", Size(max)), kind: ErrTooLarge}
	}
	return b, nil
}

// Dir is a folder the job can write, opened by gpugate before the job ran
// (OpenDir): its files are opened relative to this folder, by name, so
// that a job that replaced the folder itself (or a folder above it) with
// a link does not lead gpugate elsewhere.
type Dir struct {
	f *os.File
	// Path is the folder's path when it was opened: for names in
	// messages, and for the paths that Glob returns and Open takes.
	Path string
}

// OpenDir opens the folder at path, which must not be a link.
func OpenDir(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open folder %s: %w", abs, err)
	}
	return &Dir{f: os.NewFile(uintptr(fd), abs), Path: abs}, nil
}

// Close closes the folder.
func (d *Dir) Close() error {
	if d == nil || d.f == nil {
		return nil
	}
	return d.f.Close()
}

// name is path's name in d: path is a name, or a path directly in d.
func (d *Dir) name(path string) (string, error) {
	n := path
	if strings.ContainsRune(path, '/') {
		if filepath.Dir(path) != d.Path {
			return "", &Error{Name: path, Why: "refused: not a file of " + d.Path}
		}
		n = filepath.Base(path)
	}
	if n == "" || n == "." || n == ".." {
		return "", &Error{Name: path, Why: "refused: not a file name"}
	}
	return n, nil
}

// Open opens a file of the folder (a name, or a path directly in the
// folder) as the package comment says, at most max bytes long. On a nil
// Dir it opens the path itself (the package's Open).
func (d *Dir) Open(path string, max int64) (*os.File, error) {
	if d == nil {
		return Open(path, max)
	}
	n, err := d.name(path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Openat(int(d.f.Fd()), n, openFlags, 0)
	return check(fd, err, filepath.Join(d.Path, n), max)
}

// ReadFile reads a file of the folder (Dir.Open).
func (d *Dir) ReadFile(path string, max int64) ([]byte, error) {
	f, err := d.Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, f.Name(), max)
}

// Glob returns the paths (Path/name) of the folder's entries whose name
// matches pattern (filepath.Match), sorted. Entries of any type are
// returned: Open refuses what is not a regular file, and says so.
func (d *Dir) Glob(pattern string) ([]string, error) {
	fd, err := unix.Openat(int(d.f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.Path, err)
	}
	f := os.NewFile(uintptr(fd), d.Path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.Path, err)
	}
	var out []string
	for _, n := range names {
		if ok, _ := filepath.Match(pattern, n); ok {
			out = append(out, filepath.Join(d.Path, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Remove removes a name of the folder (never what a link names).
func (d *Dir) Remove(path string) error {
	n, err := d.name(path)
	if err != nil {
		return err
	}
	return unix.Unlinkat(int(d.f.Fd()), n, 0)
}

// Place moves the file src (gpugate's own, in a private folder) into the
// folder as name, replacing whatever entry the job left there (a link is
// replaced, never followed). Across filesystems it is copied to a new
// file first.
func (d *Dir) Place(src, name string) error {
	n, err := d.name(name)
	if err != nil {
		return err
	}
	err = unix.Renameat(unix.AT_FDCWD, src, int(d.f.Fd()), n)
	if !errors.Is(err, unix.EXDEV) {
		return err
	}
	in, err := Open(src, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := ".gpugate-place-" + n
	unix.Unlinkat(int(d.f.Fd()), tmp, 0)
	fd, err := unix.Openat(int(d.f.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), tmp)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	os.Remove(src)
	return unix.Renameat(int(d.f.Fd()), tmp, int(d.f.Fd()), n)
}

// CopyTo copies the file f (opened by this package) into the new file dst
// (a path in a private folder of gpugate's) and returns how many bytes it
// copied. Readers that can only take a path (SQLite) read that copy: a
// path in the job's folder could be replaced between the check and the
// read.
func CopyTo(f *os.File, dst string) (int64, error) {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.NewSectionReader(f, 0, 1<<62))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// JSONWhy says why a file the job wrote did not decode as JSON without
// quoting any of it: where, or which field had the wrong type. (The
// decoder's own messages quote the file: an unknown field's name, a
// literal.)
func JSONWhy(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s, want %s", te.Field, te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the JSON ends early"
	}
	return "not valid JSON"
}
