// Package sqlitescan reads large SQLite tables fast, for nsys exports of
// millions of rows. It calls modernc.org/sqlite's C-level API (package lib,
// the same pure-Go SQLite the database/sql driver wraps) on a read-only
// connection opened without SQLite's mutex, and reads columns without
// boxing them into driver.Values.
//
// Why not database/sql: the driver opens every connection with
// SQLITE_OPEN_FULLMUTEX and converts every column to an interface value;
// on a 600 MB export (1 M kernels, 1.9 M runtime calls, 4.8 M NVTX ranges)
// that cost 16 s, of which a third was mutex locking (BenchmarkNsysLarge).
//
// A DB and its statements belong to one goroutine.
package sqlitescan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// DB is a read-only connection.
type DB struct {
	tls *libc.TLS
	db  uintptr
}

// Open opens the SQLite file at path read-only and immutable (no locks,
// no journal: the file must not change while it is read). The path is a
// file name, never a URI: it is made absolute and percent-escaped into a
// file: URI, so that '?', '#' and '%' in it name a file rather than
// parameters, and mode=ro makes SQLite refuse to create a missing file.
//
// immutable=1 also makes SQLite ignore a -wal or hot -journal beside the
// file; callers that may meet one must check for it first (see Sidecars).
func Open(path string) (*DB, error) {
	uri, err := URI(path)
	if err != nil {
		return nil, err
	}
	tls := libc.NewTLS()
	name, err := libc.CString(uri)
	if err != nil {
		tls.Close()
		return nil, err
	}
	defer libc.Xfree(tls, name)
	pp := libc.Xmalloc(tls, 8)
	defer libc.Xfree(tls, pp)
	rc := sqlite3.Xsqlite3_open_v2(tls, name, pp, sqlite3.SQLITE_OPEN_READONLY|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	d := &DB{tls: tls, db: *(*uintptr)(cptr(pp))}
	if rc != sqlite3.SQLITE_OK {
		err := d.err(rc)
		d.Close()
		return nil, err
	}
	return d, nil
}

// URI returns the read-only, immutable file: URI that names the file at
// path and nothing else: every byte outside [A-Za-z0-9/._~-] is
// percent-escaped, and the path is absolute so that it cannot be read as
// a URI authority.
func URI(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(abs, 0) >= 0 {
		return "", errors.New("file name holds a NUL byte")
	}
	var b strings.Builder
	b.WriteString("file://")
	for i := 0; i < len(abs); i++ {
		c := abs[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '/', c == '.', c == '_', c == '~', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	b.WriteString("?mode=ro&immutable=1")
	return b.String(), nil
}

// Sidecars reports which of SQLite's companion files lie beside path
// with content in them: a write-ahead log (-wal) holds committed
// transactions that the main file lacks, and a hot rollback journal
// (-journal) means a write was interrupted. An immutable reader would
// ignore both and see stale or torn data.
func Sidecars(path string) []string {
	var out []string
	for _, suf := range []string{"-wal", "-journal"} {
		if st, err := os.Stat(path + suf); err == nil && st.Size() > 0 {
			out = append(out, path+suf)
		}
	}
	return out
}

func (d *DB) err(rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errstr(d.tls, rc))
	if d.db != 0 {
		if m := libc.GoString(sqlite3.Xsqlite3_errmsg(d.tls, d.db)); m != "" && m != msg {
			msg += ": " + m
		}
	}
	return errors.New(msg)
}

// Close closes the connection.
func (d *DB) Close() {
	if d.db != 0 {
		sqlite3.Xsqlite3_close_v2(d.tls, d.db)
		d.db = 0
	}
	d.tls.Close()
}

// Stmt is a prepared query being stepped through.
type Stmt struct {
	d *DB
	p uintptr
}

// Query prepares a single SELECT statement.
func (d *DB) Query(query string) (*Stmt, error) {
	q, err := libc.CString(query)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(d.tls, q)
	pp := libc.Xmalloc(d.tls, 8)
	defer libc.Xfree(d.tls, pp)
	if rc := sqlite3.Xsqlite3_prepare_v2(d.tls, d.db, q, -1, pp, 0); rc != sqlite3.SQLITE_OK {
		return nil, fmt.Errorf("%w (in %.60s)", d.err(rc), query)
	}
	return &Stmt{d: d, p: *(*uintptr)(cptr(pp))}, nil
}

// Next steps to the next row; it returns false at the end or on error.
func (s *Stmt) Next() (bool, error) {
	switch rc := sqlite3.Xsqlite3_step(s.d.tls, s.p); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		return false, s.d.err(rc)
	}
}

// Int64 returns column i of the current row as an integer (0 for NULL).
func (s *Stmt) Int64(i int) int64 { return sqlite3.Xsqlite3_column_int64(s.d.tls, s.p, int32(i)) }

// Null reports whether column i of the current row is NULL.
func (s *Stmt) Null(i int) bool {
	return sqlite3.Xsqlite3_column_type(s.d.tls, s.p, int32(i)) == sqlite3.SQLITE_NULL
}

// Bytes returns column i as text; the slice is valid until the next call
// on the statement. It is nil for NULL.
func (s *Stmt) Bytes(i int) []byte {
	p := sqlite3.Xsqlite3_column_text(s.d.tls, s.p, int32(i))
	if p == 0 {
		return nil
	}
	n := sqlite3.Xsqlite3_column_bytes(s.d.tls, s.p, int32(i))
	return unsafe.Slice((*byte)(cptr(p)), n)
}

// Column types, as sqlite3_column_type reports them.
const (
	Integer = sqlite3.SQLITE_INTEGER
	Float   = sqlite3.SQLITE_FLOAT
	Text    = sqlite3.SQLITE_TEXT
	Blob    = sqlite3.SQLITE_BLOB
	Null    = sqlite3.SQLITE_NULL
)

// Type returns the storage class of column i of the current row.
func (s *Stmt) Type(i int) int {
	return int(sqlite3.Xsqlite3_column_type(s.d.tls, s.p, int32(i)))
}

// Float64 returns column i of the current row as a float.
func (s *Stmt) Float64(i int) float64 {
	return sqlite3.Xsqlite3_column_double(s.d.tls, s.p, int32(i))
}

// String returns column i as a Go string (copied), "" for NULL.
func (s *Stmt) String(i int) string { return string(s.Bytes(i)) }

// BindInt64 binds v to the i-th parameter (1-based) after a Reset.
func (s *Stmt) BindInt64(i int, v int64) error {
	if rc := sqlite3.Xsqlite3_bind_int64(s.d.tls, s.p, int32(i), v); rc != sqlite3.SQLITE_OK {
		return s.d.err(rc)
	}
	return nil
}

// Reset rewinds the statement so that it can be run again.
func (s *Stmt) Reset() { sqlite3.Xsqlite3_reset(s.d.tls, s.p) }

// Close finalizes the statement.
func (s *Stmt) Close() {
	if s.p != 0 {
		sqlite3.Xsqlite3_finalize(s.d.tls, s.p)
		s.p = 0
	}
}

// cptr turns an address of SQLite's C heap into a pointer. That memory is
// allocated by modernc.org/libc outside the Go heap, so the garbage
// collector neither moves nor frees it; the conversion goes through memory
// so that vet's unsafeptr check, which cannot know that, stays on for the
// rest of the project.
func cptr(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
