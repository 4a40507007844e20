// Package nsys reads Nsight Systems SQLite exports (nsys export --type
// sqlite) into trace.Profiles, one per profiled process that ran GPU work (a
// process is a rank).
//
// Tables and columns vary between nsys versions (the metadata table was
// renamed, columns were inserted mid-table, exports are lazy so empty tables
// are missing), so the reader detects both at run time and names every
// column it selects; copy and memory kinds come from the export's own ENUM
// tables where it has them. It was checked on exports of nsys 2022.1
// (schema 2.9.1), 2022.4 (3.0.0) and 2026.2 (3.25.0); see
// ../shared/research/nsys-sqlite-schema.md.
//
// The export is input from code under review: the reader opens the path as
// a file (never as an SQLite URI), read-only and immutable, refuses a
// write-ahead log or hot journal beside it rather than ignore it, refuses
// views and virtual tables in place of the tables it reads, and checks that
// times are INTEGER nanoseconds in range.
package nsys

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/internal/sqlitescan"
	"github.com/gpugate/gpugate/trace"
)

// IsSQLite reports whether the file starts with the SQLite header.
func IsSQLite(header []byte) bool {
	return bytes.HasPrefix(header, []byte("SQLite format 3\x00"))
}

// Options select what the reader keeps in memory.
type Options struct {
	// RangeNames, when not nil, keeps only the NVTX ranges that analysis
	// can use: those whose name matches one of these patterns (steps,
	// data-loader ranges, host-sync stand-ins: pass every pattern that
	// analysis will match ranges with), those that enclose the start of a
	// blocking CUDA call on their thread, those that overlap one of their
	// process's longest GPU idle gaps, and each process's earliest-starting
	// and latest-ending range (they bound the whole-profile window). Exports without CUDA API calls keep every range.
	// Nil keeps every range.
	RangeNames []*regexp.Regexp
}

// ReadFile reads an nsys SQLite export, keeping every NVTX range.
func ReadFile(ctx context.Context, path string) ([]*trace.Profile, error) {
	return ReadFileOptions(ctx, path, Options{})
}

// ReadFileOptions reads an nsys SQLite export.
func ReadFileOptions(ctx context.Context, path string, opt Options) ([]*trace.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 16)
	n, _ := io.ReadFull(f, hdr)
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, err
	}
	if !IsSQLite(hdr[:n]) {
		return nil, &trace.SyntaxError{File: path, Msg: "not an SQLite database"}
	}
	if side := sqlitescan.Sidecars(path); len(side) > 0 {
		return nil, &trace.SyntaxError{File: path, Msg: fmt.Sprintf(
			"%s lies beside the export and holds changes the file itself lacks; gpugate opens exports read-only and does not apply them: checkpoint it with the tool that wrote it (sqlite3 FILE 'PRAGMA wal_checkpoint(TRUNCATE)') or export the report again",
			strings.Join(side, " and "))}
	}
	db, err := sqlitescan.Open(path)
	if err != nil {
		return nil, &trace.SyntaxError{File: path, Msg: err.Error()}
	}
	defer db.Close()
	r := &reader{db: db, path: path, ctx: ctx, opt: opt, size: st.Size()}
	if directReads {
		if f, err := sqlitescan.OpenFile(path); err == nil {
			r.file = f
			defer f.Close()
		}
	}
	profiles, err := r.read()
	if r.records > 1<<20 {
		// A large read leaves tens of MB of scratch behind (the API array
		// sized for every call, the tasks' buffers). Collecting it now, while
		// the heap holds only the profile (no pointers, so marking is
		// cheap), keeps the heap that the caller's analysis grows to at
		// twice the profile rather than twice the profile and the
		// scratch: on the 1 M-kernel benchmark, 310 MB peak RSS instead
		// of 368 MB.
		runtime.GC()
		lowerGCPercent()
	}
	if err != nil {
		var se *trace.SyntaxError
		if errors.As(err, &se) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &trace.SyntaxError{File: path, Msg: err.Error()}
	}
	return profiles, nil
}

// largeGCPercent is the GOGC that a large read leaves the process with.
// The heap is then mostly the profile's arrays of GPU ops and API calls,
// which hold no pointers, so a collection costs little however large they
// are; at the default of 100 the heap that analysis grows to is twice the
// profile and what analysis keeps, at 50 one and a half times. On the
// 1 M-kernel benchmark export: peak RSS 353 -> 314 MB, CPU time the same
// within the noise of a loaded machine.
const largeGCPercent = 50

// lowerGCPercent sets GOGC to largeGCPercent unless it is lower already
// (or off: GOGC=off).
func lowerGCPercent() {
	if prev := debug.SetGCPercent(largeGCPercent); prev < largeGCPercent {
		debug.SetGCPercent(prev)
	}
}

// directReads reads the big tables' pages directly (sqlitescan.File);
// tests turn it off to compare with SQLite's reading of the same rows.
var directReads = true

type reader struct {
	ctx  context.Context
	db   *sqlitescan.DB // the main goroutine's connection
	path string
	opt  Options
	size int64

	objects map[string]object // sqlite_master: tables and views by name
	file    *sqlitescan.File  // direct page reads; nil: SQLite reads everything
	variant string
	names   *trace.Strings

	records int // rows read from the big tables

	copyKinds map[int64]trace.CopyKind
	memKinds  map[int64]trace.MemKind

	warnings []string // about the whole export, given to every profile
}

type object struct{ typ, sql string }

// pid and tid of a globalTid/globalPid: <HW:8><VM:8><PID:24><TID:24>.
func pidOf(g int64) int32 { return int32((g >> 24) & 0xFFFFFF) }
func tidOf(g int64) int64 { return g & 0xFFFFFF }

func (r *reader) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

func (r *reader) read() ([]*trace.Profile, error) {
	r.objects = map[string]object{}
	err := query(r.db, `SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')`, func(st *sqlitescan.Stmt) error {
		r.objects[st.String(1)] = object{st.String(0), st.String(2)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	meta := ""
	for _, t := range []string{"META_DATA_EXPORT", "EXPORT_META_DATA"} {
		if ok, err := r.table(t); err != nil {
			return nil, err
		} else if ok {
			meta = t
			break
		}
	}
	if err := r.detectVersion(meta); err != nil {
		return nil, err
	}
	r.names = trace.NewStrings()
	if err := r.enums(); err != nil {
		return nil, err
	}
	s, err := r.scan()
	if err != nil {
		return nil, err
	}
	return r.profiles(s)
}

// activityTables are the tables whose rows the reader turns into a
// profile; an export without metadata is read when it has one of them.
var activityTables = []string{
	"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
	"CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
}

// detectVersion sets r.variant from the export's metadata table (meta,
// "" when it has none) and checks that the file is an nsys export. Every
// export nsys writes has a metadata table and StringIds, but a
// post-processed copy (tables dropped or filtered by a script, as the
// nsys-ai fixtures were cut down) may lack the metadata: the reader
// detects every table and column it uses anyway (TL;DR of the schema
// notes), so such a file is read, with a warning that the version is
// unknown. What is missing is said exactly.
func (r *reader) detectVersion(meta string) error {
	hasStrings, err := r.table("StringIds")
	if err != nil {
		return err
	}
	var activity []string
	for _, t := range activityTables {
		ok, err := r.table(t)
		if err != nil {
			return err
		}
		if ok {
			activity = append(activity, t)
		}
	}
	switch {
	case meta == "" && !hasStrings:
		return errors.New("SQLite database is not an Nsight Systems export: it has neither an export metadata table (META_DATA_EXPORT or EXPORT_META_DATA) nor the StringIds table")
	case !hasStrings:
		return fmt.Errorf("SQLite database has the nsys export metadata table %s but no StringIds table, which holds every name (kernels, API calls, threads): a damaged or filtered export", meta)
	case meta == "" && len(activity) == 0:
		return fmt.Errorf("SQLite database is not a readable Nsight Systems export: it has StringIds but no export metadata table (META_DATA_EXPORT or EXPORT_META_DATA) and none of the tables a profile is made of (%s)", strings.Join(activityTables, ", "))
	case meta == "":
		r.variant = "nsys (version unknown: no export metadata table)"
		r.warnf("the export has no META_DATA_EXPORT or EXPORT_META_DATA table (a post-processed copy?): the nsys version is unknown, and the tables and columns were detected from the schema (%s)", strings.Join(activity, ", "))
		return nil
	}
	version, schema := r.meta(meta)
	r.variant = fmt.Sprintf("nsys %s (schema %s)", version, schema)
	return nil
}

// table reports whether the export has the table name. A view or a
// virtual table in its place is an error: nsys writes neither, and either
// can compute anything at all (or never finish).
func (r *reader) table(name string) (bool, error) {
	o, ok := r.objects[name]
	if !ok {
		return false, nil
	}
	if o.typ != "table" {
		return false, fmt.Errorf("%s is a %s, not a table: not an export written by nsys", name, o.typ)
	}
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(o.sql)), "CREATE VIRTUAL TABLE") {
		return false, fmt.Errorf("%s is a virtual table: not an export written by nsys", name)
	}
	return true, nil
}

// columns returns the columns of a table the reader knows by name (never a
// name taken from the file).
func (r *reader) columns(table string) (map[string]column, error) {
	cols := map[string]column{}
	err := query(r.db, `SELECT cid, name, type, dflt_value IS NULL, pk FROM pragma_table_info('`+table+`')`, func(st *sqlitescan.Stmt) error {
		typ := strings.ToUpper(st.String(2))
		cols[st.String(1)] = column{
			cid: int(st.Int64(0)), typ: typ,
			// Stored in every record as written: not the rowid (an INTEGER
			// PRIMARY KEY), no default for records older than the column.
			plain: st.Int64(3) == 1 && !(st.Int64(4) > 0 && typ == "INTEGER"),
		}
		return nil
	})
	return cols, err
}

// column is a table column as pragma_table_info describes it.
type column struct {
	cid   int
	typ   string
	plain bool
}

func (r *reader) meta(table string) (version, schema string) {
	version, schema = "unknown", "unknown"
	query(r.db, `SELECT name, value FROM `+table+` WHERE name IN ('EXPORT_PRODUCT_VERSION','EXPORT_SCHEMA_VERSION')`, func(st *sqlitescan.Stmt) error {
		switch st.String(0) {
		case "EXPORT_PRODUCT_VERSION":
			version = st.String(1)
		case "EXPORT_SCHEMA_VERSION":
			schema = st.String(1)
		}
		return nil
	})
	return version, schema
}

// query runs q on db and calls row for each row.
func query(db *sqlitescan.DB, q string, row func(*sqlitescan.Stmt) error) error {
	st, err := db.Query(q)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		ok, err := st.Next()
		if err != nil || !ok {
			return err
		}
		if err := row(st); err != nil {
			return err
		}
	}
}

// Copy kinds (ENUM_CUDA_MEMCPY_OPER) and memory kinds (ENUM_CUDA_MEM_KIND)
// as documented for every schema so far: 2.x (nsys ≤ 2021.5, whose exports
// have no ENUM tables and name these enums in column comments), 3.0 (2022.4)
// and 3.x up to 3.28 (2026.4). They are the fallback when the export has
// no ENUM table, or an empty one (2022.4 --lazy=false).
var (
	documentedCopyKinds = map[int64]trace.CopyKind{
		1: trace.HtoD, 2: trace.DtoH, 8: trace.DtoD, 9: trace.HtoH, 10: trace.PtoP,
		11: trace.HtoD, 12: trace.DtoH, 13: trace.DtoD, // unified memory
	}
	documentedMemKinds = map[int64]trace.MemKind{
		0: trace.Pageable, 1: trace.Pinned, 2: trace.DeviceMem, 3: trace.Array,
		4: trace.Managed, 5: trace.DeviceMem, 6: trace.Managed,
	}
)

// enums reads the copy and memory kinds from the export's ENUM tables
// where it has them, by the symbol name of each id
// (CUDA_MEMCPY_KIND_HTOD, CUDA_MEMOPR_MEMORY_KIND_PINNED, ...), and falls
// back to the documented ids otherwise.
func (r *reader) enums() error {
	r.copyKinds, r.memKinds = documentedCopyKinds, documentedMemKinds
	read := func(table string, kind func(symbol string) (uint8, bool)) (map[int64]uint8, error) {
		ok, err := r.table(table)
		if err != nil || !ok {
			return nil, err
		}
		cols, err := r.columns(table)
		if _, ok := cols["id"]; err != nil || !ok {
			return nil, err
		}
		if _, ok := cols["name"]; !ok {
			return nil, nil
		}
		m := map[int64]uint8{}
		var unknown []string
		err = query(r.db, `SELECT id, name FROM `+table, func(st *sqlitescan.Stmt) error {
			if st.Type(0) != sqlitescan.Integer {
				return fmt.Errorf("%s: id %q is not an integer", table, st.String(0))
			}
			if k, ok := kind(strings.ToUpper(st.String(1))); ok {
				m[st.Int64(0)] = k
			} else if len(unknown) < 5 {
				unknown = append(unknown, fmt.Sprintf("%.40q", st.String(1)))
			}
			return nil
		})
		if err != nil || len(m) == 0 {
			return nil, err
		}
		if len(unknown) > 0 {
			r.warnf("%s names kinds gpugate does not know (%s); their ids are read as documented", table, strings.Join(unknown, ", "))
		}
		return m, nil
	}
	copies, err := read("ENUM_CUDA_MEMCPY_OPER", func(s string) (uint8, bool) {
		switch {
		case strings.HasSuffix(s, "HTOD"):
			return uint8(trace.HtoD), true
		case strings.HasSuffix(s, "DTOH"):
			return uint8(trace.DtoH), true
		case strings.HasSuffix(s, "DTOD"):
			return uint8(trace.DtoD), true
		case strings.HasSuffix(s, "HTOH"):
			return uint8(trace.HtoH), true
		case strings.HasSuffix(s, "PTOP"):
			return uint8(trace.PtoP), true
		case strings.HasSuffix(s, "HTOA"), strings.HasSuffix(s, "ATOH"), strings.HasSuffix(s, "ATOA"),
			strings.HasSuffix(s, "ATOD"), strings.HasSuffix(s, "DTOA"), strings.HasSuffix(s, "UNKNOWN"):
			return uint8(trace.CopyOther), true
		}
		return 0, false
	})
	if err != nil {
		return err
	}
	if copies != nil {
		r.copyKinds = maps.Clone(documentedCopyKinds)
		for id, k := range copies {
			r.copyKinds[id] = trace.CopyKind(k)
		}
	}
	mems, err := read("ENUM_CUDA_MEM_KIND", func(s string) (uint8, bool) {
		switch {
		case strings.HasSuffix(s, "PAGEABLE"):
			return uint8(trace.Pageable), true
		case strings.HasSuffix(s, "PINNED"):
			return uint8(trace.Pinned), true
		case strings.HasSuffix(s, "DEVICE"), strings.HasSuffix(s, "DEVICE_STATIC"):
			return uint8(trace.DeviceMem), true
		case strings.HasSuffix(s, "MANAGED"), strings.HasSuffix(s, "MANAGED_STATIC"):
			return uint8(trace.Managed), true
		case strings.HasSuffix(s, "ARRAY"):
			return uint8(trace.Array), true
		case strings.HasSuffix(s, "UNKNOWN"):
			return uint8(trace.MemUnknown), true
		}
		return 0, false
	})
	if err != nil {
		return err
	}
	if mems != nil {
		r.memKinds = maps.Clone(documentedMemKinds)
		for id, k := range mems {
			r.memKinds[id] = trace.MemKind(k)
		}
	}
	return nil
}

// devices reads TARGET_INFO_GPU and maps each process's CUDA device ordinals
// to it (through TARGET_INFO_CUDA_DEVICE where the export has it).
func (r *reader) devices(pid int32, used map[int32]bool) []trace.Device {
	type gpu struct {
		name     string
		mem, sms int64
	}
	gpus := map[int64]gpu{}
	if ok, _ := r.table("TARGET_INFO_GPU"); ok {
		query(r.db, `SELECT id, name, totalMemory, smCount FROM TARGET_INFO_GPU`, func(st *sqlitescan.Stmt) error {
			gpus[st.Int64(0)] = gpu{st.String(1), st.Int64(2), st.Int64(3)}
			return nil
		})
	}
	toGPU := map[int64]int64{}
	if ok, _ := r.table("TARGET_INFO_CUDA_DEVICE"); ok {
		query(r.db, fmt.Sprintf(`SELECT cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE WHERE pid = %d`, pid), func(st *sqlitescan.Stmt) error {
			toGPU[st.Int64(0)] = st.Int64(1)
			return nil
		})
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
	slices.SortFunc(out, func(a, b trace.Device) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// namedDevices returns the CUDA ordinals of the GPUs the export names for a
// process without GPU activity: the process's own from
// TARGET_INFO_CUDA_DEVICE where the export has it (2026.1 and later), else
// every CUDA device of TARGET_INFO_GPU by id (what devices maps an ordinal
// to without that table). An export without TARGET_INFO_GPU (a capture on a machine
// without a GPU) names none.
func (r *reader) namedDevices(pid int32) map[int32]bool {
	used := map[int32]bool{}
	if ok, _ := r.table("TARGET_INFO_CUDA_DEVICE"); ok {
		query(r.db, fmt.Sprintf(`SELECT cudaId FROM TARGET_INFO_CUDA_DEVICE WHERE pid = %d`, pid), func(st *sqlitescan.Stmt) error {
			used[int32(st.Int64(0))] = true
			return nil
		})
		if len(used) > 0 {
			return used
		}
	}
	if ok, _ := r.table("TARGET_INFO_GPU"); ok {
		// The table lists every display adapter: a laptop's export names
		// its Intel iGPU and "Microsoft Basic Render Driver" beside the
		// GeForce, with no SMs. A CUDA device has SMs.
		q := `SELECT id FROM TARGET_INFO_GPU`
		if cols, _ := r.columns("TARGET_INFO_GPU"); hasColumn(cols, "smCount") {
			q += ` WHERE smCount > 0`
		}
		query(r.db, q, func(st *sqlitescan.Stmt) error {
			used[int32(st.Int64(0))] = true
			return nil
		})
	}
	return used
}

func hasColumn(cols map[string]column, name string) bool { _, ok := cols[name]; return ok }

// profiles splits the sorted records by process and picks the processes
// that are ranks: those that ran GPU work, or, in a profile without any,
// those with host ranges (a CPU-only capture).
func (r *reader) profiles(s *scanned) ([]*trace.Profile, error) {
	procs := map[int32]*trace.Profile{}
	proc := func(pid int32) *trace.Profile {
		p := procs[pid]
		if p == nil {
			p = trace.New(r.path, trace.FormatNsys)
			p.Names = r.names
			p.Process = int(pid)
			p.Variant = r.variant
			procs[pid] = p
		}
		return p
	}
	for i := 0; i < len(s.gpu); {
		j := i
		for j < len(s.gpu) && s.gpu[j].Process == s.gpu[i].Process {
			j++
		}
		proc(s.gpu[i].Process).GPU = s.gpu[i:j:j]
		i = j
	}
	for i := 0; i < len(s.api); {
		j := i
		for j < len(s.api) && s.api[j].Process == s.api[i].Process {
			j++
		}
		proc(s.api[i].Process).API = s.api[i:j:j]
		i = j
	}
	for i := 0; i < len(s.ranges); {
		j := i
		for j < len(s.ranges) && s.ranges[j].Process == s.ranges[i].Process {
			j++
		}
		proc(s.ranges[i].Process).Ranges = s.ranges[i:j:j]
		i = j
	}
	for i := 0; i < len(s.syncs); {
		j := i
		for j < len(s.syncs) && s.syncs[j].Process == s.syncs[i].Process {
			j++
		}
		if p := procs[s.syncs[i].Process]; p != nil {
			p.SyncWaits = s.syncs[i:j:j]
		}
		i = j
	}
	if err := r.memory(procs); err != nil { // memory.go
		return nil, err
	}
	pids := make([]int32, 0, len(procs))
	for pid := range procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var gpu, host []*trace.Profile
	for _, pid := range pids {
		p := procs[pid]
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
			slices.SortStableFunc(out, func(a, b *trace.Profile) int { return cmp.Compare(len(b.Ranges), len(a.Ranges)) })
			out = out[:1]
		}
	}
	if len(out) == 0 {
		p := trace.New(r.path, trace.FormatNsys)
		p.Names, p.Variant = r.names, r.variant
		p.Warnings = append(p.Warnings, r.warnings...)
		p.Warnf("export holds no CUDA activity, CUDA API calls or NVTX ranges")
		p.Devices = r.devices(0, r.namedDevices(0))
		return []*trace.Profile{p}, nil
	}
	for _, p := range out {
		used := map[int32]bool{}
		for i := range p.GPU {
			used[p.GPU[i].Device] = true
		}
		if len(used) == 0 {
			// No GPU activity (a CPU-side capture on a GPU machine, lost
			// CUPTI buffers): the GPUs the export names are still the
			// machine's, as Kineto's deviceProperties are.
			used = r.namedDevices(int32(p.Process))
		}
		p.Devices = r.devices(int32(p.Process), used)
		p.Warnings = append(p.Warnings, r.warnings...)
		if len(out) > 1 {
			p.Warnf("export holds %d processes with GPU work; each is reported as a rank (pid %d)", len(out), p.Process)
		}
	}
	return out, nil
}
