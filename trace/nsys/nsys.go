// Package nsys reads Nsight Systems SQLite exports (nsys export --type
// sqlite) into trace.Profiles, one per profiled process that ran GPU work (a
// process is a rank).
//
// Tables and columns vary between nsys versions (the metadata table was
// renamed, columns were inserted mid-table, exports are lazy so empty tables
// are missing), so the reader detects both at run time and names every
// column it selects. It was checked on exports of nsys 2022.1 (schema
// 2.9.1), 2022.4 (3.0.0) and 2026.2 (3.25.0); see
// ../shared/research/nsys-sqlite-schema.md.
package nsys

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the driver, pure Go

	"github.com/gpugate/gpugate/internal/sqlitescan"
	"github.com/gpugate/gpugate/trace"
)

// IsSQLite reports whether the file starts with the SQLite header.
func IsSQLite(header []byte) bool {
	return bytes.HasPrefix(header, []byte("SQLite format 3\x00"))
}

// ReadFile reads an nsys SQLite export.
func ReadFile(ctx context.Context, path string) ([]*trace.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 16)
	n, _ := io.ReadFull(f, hdr)
	f.Close()
	if !IsSQLite(hdr[:n]) {
		return nil, &trace.SyntaxError{File: path, Msg: "not an SQLite database"}
	}
	// immutable=1: the export is never written while we read it, and a
	// read-only folder must not make SQLite try to create lock files.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	r := &reader{db: db, path: path, ctx: ctx}
	profiles, err := r.read()
	if err != nil {
		var se *trace.SyntaxError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, &trace.SyntaxError{File: path, Msg: err.Error()}
	}
	return profiles, nil
}

type reader struct {
	ctx    context.Context
	db     *sql.DB
	path   string
	tables map[string]bool

	variant string
	names   *trace.Strings
	strs    map[int64]trace.Name // StringIds.id -> Name

	procs map[int32]*trace.Profile
}

// Export-schema memcpy kinds (ENUM_CUDA_MEMCPY_OPER) and memory kinds
// (ENUM_CUDA_MEM_KIND). The numeric ids are stable across versions while the
// enum tables are optional, so they are built in.
var copyKinds = map[int64]trace.CopyKind{
	1: trace.HtoD, 2: trace.DtoH, 8: trace.DtoD, 9: trace.HtoH, 10: trace.PtoP,
	11: trace.HtoD, 12: trace.DtoH, 13: trace.DtoD, // unified memory
}

var memKinds = map[int64]trace.MemKind{
	0: trace.Pageable, 1: trace.Pinned, 2: trace.DeviceMem, 3: trace.Array,
	4: trace.Managed, 5: trace.DeviceMem, 6: trace.Managed,
}

// pid and tid of a globalTid/globalPid: <HW:8><VM:8><PID:24><TID:24>.
func pidOf(g int64) int32 { return int32((g >> 24) & 0xFFFFFF) }
func tidOf(g int64) int64 { return g & 0xFFFFFF }

func (r *reader) read() ([]*trace.Profile, error) {
	tables, err := r.strings1(`SELECT name FROM sqlite_master WHERE type='table'`)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	r.tables = map[string]bool{}
	for _, t := range tables {
		r.tables[t] = true
	}
	meta := ""
	switch {
	case r.tables["META_DATA_EXPORT"]:
		meta = "META_DATA_EXPORT"
	case r.tables["EXPORT_META_DATA"]:
		meta = "EXPORT_META_DATA"
	}
	if meta == "" || !r.tables["StringIds"] {
		return nil, errors.New("SQLite database is not an Nsight Systems export (no META_DATA_EXPORT or EXPORT_META_DATA and StringIds tables)")
	}
	version, schema := r.meta(meta)
	r.variant = fmt.Sprintf("nsys %s (schema %s)", version, schema)

	r.names = trace.NewStrings()
	r.strs = map[int64]trace.Name{}
	r.procs = map[int32]*trace.Profile{}
	if err := r.stringIds(); err != nil {
		return nil, err
	}
	if err := r.bulk(); err != nil {
		return nil, err
	}
	return r.profiles()
}

func (r *reader) strings1(query string, args ...any) ([]string, error) {
	rows, err := r.db.QueryContext(r.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s.String)
	}
	return out, rows.Err()
}

func (r *reader) columns(table string) map[string]bool {
	cols, _ := r.strings1(`SELECT name FROM pragma_table_info(?)`, table)
	m := map[string]bool{}
	for _, c := range cols {
		m[c] = true
	}
	return m
}

func (r *reader) meta(table string) (version, schema string) {
	rows, err := r.db.QueryContext(r.ctx, `SELECT name, value FROM `+table+` WHERE name IN ('EXPORT_PRODUCT_VERSION','EXPORT_SCHEMA_VERSION')`)
	if err != nil {
		return "unknown", "unknown"
	}
	defer rows.Close()
	version, schema = "unknown", "unknown"
	for rows.Next() {
		var k, v sql.NullString
		if rows.Scan(&k, &v) == nil {
			switch k.String {
			case "EXPORT_PRODUCT_VERSION":
				version = v.String
			case "EXPORT_SCHEMA_VERSION":
				schema = v.String
			}
		}
	}
	return version, schema
}

func (r *reader) stringIds() error {
	rows, err := r.db.QueryContext(r.ctx, `SELECT id, value FROM StringIds`)
	if err != nil {
		return fmt.Errorf("read StringIds: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var v sql.RawBytes
		if err := rows.Scan(&id, &v); err != nil {
			return fmt.Errorf("read StringIds: %w", err)
		}
		r.strs[id] = r.names.Intern(v)
	}
	return rows.Err()
}

func (r *reader) proc(pid int32) *trace.Profile {
	p := r.procs[pid]
	if p == nil {
		p = trace.New(r.path, trace.FormatNsys)
		p.Names = r.names
		p.Process = int(pid)
		p.Variant = r.variant
		r.procs[pid] = p
	}
	return p
}

// selectSQL builds a SELECT over table naming every column in need, then
// the optional columns sorted by name, each replaced by its default
// expression when this export version lacks it. It returns "" when the
// table is absent (lazy exports leave out empty tables).
func (r *reader) selectSQL(table string, need []string, opt map[string]string, where string) (string, error) {
	if !r.tables[table] {
		return "", nil
	}
	cols := r.columns(table)
	sel := make([]string, 0, len(need)+len(opt))
	for _, c := range need {
		if !cols[c] {
			return "", fmt.Errorf("table %s has no column %s: unsupported nsys export schema", table, c)
		}
		sel = append(sel, `"`+c+`"`)
	}
	keys := make([]string, 0, len(opt))
	for k := range opt {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if cols[k] {
			sel = append(sel, `"`+k+`"`)
		} else {
			sel = append(sel, opt[k])
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	return q, nil
}

// rows collects one table's records, by process.
type rows struct {
	gpu    map[int32][]trace.GPUOp
	api    map[int32][]trace.APICall
	ranges map[int32][]trace.Range
	names  *trace.Strings // NVTX only: names local to the goroutine
	hint   int            // expected row count, to size the first process's slice
}

// grow appends v to m[pid], sizing a new slice by the row-count hint: the
// tables are large and growing slices by doubling copied more than reading.
func grow[T any](m map[int32][]T, pid int32, v T, hint int) {
	s, ok := m[pid]
	if !ok {
		s = make([]T, 0, max(hint, 16))
		if len(m) > 0 {
			s = make([]T, 0, 1024)
		}
	}
	m[pid] = append(s, v)
}

// bulk reads the large tables, each on its own connection and goroutine,
// then hands the records to their processes.
func (r *reader) bulk() error {
	memcpyName := r.names.InternString("[CUDA memcpy]")
	memsetName := r.names.InternString("[CUDA memset]")
	type job struct {
		table, where string
		need         []string
		opt          map[string]string
		scan         func(st *sqlitescan.Stmt, out *rows)
	}
	jobs := []job{{
		table: "CUPTI_ACTIVITY_KIND_KERNEL",
		need:  []string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid"},
		opt:   map[string]string{"demangledName": "NULL", "shortName": "NULL"},
		scan: func(st *sqlitescan.Stmt, out *rows) {
			name := r.strs[st.Int64(6)]
			if name == 0 {
				name = r.strs[st.Int64(7)]
			}
			start, pid := st.Int64(0), pidOf(st.Int64(5))
			grow(out.gpu, pid, trace.GPUOp{
				Start: start, End: max(st.Int64(1), start), Device: int32(st.Int64(2)), Stream: int32(st.Int64(3)),
				Corr: st.Int64(4), Process: pid, Name: name, Kind: trace.Kernel,
			}, out.hint)
		},
	}, {
		table: "CUPTI_ACTIVITY_KIND_MEMCPY",
		need:  []string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"},
		// Sorted: copyKind (7), dstKind (8), srcKind (9).
		opt: map[string]string{"copyKind": "0", "srcKind": "7", "dstKind": "7"},
		scan: func(st *sqlitescan.Stmt, out *rows) {
			start, pid := st.Int64(0), pidOf(st.Int64(5))
			grow(out.gpu, pid, trace.GPUOp{
				Start: start, End: max(st.Int64(1), start), Device: int32(st.Int64(2)), Stream: int32(st.Int64(3)),
				Corr: st.Int64(4), Process: pid, Bytes: st.Int64(6), Name: memcpyName, Kind: trace.Memcpy,
				Copy: copyKinds[st.Int64(7)], Src: memKind(st.Int64(9)), Dst: memKind(st.Int64(8)),
			}, out.hint)
		},
	}, {
		table: "CUPTI_ACTIVITY_KIND_MEMSET",
		need:  []string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"},
		opt:   map[string]string{"memKind": "7"},
		scan: func(st *sqlitescan.Stmt, out *rows) {
			start, pid := st.Int64(0), pidOf(st.Int64(5))
			grow(out.gpu, pid, trace.GPUOp{
				Start: start, End: max(st.Int64(1), start), Device: int32(st.Int64(2)), Stream: int32(st.Int64(3)),
				Corr: st.Int64(4), Process: pid, Bytes: st.Int64(6), Name: memsetName, Kind: trace.Memset,
				Dst: memKind(st.Int64(7)),
			}, out.hint)
		},
	}, {
		table: "CUPTI_ACTIVITY_KIND_RUNTIME",
		need:  []string{"start", "end", "globalTid", "correlationId", "nameId"},
		scan: func(st *sqlitescan.Stmt, out *rows) {
			start, g := st.Int64(0), st.Int64(2)
			// The raw name; version suffixes are stripped once per name later.
			grow(out.api, pidOf(g), trace.APICall{
				Start: start, End: max(st.Int64(1), start), Thread: tidOf(g), Corr: st.Int64(3), Process: pidOf(g), Name: r.strs[st.Int64(4)],
			}, out.hint)
		},
	}, {
		// 59 push/pop, 60 start/end, 70/71 their NVTXT (imported) forms.
		table: "NVTX_EVENTS",
		need:  []string{"start", "end", "globalTid", "text"},
		opt:   map[string]string{"textId": "NULL"},
		where: `eventType IN (59, 60, 70, 71) AND "end" IS NOT NULL`,
		scan: func(st *sqlitescan.Stmt, out *rows) {
			var name trace.Name
			if text := st.Bytes(3); text != nil {
				name = out.names.Intern(text)
			} else if !st.Null(4) {
				name = out.names.InternString(r.names.String(r.strs[st.Int64(4)]))
			}
			start, g := st.Int64(0), st.Int64(2)
			grow(out.ranges, pidOf(g), trace.Range{Start: start, End: max(st.Int64(1), start), Thread: tidOf(g), Process: pidOf(g), Name: name}, out.hint)
		},
	}}
	// Large tables are read in rowid ranges of about a million rows, each on
	// its own connection, so that all cores work on the biggest table too.
	type task struct {
		job  job
		q    string
		hint int
	}
	var tasks []task
	for _, j := range jobs {
		q, err := r.selectSQL(j.table, j.need, j.opt, j.where)
		if err != nil {
			return err
		}
		if q == "" {
			continue
		}
		n := r.rowHint(j.table)
		parts := min(max(1, n/(1<<20)), 16)
		cond := " WHERE "
		if j.where != "" {
			cond = " AND "
		}
		for k := range parts {
			qk := q
			if parts > 1 {
				lo, hi := int64(n)*int64(k)/int64(parts), int64(n)*int64(k+1)/int64(parts)
				if k == parts-1 {
					qk += fmt.Sprintf("%srowid > %d", cond, lo)
				} else {
					qk += fmt.Sprintf("%srowid > %d AND rowid <= %d", cond, lo, hi)
				}
			}
			tasks = append(tasks, task{j, qk, n / parts})
		}
	}
	results := make([]rows, len(tasks))
	errs := make([]error, len(tasks))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, t := range tasks {
		results[i] = rows{
			gpu: map[int32][]trace.GPUOp{}, api: map[int32][]trace.APICall{}, ranges: map[int32][]trace.Range{},
			names: trace.NewStrings(), hint: t.hint,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = r.scanTable(t.q, func(st *sqlitescan.Stmt) { t.job.scan(st, &results[i]) })
			if errs[i] != nil {
				errs[i] = fmt.Errorf("read %s: %w", t.job.table, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	stripped := map[trace.Name]trace.Name{}
	for _, res := range results {
		for pid, gpu := range res.gpu {
			p := r.proc(pid)
			if p.GPU == nil {
				p.GPU = gpu
			} else {
				p.GPU = append(p.GPU, gpu...)
			}
		}
		for pid, api := range res.api {
			for i := range api {
				s, ok := stripped[api[i].Name]
				if !ok {
					s = r.names.InternString(trace.StripAPIVersion(r.names.String(api[i].Name)))
					stripped[api[i].Name] = s
				}
				api[i].Name = s
			}
			p := r.proc(pid)
			if p.API == nil {
				p.API = api
			} else {
				p.API = append(p.API, api...)
			}
		}
		if len(res.ranges) > 0 {
			remap := make([]trace.Name, res.names.Len())
			for i := range remap {
				remap[i] = r.names.InternString(res.names.String(trace.Name(i)))
			}
			for pid, rgs := range res.ranges {
				for i := range rgs {
					rgs[i].Name = remap[rgs[i].Name]
				}
				p := r.proc(pid)
				if p.Ranges == nil {
					p.Ranges = rgs
				} else {
					p.Ranges = append(p.Ranges, rgs...)
				}
			}
		}
	}
	return r.ctx.Err()
}

// rowHint estimates a table's row count from its largest rowid, which
// SQLite finds without a scan.
func (r *reader) rowHint(table string) int {
	var n sql.NullInt64
	if r.db.QueryRowContext(r.ctx, `SELECT max(rowid) FROM `+table).Scan(&n) != nil || !n.Valid {
		return 0
	}
	return int(min(n.Int64, 1<<26))
}

// scanTable runs query on a connection of its own and calls row for each row.
func (r *reader) scanTable(query string, row func(*sqlitescan.Stmt)) error {
	db, err := sqlitescan.Open(r.path)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := db.Query(query)
	if err != nil {
		return err
	}
	defer st.Close()
	for n := 0; ; n++ {
		ok, err := st.Next()
		if err != nil || !ok {
			return err
		}
		if n%65536 == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		row(st)
	}
}

func memKind(id int64) trace.MemKind {
	if k, ok := memKinds[id]; ok {
		return k
	}
	return trace.MemUnknown
}

// devices reads TARGET_INFO_GPU and maps each process's CUDA device ordinals
// to it (through TARGET_INFO_CUDA_DEVICE where the export has it).
func (r *reader) devices(pid int32, used map[int32]bool) []trace.Device {
	type gpu struct {
		name     string
		mem, sms int64
	}
	gpus := map[int64]gpu{}
	if r.tables["TARGET_INFO_GPU"] {
		rows, err := r.db.QueryContext(r.ctx, `SELECT id, name, totalMemory, smCount FROM TARGET_INFO_GPU`)
		if err == nil {
			for rows.Next() {
				var id int64
				var name sql.NullString
				var mem, sms sql.NullInt64
				if rows.Scan(&id, &name, &mem, &sms) == nil {
					gpus[id] = gpu{name.String, mem.Int64, sms.Int64}
				}
			}
			rows.Close()
		}
	}
	toGPU := map[int64]int64{}
	if r.tables["TARGET_INFO_CUDA_DEVICE"] {
		rows, err := r.db.QueryContext(r.ctx, `SELECT cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE WHERE pid = ?`, pid)
		if err == nil {
			for rows.Next() {
				var c, g int64
				if rows.Scan(&c, &g) == nil {
					toGPU[c] = g
				}
			}
			rows.Close()
		}
	}
	var out []trace.Device
	for d := range used {
		g, ok := toGPU[int64(d)]
		if !ok {
			g = int64(d)
		}
		info, ok := gpus[g]
		dev := trace.Device{ID: int(d), Name: info.name, Memory: info.mem, SMs: int(info.sms)}
		if !ok {
			dev.Name = "unknown (the export has no TARGET_INFO_GPU)"
		}
		out = append(out, dev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// profiles picks the processes that are ranks: those that ran GPU work, or,
// in a profile without any, those with host ranges (a CPU-only capture).
func (r *reader) profiles() ([]*trace.Profile, error) {
	pids := make([]int32, 0, len(r.procs))
	for pid := range r.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	var gpu, host []*trace.Profile
	for _, pid := range pids {
		p := r.procs[pid]
		switch {
		case len(p.GPU) > 0:
			gpu = append(gpu, p)
		case len(p.Ranges) > 0 || len(p.API) > 0:
			host = append(host, p)
		}
	}
	out := gpu
	if len(out) == 0 {
		out = host
		if len(out) > 1 {
			// Forked workers (DataLoader) have ranges too; the process with
			// the most ranges is the trainer.
			sort.SliceStable(out, func(i, j int) bool { return len(out[i].Ranges) > len(out[j].Ranges) })
			out = out[:1]
		}
	}
	if len(out) == 0 {
		p := trace.New(r.path, trace.FormatNsys)
		p.Names, p.Variant = r.names, r.variant
		p.Warnf("export holds no CUDA activity, CUDA API calls or NVTX ranges")
		return []*trace.Profile{p}, nil
	}
	var wg sync.WaitGroup
	for _, p := range out {
		used := map[int32]bool{}
		for i := range p.GPU {
			used[p.GPU[i].Device] = true
		}
		p.Devices = r.devices(int32(p.Process), used)
		if len(out) > 1 {
			p.Warnf("export holds %d processes with GPU work; each is reported as a rank (pid %d)", len(out), p.Process)
		}
		wg.Go(p.Sort)
	}
	wg.Wait()
	return out, nil
}
