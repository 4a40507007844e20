package nsys

import (
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpugate/gpugate/internal/sqlitescan"
	"github.com/gpugate/gpugate/trace"
)

// How the big tables are read. Each is split into rowid ranges, read on
// GOMAXPROCS connections of their own (sqlitescan: no mutex, no boxing),
// straight into one array per kind of record, sized once from the largest
// rowid (SQLite finds it without a scan), so that no record is copied to
// grow a slice. The arrays are then sorted by process and time and cut
// into the processes' profiles without copying. NVTX ranges are read last,
// when the blocking calls and GPU idle gaps that decide which of them a
// filtered read keeps are known.

// directTasks counts the parts read directly from the file, for tests.
var directTasks atomic.Int64

// rowsPerPart is the size of one rowid range.
const rowsPerPart = 1 << 19

// maxTime bounds timestamps: 2^62 ns is 146 years, so that differences of
// two times cannot overflow. nsys writes times relative to the session
// start.
const maxTime = 1 << 62

// scanned holds every process's records, sorted by process, then as
// trace.Profile.Sort orders them.
type scanned struct {
	gpu    []trace.GPUOp
	api    []trace.APICall
	ranges []trace.Range
	syncs  []trace.SyncWait
	keeper *keeper // the filter of a lean read; nil keeps every range
}

// row is the current row of a scan: an SQLite statement's, or a record
// read straight from the file (sqlitescan.File).
type row interface {
	Type(i int) int
	Int64(i int) int64
	Bytes(i int) []byte
	String(i int) string
}

// part is a rowid range (lo, hi] of a table; all is the whole table.
type part struct {
	lo, hi int64
	all    bool
}

func (p part) where(cond string) string {
	if p.all {
		if cond == "" {
			return ""
		}
		return " WHERE " + cond
	}
	w := fmt.Sprintf(" WHERE rowid > %d AND rowid <= %d", p.lo, p.hi)
	if cond != "" {
		w += " AND (" + cond + ")"
	}
	return w
}

// parts splits a table into rowid ranges and returns how many rows it may
// hold (0: unknown). Rowids of a table that nsys wrote run from 1 to the
// row count; a table whose largest rowid is implausible for the file's
// size, or that has no rowid, is read in one piece.
func (r *reader) parts(table string) ([]part, int) {
	var maxID int64
	ok := false
	err := query(r.db, `SELECT max(rowid) FROM `+table, func(st *sqlitescan.Stmt) error {
		maxID, ok = st.Int64(0), st.Type(0) == sqlitescan.Integer
		return nil
	})
	if err != nil || !ok || maxID <= 0 || maxID > r.size/16+1024 {
		return []part{{all: true}}, 0
	}
	n := int((maxID + rowsPerPart - 1) / rowsPerPart)
	ps := make([]part, n)
	for k := range ps {
		ps[k] = part{lo: int64(k) * rowsPerPart, hi: min(int64(k+1)*rowsPerPart, maxID)}
	}
	return ps, int(maxID)
}

// task is one rowid range of one table, read into its own window of the
// shared array: buf[off:off+size] when the size is known, else a slice of
// its own.
type task[T any] struct {
	table string
	query string
	off   int
	size  int // capacity of the window; 0: unknown, grow a slice of its own
	rows  func(st row, t *task[T], out []T) ([]T, error)
	// leaves and pos, when set, read the table's pages directly
	// (sqlitescan.File) instead of running query.
	leaves []sqlitescan.Leaf
	pos    []int

	got   []T
	n     int   // rows kept
	read  int   // rows read (API calls: a lean read drops some)
	names idMap // StringIds ids this task met, in the order it met them
	bad   counts

	db   *sqlitescan.DB // the connection the task runs on
	lean *apiFilter     // API calls: nil keeps every call
	// API calls of a lean read: whether each local name is a launching or
	// blocking call, and each process's candidates for its earliest and
	// latest call.
	roles []bool
	ends  map[int32]*apiEnds
	remap []trace.Name // local name -> Name, once the names are read
}

// counts are rows the reader skipped or repaired, for warnings.
type counts struct {
	nullTime, reversed int
}

func (c *counts) add(o counts) {
	c.nullTime += o.nullTime
	c.reversed += o.reversed
}

// runTasks runs fns on GOMAXPROCS goroutines, each with a connection of its
// own, and returns the first error.
func (r *reader) runTasks(fns []func(db *sqlitescan.DB) error) error {
	workers := min(runtime.GOMAXPROCS(0), len(fns))
	next := make(chan int, len(fns))
	for i := range fns {
		next <- i
	}
	close(next)
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			db, err := sqlitescan.Open(r.path)
			if err != nil {
				for i := range next {
					errs[i] = err
				}
				return
			}
			defer db.Close()
			for i := range next {
				if r.ctx.Err() != nil {
					errs[i] = r.ctx.Err()
					continue
				}
				errs[i] = fns[i](db)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// each steps through st, calling row until it is done, checking for
// cancellation now and then.
func (r *reader) each(st *sqlitescan.Stmt, row func() error) error {
	for n := 0; ; n++ {
		ok, err := st.Next()
		if err != nil || !ok {
			return err
		}
		if n&0xFFFF == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		if err := row(); err != nil {
			return err
		}
	}
}

// times reads the start and end columns (0 and 1) of the current row and
// checks them: INTEGER nanoseconds in range. ok is false for a row with a
// NULL time, which is skipped and counted; an end before the start is
// counted and made equal to it.
func times(st row, table string, c *counts) (start, end int64, ok bool, err error) {
	for i, col := range [2]string{"start", "end"} {
		switch t := st.Type(i); t {
		case sqlitescan.Integer:
		case sqlitescan.Null:
			c.nullTime++
			return 0, 0, false, nil
		default:
			kind := map[int]string{sqlitescan.Float: "REAL", sqlitescan.Text: "TEXT", sqlitescan.Blob: "BLOB"}[t]
			return 0, 0, false, fmt.Errorf("table %s: column %q holds a %s value (%.40q): times must be INTEGER nanoseconds; not an export written by nsys", table, col, kind, st.String(i))
		}
	}
	start, end = st.Int64(0), st.Int64(1)
	for _, t := range [2]int64{start, end} {
		if t < -maxTime || t > maxTime {
			return 0, 0, false, fmt.Errorf("table %s: time %d ns is out of range (more than 146 years from the session start)", table, t)
		}
	}
	if end < start {
		c.reversed++
		end = start
	}
	return start, end, true, nil
}

// read runs the tasks of one kind of record and returns their rows
// concatenated in task order, in the one array when sizes were known.
func readTasks[T any](r *reader, tasks []*task[T]) ([]T, error) {
	total := 0
	for _, t := range tasks {
		t.off = total
		total += t.size
	}
	buf := make([]T, total)
	fns := make([]func(db *sqlitescan.DB) error, len(tasks))
	for i, t := range tasks {
		fns[i] = func(db *sqlitescan.DB) error {
			t.db = db
			defer func() { t.db = nil }()
			var out []T
			if t.size > 0 {
				out = buf[t.off : t.off : t.off+t.size]
			}
			var err error
			if t.leaves != nil {
				n := 0
				err = r.file.Scan(t.leaves, t.pos, func(rec *sqlitescan.Record) error {
					if n++; n&0xFFFF == 0 && r.ctx.Err() != nil {
						return r.ctx.Err()
					}
					var err error
					out, err = t.rows(rec, t, out)
					return err
				})
			} else {
				var st *sqlitescan.Stmt
				if st, err = db.Query(t.query); err != nil {
					return fmt.Errorf("read %s: %w", t.table, err)
				}
				defer st.Close()
				err = r.each(st, func() error {
					var err error
					out, err = t.rows(st, t, out)
					return err
				})
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", t.table, err)
			}
			t.got = out
			return nil
		}
	}
	if err := r.runTasks(fns); err != nil {
		return nil, err
	}
	// Close the holes a window left (fewer rows than rowids). Rows that did
	// not fit a window, or of a table whose size was unknown, are in slices
	// of their own: then everything is copied into a new array.
	inPlace := true
	n := 0
	for _, t := range tasks {
		t.n = len(t.got)
		if t.n > 0 && (t.size == 0 || t.n > t.size || &t.got[0] != &buf[t.off]) {
			inPlace = false
		}
		n += t.n
	}
	if !inPlace {
		out := make([]T, 0, n)
		for _, t := range tasks {
			out = append(out, t.got...)
			t.got = nil
		}
		return out, nil
	}
	w := 0
	for _, t := range tasks {
		if w != t.off && t.n > 0 {
			copy(buf[w:w+t.n], buf[t.off:t.off+t.n])
		}
		t.got = nil
		w += t.n
	}
	return buf[:w], nil
}

// push appends v to out, which has room unless the table held more rows in
// a rowid range than the range is wide (it cannot, but out grows then).
func push[T any](out []T, v T) []T { return append(out, v) }

// scan reads the GPU activity, the API calls and the NVTX ranges.
func (r *reader) scan() (*scanned, error) {
	s := &scanned{}
	kernels, err := r.kernelTasks()
	if err != nil {
		return nil, err
	}
	memcpys, err := r.copyTasks()
	if err != nil {
		return nil, err
	}
	api, err := r.runtimeTasks()
	if err != nil {
		return nil, err
	}
	gpuTasks := append(kernels, memcpys...)
	var wg sync.WaitGroup
	if s.gpu, err = readTasks(r, gpuTasks); err != nil {
		return nil, err
	}
	var lean *apiFilter
	if r.opt.RangeNames != nil {
		// A lean read keeps only the API calls analysis reads (see
		// apiFilter), deciding as it reads: the others are never stored.
		lean = newAPIFilter(s.gpu)
		for _, t := range api {
			t.lean = lean
		}
	}
	// The GPU ops are named and sorted while the API calls are read.
	var gpuErr error
	wg.Go(func() {
		if gpuErr = r.nameGPU(s.gpu, gpuTasks); gpuErr == nil {
			sortGPU(s.gpu)
		}
	})
	s.api, err = readTasks(r, api)
	wg.Wait()
	if err := cmp.Or(gpuErr, err); err != nil {
		return nil, err
	}
	r.records = len(s.gpu)
	var bad counts
	for _, t := range gpuTasks {
		bad.add(t.bad)
	}
	for _, t := range api {
		bad.add(t.bad)
		r.records += t.read
	}
	// Names: only the StringIds the records use are read (an export can
	// hold millions that nothing uses).
	if err := r.nameAPI(s.api, api); err != nil {
		return nil, err
	}
	if lean != nil {
		s.api = append(s.api, lean.ends(r, api)...)
		if cap(s.api)-len(s.api) > len(s.api)/8 {
			// The array was sized for every call; the profile keeps it
			// for as long as analysis runs, and the garbage collector
			// paces itself by it.
			s.api = slices.Clone(s.api)
		}
	}
	// The API calls are sorted while the NVTX ranges are read: the filter
	// of a lean read is made from them first.
	if r.opt.RangeNames != nil && len(s.api) > 0 {
		s.keeper = newKeeper(r.opt.RangeNames, s.gpu, s.api, r.names)
	}
	wg.Go(func() { sortAPI(s.api) })
	rs, nb, err := r.readRanges(s)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	s.ranges = rs
	bad.add(nb)
	if s.syncs, err = r.readSyncs(&bad); err != nil {
		return nil, err
	}
	if bad.nullTime > 0 {
		r.warnf("%d rows with a NULL start or end (GPU activity, CUDA API calls or NVTX ranges that never ended) were left out", bad.nullTime)
	}
	if bad.reversed > 0 {
		r.warnf("%d rows end before they start; each was read as lasting 0 ns", bad.reversed)
	}
	return s, nil
}

// selectSQL names every column in need, then the optional columns in the
// given order, NULL when this export version lacks them. It returns "" when
// the table is absent (lazy exports leave out empty tables). pos, when not
// nil, are the columns' positions in the table's records for a direct read
// of its pages: only for an ordinary rowid table whose selected columns
// are stored in the record (not the rowid itself) and have no default.
func (r *reader) selectSQL(table string, need, opt []string) (q string, pos []int, err error) {
	ok, err := r.table(table)
	if err != nil || !ok {
		return "", nil, err
	}
	cols, err := r.columns(table)
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w", table, err)
	}
	sel := make([]string, 0, len(need)+len(opt))
	pos = make([]int, 0, len(need)+len(opt))
	raw := r.file != nil && !strings.Contains(strings.ToUpper(r.objects[table].sql), "WITHOUT ROWID")
	for _, c := range need {
		col, ok := cols[c]
		if !ok {
			return "", nil, fmt.Errorf("table %s has no column %s: unsupported nsys export schema", table, c)
		}
		sel = append(sel, `"`+c+`"`)
		pos = append(pos, col.cid)
		raw = raw && col.plain
	}
	for _, o := range opt {
		if col, ok := cols[o]; ok {
			sel = append(sel, `"`+o+`"`)
			pos = append(pos, col.cid)
			raw = raw && col.plain
		} else {
			sel = append(sel, "NULL")
			pos = append(pos, -1)
		}
	}
	if !raw {
		pos = nil
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM " + table, pos, nil
}

// rawParts splits a table's leaf pages into parts of about rowsPerPart
// rowids, for a direct read; nil when the table cannot be read so (then
// SQLite reads it).
func (r *reader) rawParts(table string, maxID int64) ([][]sqlitescan.Leaf, []part) {
	var root int64 = -1
	query(r.db, `SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = '`+table+`'`, func(st *sqlitescan.Stmt) error {
		if st.Type(0) == sqlitescan.Integer {
			root = st.Int64(0)
		}
		return nil
	})
	if root <= 0 || root > 1<<32-1 {
		return nil, nil
	}
	leaves, err := r.file.Leaves(uint32(root))
	if err != nil || len(leaves) == 0 {
		return nil, nil
	}
	var groups [][]sqlitescan.Leaf
	var ps []part
	lo, i := int64(0), 0
	for j := range leaves {
		hi := min(leaves[j].Max, maxID)
		if j == len(leaves)-1 || hi-lo >= rowsPerPart {
			groups = append(groups, leaves[i:j+1])
			ps = append(ps, part{lo: lo, hi: max(hi, lo)})
			lo, i = hi, j+1
		}
	}
	return groups, ps
}

func makeTasks[T any](r *reader, table, q string, pos []int, rows func(st row, t *task[T], out []T) ([]T, error)) []*task[T] {
	if q == "" {
		return nil
	}
	ps, n := r.parts(table)
	var ts []*task[T]
	if pos != nil && n > 0 {
		if groups, rps := r.rawParts(table, int64(n)); groups != nil {
			directTasks.Add(int64(len(groups)))
			for k, g := range groups {
				ts = append(ts, &task[T]{table: table, size: int(rps[k].hi - rps[k].lo), rows: rows, leaves: g, pos: pos})
			}
			return ts
		}
	}
	for _, p := range ps {
		size := 0
		if n > 0 {
			size = int(p.hi - p.lo)
		}
		ts = append(ts, &task[T]{table: table, query: q + p.where(""), size: size, rows: rows})
	}
	return ts
}

func (r *reader) kernelTasks() ([]*task[trace.GPUOp], error) {
	const table = "CUPTI_ACTIVITY_KIND_KERNEL"
	q, pos, err := r.selectSQL(table, []string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid"},
		[]string{"demangledName", "shortName"})
	if err != nil {
		return nil, err
	}
	return makeTasks(r, table, q, pos, func(st row, t *task[trace.GPUOp], out []trace.GPUOp) ([]trace.GPUOp, error) {
		start, end, ok, err := times(st, table, &t.bad)
		if !ok {
			return out, err
		}
		id, col := int64(-1), 6
		if st.Type(6) == sqlitescan.Null {
			col = 7
		}
		if st.Type(col) == sqlitescan.Integer {
			id = st.Int64(col)
		}
		pid := pidOf(st.Int64(5))
		return push(out, trace.GPUOp{
			Start: start, End: end, Device: int32(st.Int64(2)), Stream: int32(st.Int64(3)),
			Corr: st.Int64(4), Process: pid, Name: t.names.local(id), Kind: trace.Kernel,
		}), nil
	}), nil
}

func (r *reader) copyTasks() ([]*task[trace.GPUOp], error) {
	memcpy := r.names.InternString("[CUDA memcpy]")
	memset := r.names.InternString("[CUDA memset]")
	const mc, ms = "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"
	need := []string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"}
	q, pos, err := r.selectSQL(mc, need, []string{"copyKind", "dstKind", "srcKind"})
	if err != nil {
		return nil, err
	}
	ts := makeTasks(r, mc, q, pos, func(st row, t *task[trace.GPUOp], out []trace.GPUOp) ([]trace.GPUOp, error) {
		start, end, ok, err := times(st, mc, &t.bad)
		if !ok {
			return out, err
		}
		return push(out, trace.GPUOp{
			Start: start, End: end, Device: int32(st.Int64(2)), Stream: int32(st.Int64(3)),
			Corr: st.Int64(4), Process: pidOf(st.Int64(5)), Bytes: st.Int64(6), Name: memcpy, Kind: trace.Memcpy,
			Copy: r.copyKinds[st.Int64(7)], Dst: r.memKind(st, 8), Src: r.memKind(st, 9),
		}), nil
	})
	q, pos, err = r.selectSQL(ms, need, []string{"memKind"})
	if err != nil {
		return nil, err
	}
	ts = append(ts, makeTasks(r, ms, q, pos, func(st row, t *task[trace.GPUOp], out []trace.GPUOp) ([]trace.GPUOp, error) {
		start, end, ok, err := times(st, ms, &t.bad)
		if !ok {
			return out, err
		}
		return push(out, trace.GPUOp{
			Start: start, End: end, Device: int32(st.Int64(2)), Stream: int32(st.Int64(3)),
			Corr: st.Int64(4), Process: pidOf(st.Int64(5)), Bytes: st.Int64(6), Name: memset, Kind: trace.Memset,
			Dst: r.memKind(st, 7),
		}), nil
	})...)
	return ts, nil
}

func (r *reader) memKind(st row, col int) trace.MemKind {
	if st.Type(col) != sqlitescan.Integer {
		return trace.MemUnknown
	}
	if k, ok := r.memKinds[st.Int64(col)]; ok {
		return k
	}
	return trace.MemUnknown
}

func (r *reader) runtimeTasks() ([]*task[trace.APICall], error) {
	const table = "CUPTI_ACTIVITY_KIND_RUNTIME"
	q, pos, err := r.selectSQL(table, []string{"start", "end", "globalTid", "correlationId", "nameId"}, nil)
	if err != nil {
		return nil, err
	}
	return makeTasks(r, table, q, pos, func(st row, t *task[trace.APICall], out []trace.APICall) ([]trace.APICall, error) {
		start, end, ok, err := times(st, table, &t.bad)
		if !ok {
			return out, err
		}
		t.read++
		id := int64(-1)
		if st.Type(4) == sqlitescan.Integer {
			id = st.Int64(4)
		}
		g := st.Int64(2)
		a := trace.APICall{
			Start: start, End: end, Thread: tidOf(g), Corr: st.Int64(3), Process: pidOf(g), Name: t.names.local(id),
		}
		if t.lean != nil {
			keep, err := t.lean.keep(t, &a, id)
			if !keep || err != nil {
				return out, err
			}
		}
		return push(out, a), nil
	}), nil
}

// idMap gives the StringIds ids a task meets small local numbers, kept in
// the records' Name until the names are read.
type idMap struct {
	dense  []uint32 // id -> local+1, for small ids
	sparse map[int64]uint32
	ids    []int64
	// A direct-mapped cache in front of sparse: exports of long runs have
	// ids in the millions, and a map lookup per row cost more than the
	// row's decoding. Slot id%len holds id+1 (0: empty) and its local.
	cacheID    [256]int64
	cacheLocal [256]uint32
}

const denseIDs = 1 << 18

func (m *idMap) local(id int64) trace.Name {
	if id >= 0 && id < denseIDs {
		if int(id) >= len(m.dense) {
			n := min(max(int(id)+1, 2*len(m.dense)), denseIDs)
			m.dense = slices.Grow(m.dense, n-len(m.dense))[:n]
		}
		if v := m.dense[id]; v != 0 {
			return trace.Name(v - 1)
		}
		m.ids = append(m.ids, id)
		m.dense[id] = uint32(len(m.ids))
		return trace.Name(len(m.ids) - 1)
	}
	slot := uint64(id) % uint64(len(m.cacheID))
	if m.cacheID[slot] == id+1 {
		return trace.Name(m.cacheLocal[slot])
	}
	if v, ok := m.sparse[id]; ok {
		m.cacheID[slot], m.cacheLocal[slot] = id+1, v
		return trace.Name(v)
	}
	if m.sparse == nil {
		m.sparse = map[int64]uint32{}
	}
	m.ids = append(m.ids, id)
	m.sparse[id] = uint32(len(m.ids) - 1)
	return trace.Name(len(m.ids) - 1)
}

// strings reads the StringIds values of ids (id -1 is NULL and reads as
// ""). Ids that StringIds lacks read as "" too, and are counted.
func (r *reader) strings(ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if id >= 0 {
			want[id] = true
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	cols, err := r.columns("StringIds")
	if err != nil {
		return nil, fmt.Errorf("read StringIds: %w", err)
	}
	// Look each id up when id is the table's key; otherwise (a file nsys
	// did not write) read the table once.
	keyed := false
	query(r.db, `SELECT 1 FROM pragma_table_info('StringIds') WHERE name = 'id' AND pk = 1`, func(*sqlitescan.Stmt) error {
		keyed = true
		return nil
	})
	if _, ok := cols["value"]; !ok {
		return nil, fmt.Errorf("table StringIds has no column value: unsupported nsys export schema")
	}
	if keyed && len(want) < 1<<16 {
		st, err := r.db.Query(`SELECT value FROM StringIds WHERE id = ?1`)
		if err != nil {
			return nil, fmt.Errorf("read StringIds: %w", err)
		}
		defer st.Close()
		for id := range want {
			st.Reset()
			if err := st.BindInt64(1, id); err != nil {
				return nil, err
			}
			ok, err := st.Next()
			if err != nil {
				return nil, fmt.Errorf("read StringIds: %w", err)
			}
			if ok {
				out[id] = st.String(0)
			}
		}
	} else {
		err := query(r.db, `SELECT id, value FROM StringIds`, func(st *sqlitescan.Stmt) error {
			if id := st.Int64(0); want[id] && st.Type(0) == sqlitescan.Integer {
				if _, dup := out[id]; !dup {
					out[id] = st.String(1)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read StringIds: %w", err)
		}
	}
	if missing := len(want) - len(out); missing > 0 {
		r.warnf("%d names refer to StringIds ids that the export lacks; they read as empty names", missing)
	}
	return out, nil
}

// resolve turns the tasks' local name numbers into Names.
func resolve[T any](r *reader, tasks []*task[T], strip func(string) string) ([][]trace.Name, error) {
	var ids []int64
	for _, t := range tasks {
		ids = append(ids, t.names.ids...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	strs, err := r.strings(ids)
	if err != nil {
		return nil, err
	}
	global := make(map[int64]trace.Name, len(ids))
	for _, id := range ids { // interned in id order: deterministic
		s := strs[id]
		if strip != nil {
			s = strip(s)
		}
		global[id] = r.names.InternString(s)
	}
	remap := make([][]trace.Name, len(tasks))
	for i, t := range tasks {
		remap[i] = make([]trace.Name, len(t.names.ids))
		for j, id := range t.names.ids {
			remap[i][j] = global[id]
		}
	}
	return remap, nil
}

func (r *reader) nameGPU(gpu []trace.GPUOp, tasks []*task[trace.GPUOp]) error {
	remap, err := resolve(r, tasks, nil)
	if err != nil {
		return err
	}
	off := 0
	for i, t := range tasks {
		n := t.n
		for j := off; j < off+n; j++ {
			if gpu[j].Kind == trace.Kernel {
				gpu[j].Name = remap[i][gpu[j].Name]
			}
		}
		off += n
	}
	return nil
}

func (r *reader) nameAPI(api []trace.APICall, tasks []*task[trace.APICall]) error {
	remap, err := resolve(r, tasks, trace.StripAPIVersion)
	if err != nil {
		return err
	}
	off := 0
	for i, t := range tasks {
		for j := off; j < off+t.n; j++ {
			api[j].Name = remap[i][api[j].Name]
		}
		off += t.n
		t.remap = remap[i]
	}
	return nil
}

// The orders of trace.Profile.Sort, with the process first.
func sortGPU(ops []trace.GPUOp) {
	sortRuns(ops, func(a *trace.GPUOp) int32 { return a.Process }, func(a, b *trace.GPUOp) int {
		switch {
		case a.Process != b.Process:
			return cmp.Compare(a.Process, b.Process)
		case a.Start != b.Start:
			return cmp.Compare(a.Start, b.Start)
		case a.End != b.End:
			return cmp.Compare(a.End, b.End)
		case a.Corr != b.Corr:
			return cmp.Compare(a.Corr, b.Corr)
		case a.Device != b.Device:
			return cmp.Compare(a.Device, b.Device)
		case a.Stream != b.Stream:
			return cmp.Compare(a.Stream, b.Stream)
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

func sortAPI(api []trace.APICall) {
	sortRuns(api, func(a *trace.APICall) int32 { return a.Process }, cmpAPI)
}

func cmpAPI(a, b *trace.APICall) int {
	if c := cmpAPINoName(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func cmpAPINoName(a, b *trace.APICall) int {
	switch {
	case a.Process != b.Process:
		return cmp.Compare(a.Process, b.Process)
	case a.Start != b.Start:
		return cmp.Compare(a.Start, b.Start)
	case a.End != b.End:
		return cmp.Compare(a.End, b.End)
	case a.Corr != b.Corr:
		return cmp.Compare(a.Corr, b.Corr)
	}
	return cmp.Compare(a.Thread, b.Thread)
}

func sortRanges(rs []trace.Range) {
	slices.SortFunc(rs, func(a, b trace.Range) int {
		switch {
		case a.Process != b.Process:
			return cmp.Compare(a.Process, b.Process)
		case a.Start != b.Start:
			return cmp.Compare(a.Start, b.Start)
		case a.End != b.End:
			return cmp.Compare(b.End, a.End)
		case a.Thread != b.Thread:
			return cmp.Compare(a.Thread, b.Thread)
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// apiFilter keeps the API calls analysis reads: in a process with GPU
// activity, those that launched some of it (by correlation id), the
// blocking and the launching calls (by name), and the process's earliest
// and latest call (they bound the whole-profile window); every call of a
// process without GPU activity. It is read-only once made; the tasks that
// use it keep their own state (task.roles, task.ends).
type apiFilter struct {
	launched map[int32]*corrs // by process
}

func newAPIFilter(gpu []trace.GPUOp) *apiFilter {
	byPid := map[int32][]int64{}
	for i := range gpu {
		byPid[gpu[i].Process] = append(byPid[gpu[i].Process], gpu[i].Corr)
	}
	f := &apiFilter{launched: make(map[int32]*corrs, len(byPid))}
	for pid, cs := range byPid {
		c := corrSet(cs)
		f.launched[pid] = &c
	}
	return f
}

// apiEnds are a process's candidates, in one task, for its earliest call
// (the first in sortAPI's order) and its latest (the latest end, the first
// in that order among those that end then). Names are the task's local
// ones until the names are read, so calls that differ only in name are
// all kept as candidates.
type apiEnds struct {
	first, last []trace.APICall
}

// keep reports whether the task keeps a, whose name has the StringIds id
// id, and notes a as a candidate for its process's ends.
func (f *apiFilter) keep(t *task[trace.APICall], a *trace.APICall, id int64) (bool, error) {
	launched := f.launched[a.Process]
	if launched == nil {
		return true, nil
	}
	for int(a.Name) >= len(t.roles) { // names are numbered as met
		role, err := apiRole(t.db, t.names.ids[len(t.roles)])
		if err != nil {
			return false, err
		}
		t.roles = append(t.roles, role)
	}
	if t.ends == nil {
		t.ends = map[int32]*apiEnds{}
	}
	e := t.ends[a.Process]
	if e == nil {
		e = &apiEnds{first: []trace.APICall{*a}, last: []trace.APICall{*a}}
		t.ends[a.Process] = e
	} else {
		switch c := cmpAPINoName(a, &e.first[0]); {
		case c < 0:
			e.first = append(e.first[:0], *a)
		case c == 0:
			e.first = append(e.first, *a)
		}
		switch c := cmp.Or(cmp.Compare(e.last[0].End, a.End), cmpAPINoName(a, &e.last[0])); {
		case c < 0:
			e.last = append(e.last[:0], *a)
		case c == 0:
			e.last = append(e.last, *a)
		}
	}
	return t.roles[a.Name] || launched.has(a.Corr), nil
}

// ends returns each process's earliest and latest call that the tasks did
// not keep (tasks' names already resolved into names).
func (f *apiFilter) ends(r *reader, tasks []*task[trace.APICall]) []trace.APICall {
	first, last := map[int32]trace.APICall{}, map[int32]trace.APICall{}
	remap := func(k int, a trace.APICall) trace.APICall {
		a.Name = tasks[k].remap[a.Name]
		return a
	}
	for k, t := range tasks {
		for pid, e := range t.ends {
			for _, a := range e.first {
				a = remap(k, a)
				if b, ok := first[pid]; !ok || cmpAPI(&a, &b) < 0 {
					first[pid] = a
				}
			}
			for _, a := range e.last {
				a = remap(k, a)
				if b, ok := last[pid]; !ok || cmp.Or(cmp.Compare(b.End, a.End), cmpAPI(&a, &b)) < 0 {
					last[pid] = a
				}
			}
		}
		t.ends, t.roles = nil, nil
	}
	var out []trace.APICall
	kept := func(a *trace.APICall) bool {
		name := r.names.String(a.Name)
		return trace.SyncAPI(name) || trace.LaunchAPI(name) || f.launched[a.Process].has(a.Corr)
	}
	for pid, a := range first {
		if !kept(&a) {
			out = append(out, a)
		}
		if b := last[pid]; b != a && !kept(&b) {
			out = append(out, b)
		}
	}
	return out
}

// apiRole reports whether the API call named by StringIds id is a
// blocking or a launching call.
func apiRole(db *sqlitescan.DB, id int64) (bool, error) {
	if id < 0 {
		return false, nil
	}
	st, err := db.Query(`SELECT value FROM StringIds WHERE id = ?1`)
	if err != nil {
		return false, fmt.Errorf("read StringIds: %w", err)
	}
	defer st.Close()
	s, err := lookupString(st, id)
	if err != nil {
		return false, fmt.Errorf("read StringIds: %w", err)
	}
	name := trace.StripAPIVersion(s)
	return trace.SyncAPI(name) || trace.LaunchAPI(name), nil
}

// corrs is a set of correlation ids: a bitmap in pages of 65,536 ids when
// they come in dense clusters, as CUPTI's per-process counters do (one
// cluster per process, or per capture), else an open-addressing hash set.
type corrs struct {
	lo    int64
	pages []*[corrPage / 64]uint64 // (id-lo)/corrPage -> its bits; nil: none
	hash  []int64                  // 0 is empty; ids are stored plus one
	mask  uint64
}

const corrPage = 1 << 16

func corrSet(ids []int64) corrs {
	if len(ids) == 0 {
		return corrs{}
	}
	lo, hi := ids[0], ids[0]
	for _, id := range ids {
		lo, hi = min(lo, id), max(hi, id)
	}
	// Pages, when their index costs at most a pointer per id and the pages
	// in use at most 64 bytes per id.
	if slots := uint64(hi-lo)/corrPage + 1; slots <= uint64(len(ids))+1024 {
		c := corrs{lo: lo, pages: make([]*[corrPage / 64]uint64, slots)}
		used := 0
		for _, id := range ids {
			if k := uint64(id-lo) / corrPage; c.pages[k] == nil {
				if used++; used*corrPage/8 > 64*len(ids)+corrPage {
					c.pages = nil
					break
				}
				c.pages[k] = new([corrPage / 64]uint64)
			}
		}
		if c.pages != nil {
			for _, id := range ids {
				d := uint64(id - lo)
				c.pages[d/corrPage][d%corrPage/64] |= 1 << (d % 64)
			}
			return c
		}
	}
	size := 1
	for size < 2*len(ids) {
		size *= 2
	}
	c := corrs{hash: make([]int64, size), mask: uint64(size - 1)}
	for _, id := range ids {
		v := id + 1
		for j := hashCorr(id) & c.mask; ; j = (j + 1) & c.mask {
			if c.hash[j] == v {
				break
			}
			if c.hash[j] == 0 {
				c.hash[j] = v
				break
			}
		}
	}
	return c
}

func hashCorr(c int64) uint64 { return uint64(c) * 0x9E3779B97F4A7C15 >> 17 }

func (c *corrs) has(corr int64) bool {
	switch {
	case c.pages != nil:
		if corr < c.lo {
			return false
		}
		d := uint64(corr - c.lo)
		if d/corrPage >= uint64(len(c.pages)) {
			return false
		}
		p := c.pages[d/corrPage]
		return p != nil && p[d%corrPage/64]&(1<<(d%64)) != 0
	case c.hash != nil:
		v := corr + 1
		for j := hashCorr(corr) & c.mask; ; j = (j + 1) & c.mask {
			switch c.hash[j] {
			case v:
				return true
			case 0:
				return false
			}
		}
	}
	return false
}

// Synchronization types (ENUM_CUPTI_SYNC_TYPE) as documented for every
// schema so far.
var documentedSyncKinds = map[int64]trace.SyncKind{
	0: trace.SyncUnknown, 1: trace.SyncEvent, 2: trace.SyncStreamWaitEvent, 3: trace.SyncStream, 4: trace.SyncContext,
}

// readSyncs reads CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (CUDA 11+ captures):
// the device waits inside synchronizing calls, sorted by process and start.
func (r *reader) readSyncs(bad *counts) ([]trace.SyncWait, error) {
	const table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
	q, _, err := r.selectSQL(table, []string{"start", "end", "correlationId", "globalPid", "syncType"}, nil)
	if err != nil || q == "" {
		return nil, err
	}
	kinds, err := r.syncKinds()
	if err != nil {
		return nil, err
	}
	var out []trace.SyncWait
	err = query(r.db, q, func(st *sqlitescan.Stmt) error {
		start, end, ok, err := times(st, table, bad)
		if !ok {
			return err
		}
		out = append(out, trace.SyncWait{Start: start, End: end, Corr: st.Int64(2), Process: pidOf(st.Int64(3)), Kind: kinds[st.Int64(4)]})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	slices.SortFunc(out, func(a, b trace.SyncWait) int {
		return cmp.Or(cmp.Compare(a.Process, b.Process), cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), cmp.Compare(a.Corr, b.Corr))
	})
	return out, nil
}

// syncKinds reads ENUM_CUPTI_SYNC_TYPE where the export has it, by symbol
// name, over the documented ids.
func (r *reader) syncKinds() (map[int64]trace.SyncKind, error) {
	kinds := maps.Clone(documentedSyncKinds)
	ok, err := r.table("ENUM_CUPTI_SYNC_TYPE")
	if err != nil || !ok {
		return kinds, err
	}
	err = query(r.db, `SELECT id, name FROM ENUM_CUPTI_SYNC_TYPE`, func(st *sqlitescan.Stmt) error {
		name := strings.ToUpper(st.String(1))
		for _, k := range []struct {
			suffix string
			kind   trace.SyncKind
		}{{"STREAM_WAIT_EVENT", trace.SyncStreamWaitEvent}, {"EVENT_SYNCHRONIZE", trace.SyncEvent}, {"STREAM_SYNCHRONIZE", trace.SyncStream},
			{"CONTEXT_SYNCHRONIZE", trace.SyncContext}, {"UNKNOWN", trace.SyncUnknown}} {
			if strings.HasSuffix(name, k.suffix) && st.Type(0) == sqlitescan.Integer {
				kinds[st.Int64(0)] = k.kind
				break
			}
		}
		return nil
	})
	return kinds, err
}
