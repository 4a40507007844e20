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
	"sort"
	"strings"

	_ "modernc.org/sqlite" // the driver, pure Go

	"gpugate/trace"
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
	steps := []func() error{r.kernels, r.memcpys, r.memsets, r.runtime, r.nvtx}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
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

// query runs a SELECT over table when it exists and has every column in
// need; optional columns missing from this version are replaced by a default
// expression. scan is called with one row's values.
func (r *reader) query(table string, need []string, opt map[string]string, where string, scan func(v []int64, null []bool) error) error {
	if !r.tables[table] {
		return nil
	}
	cols := r.columns(table)
	sel := make([]string, 0, len(need)+len(opt))
	for _, c := range need {
		if !cols[c] {
			return fmt.Errorf("table %s has no column %s: unsupported nsys export schema", table, c)
		}
		sel = append(sel, `"`+c+`"`)
	}
	keys := make([]string, 0, len(opt))
	for k := range opt {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// opt maps a column to the expression used when it is absent.
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
	rows, err := r.db.QueryContext(r.ctx, q)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	vals := make([]sql.NullInt64, len(sel))
	ptrs := make([]any, len(sel))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	v := make([]int64, len(sel))
	null := make([]bool, len(sel))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		for i := range vals {
			v[i], null[i] = vals[i].Int64, !vals[i].Valid
		}
		if err := scan(v, null); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	return nil
}

// name returns the interned string for a StringIds id.
func (r *reader) name(id int64, null bool) trace.Name {
	if null {
		return 0
	}
	return r.strs[id]
}

func (r *reader) kernels() error {
	// Columns in the order of need, then optional ones sorted by name:
	// demangledName, shortName.
	return r.query("CUPTI_ACTIVITY_KIND_KERNEL",
		[]string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid"},
		map[string]string{"demangledName": "NULL", "shortName": "NULL"}, "",
		func(v []int64, null []bool) error {
			name := r.name(v[6], null[6])
			if name == 0 {
				name = r.name(v[7], null[7])
			}
			pid := pidOf(v[5])
			p := r.proc(pid)
			p.GPU = append(p.GPU, trace.GPUOp{
				Start: v[0], End: max(v[1], v[0]), Device: int32(v[2]), Stream: int32(v[3]),
				Corr: v[4], Process: pid, Name: name, Kind: trace.Kernel,
			})
			return nil
		})
}

func (r *reader) memcpys() error {
	// Optional columns sorted: copyKind, dstKind, srcKind.
	name := r.names.InternString("[CUDA memcpy]")
	return r.query("CUPTI_ACTIVITY_KIND_MEMCPY",
		[]string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"},
		map[string]string{"copyKind": "0", "srcKind": "7", "dstKind": "7"}, "",
		func(v []int64, null []bool) error {
			pid := pidOf(v[5])
			p := r.proc(pid)
			src, ok := memKinds[v[9]]
			if !ok {
				src = trace.MemUnknown
			}
			dst, ok := memKinds[v[8]]
			if !ok {
				dst = trace.MemUnknown
			}
			p.GPU = append(p.GPU, trace.GPUOp{
				Start: v[0], End: max(v[1], v[0]), Device: int32(v[2]), Stream: int32(v[3]),
				Corr: v[4], Process: pid, Bytes: v[6], Name: name, Kind: trace.Memcpy,
				Copy: copyKinds[v[7]], Src: src, Dst: dst,
			})
			return nil
		})
}

func (r *reader) memsets() error {
	name := r.names.InternString("[CUDA memset]")
	return r.query("CUPTI_ACTIVITY_KIND_MEMSET",
		[]string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"},
		map[string]string{"memKind": "7"}, "",
		func(v []int64, null []bool) error {
			pid := pidOf(v[5])
			p := r.proc(pid)
			dst, ok := memKinds[v[7]]
			if !ok {
				dst = trace.MemUnknown
			}
			p.GPU = append(p.GPU, trace.GPUOp{
				Start: v[0], End: max(v[1], v[0]), Device: int32(v[2]), Stream: int32(v[3]),
				Corr: v[4], Process: pid, Bytes: v[6], Name: name, Kind: trace.Memset, Dst: dst,
			})
			return nil
		})
}

func (r *reader) runtime() error {
	stripped := map[trace.Name]trace.Name{}
	return r.query("CUPTI_ACTIVITY_KIND_RUNTIME",
		[]string{"start", "end", "globalTid", "correlationId", "nameId"}, nil, "",
		func(v []int64, null []bool) error {
			n := r.name(v[4], null[4])
			s, ok := stripped[n]
			if !ok {
				s = r.names.InternString(trace.StripAPIVersion(r.names.String(n)))
				stripped[n] = s
			}
			pid := pidOf(v[2])
			p := r.proc(pid)
			p.API = append(p.API, trace.APICall{
				Start: v[0], End: max(v[1], v[0]), Thread: tidOf(v[2]), Corr: v[3], Process: pid, Name: s,
			})
			return nil
		})
}

func (r *reader) nvtx() error {
	if !r.tables["NVTX_EVENTS"] {
		return nil
	}
	cols := r.columns("NVTX_EVENTS")
	textID := "NULL"
	if cols["textId"] {
		textID = "textId"
	}
	// 59 push/pop, 60 start/end, 70/71 their NVTXT (imported) forms.
	q := `SELECT start, "end", globalTid, text, ` + textID + ` FROM NVTX_EVENTS
		WHERE eventType IN (59, 60, 70, 71) AND "end" IS NOT NULL`
	rows, err := r.db.QueryContext(r.ctx, q)
	if err != nil {
		return fmt.Errorf("read NVTX_EVENTS: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var start, end, gtid int64
		var text sql.RawBytes
		var tid sql.NullInt64
		if err := rows.Scan(&start, &end, &gtid, &text, &tid); err != nil {
			return fmt.Errorf("read NVTX_EVENTS: %w", err)
		}
		var name trace.Name
		switch {
		case text != nil:
			name = r.names.Intern(text)
		case tid.Valid:
			name = r.strs[tid.Int64]
		}
		pid := pidOf(gtid)
		p := r.proc(pid)
		p.Ranges = append(p.Ranges, trace.Range{Start: start, End: max(end, start), Thread: tidOf(gtid), Process: pid, Name: name})
	}
	return rows.Err()
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
	for _, p := range out {
		used := map[int32]bool{}
		for i := range p.GPU {
			used[p.GPU[i].Device] = true
		}
		p.Devices = r.devices(int32(p.Process), used)
		if len(out) > 1 {
			p.Warnf("export holds %d processes with GPU work; each is reported as a rank (pid %d)", len(out), p.Process)
		}
		p.Sort()
	}
	return out, nil
}
