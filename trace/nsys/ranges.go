package nsys

import (
	"fmt"

	"github.com/gpugate/gpugate/internal/sqlitescan"
	"github.com/gpugate/gpugate/trace"
)

// NVTX event types that are ranges: 59 push/pop, 60 start/end, 70/71 their
// NVTXT (imported) forms.
const rangeTypes = "eventType IN (59, 60, 70, 71)"

// rangeTask reads one rowid range of NVTX_EVENTS.
type rangeTask struct {
	query  string
	leaves []sqlitescan.Leaf // direct read of these pages instead of query
	pos    []int
	size   int
	kept   []trace.Range
	strs   *trace.Strings // names of the kept ranges, local to the task
	textID map[int64]textName
	bad    counts
	ext    map[int32]*extremes
}

type textName struct {
	name  trace.Name // in the task's strs
	match bool
}

// extremes are a process's earliest start and latest end over all its
// ranges, with the rowid of a range that has each (the lowest).
type extremes struct {
	first, last       int64
	firstRow, lastRow int64
}

func (e *extremes) add(start, end, rowid int64) {
	if start < e.first || start == e.first && rowid < e.firstRow {
		e.first, e.firstRow = start, rowid
	}
	if end > e.last || end == e.last && rowid < e.lastRow {
		e.last, e.lastRow = end, rowid
	}
}

func (e *extremes) merge(o *extremes) {
	if o.first < e.first || o.first == e.first && o.firstRow < e.firstRow {
		e.first, e.firstRow = o.first, o.firstRow
	}
	if o.last > e.last || o.last == e.last && o.lastRow < e.lastRow {
		e.last, e.lastRow = o.last, o.lastRow
	}
}

// readRanges reads the NVTX ranges, all of them or, with
// Options.RangeNames, those that analysis can use (see keep.go).
func (r *reader) readRanges(s *scanned) ([]trace.Range, counts, error) {
	const table = "NVTX_EVENTS"
	q, pos, err := r.selectSQL(table, []string{"start", "end", "globalTid", "text", "eventType"}, []string{"textId"})
	if err != nil || q == "" {
		return nil, counts{}, err
	}
	hasRowid := query(r.db, `SELECT rowid FROM `+table+` LIMIT 1`, func(*sqlitescan.Stmt) error { return nil }) == nil
	// s.api may be being sorted: only s.keeper, made from it before, is read.
	keepAll := s.keeper == nil || !hasRowid
	var k *keeper
	if !keepAll {
		k = s.keeper
		q = q[:len(q)-len(" FROM "+table)] + ", rowid FROM " + table
	}
	ps, n := r.parts(table)
	var groups [][]sqlitescan.Leaf
	if pos != nil && n > 0 {
		if g, rps := r.rawParts(table, int64(n)); g != nil {
			groups, ps = g, rps
		}
	}
	tasks := make([]*rangeTask, len(ps))
	fns := make([]func(db *sqlitescan.DB) error, len(ps))
	for i, p := range ps {
		t := &rangeTask{query: q + p.where(rangeTypes), strs: trace.NewStrings(), textID: map[int64]textName{}, ext: map[int32]*extremes{}}
		if groups != nil {
			t.leaves, t.pos = groups[i], pos
		}
		if n > 0 && keepAll {
			t.kept = make([]trace.Range, 0, p.hi-p.lo)
		}
		tasks[i] = t
		fns[i] = func(db *sqlitescan.DB) error {
			if err := r.rangeTask(db, t, k); err != nil {
				return fmt.Errorf("read %s: %w", table, err)
			}
			return nil
		}
	}
	if err := r.runTasks(fns); err != nil {
		return nil, counts{}, err
	}
	var bad counts
	total := 0
	for _, t := range tasks {
		bad.add(t.bad)
		total += len(t.kept)
	}
	out := make([]trace.Range, 0, total)
	ext := map[int32]*extremes{}
	for _, t := range tasks {
		remap := make([]trace.Name, t.strs.Len())
		for i := range remap {
			remap[i] = r.names.InternString(t.strs.String(trace.Name(i)))
		}
		for _, rg := range t.kept {
			rg.Name = remap[rg.Name]
			out = append(out, rg)
		}
		t.kept = nil
		for pid, e := range t.ext {
			if ext[pid] == nil {
				ext[pid] = e
			} else {
				ext[pid].merge(e)
			}
		}
	}
	if !keepAll {
		// The earliest and latest range of each process bound the
		// whole-profile window: add them if nothing else kept them.
		has := map[int32]*extremes{}
		for _, rg := range out {
			e := has[rg.Process]
			if e == nil {
				e = &extremes{first: rg.Start, last: rg.End}
				has[rg.Process] = e
			}
			e.first, e.last = min(e.first, rg.Start), max(e.last, rg.End)
		}
		for pid, e := range ext {
			h := has[pid]
			rows := []int64{}
			if h == nil || h.first > e.first {
				rows = append(rows, e.firstRow)
			}
			if h == nil || h.last < e.last {
				rows = append(rows, e.lastRow)
			}
			for i, row := range rows {
				if i == 1 && row == rows[0] {
					break
				}
				rg, err := r.rangeAt(row)
				if err != nil {
					return nil, bad, err
				}
				out = append(out, rg)
			}
		}
	}
	sortRanges(out)
	return out, bad, nil
}

// rangeTask reads one part of NVTX_EVENTS on its own connection.
func (r *reader) rangeTask(db *sqlitescan.DB, t *rangeTask, k *keeper) error {
	var lookup *sqlitescan.Stmt // StringIds by id, for registered strings
	defer func() {
		if lookup != nil {
			lookup.Close()
		}
	}()
	var lastPid int32 = -1
	lastThread := int64(-1)
	var e *extremes
	var syncs []int64
	var gaps []span
	each := func(st row, rowid int64) error {
		if st.Type(4) != sqlitescan.Integer {
			return nil
		}
		switch st.Int64(4) {
		case 59, 60, 70, 71: // rangeTypes
		default:
			return nil
		}
		start, end, ok, err := times(st, "NVTX_EVENTS", &t.bad)
		if !ok {
			return err
		}
		g := st.Int64(2)
		pid, tid := pidOf(g), tidOf(g)
		keep := k == nil
		if k != nil {
			if pid != lastPid || e == nil {
				if e = t.ext[pid]; e == nil {
					e = &extremes{first: start, last: end, firstRow: rowid, lastRow: rowid}
					t.ext[pid] = e
				}
				gaps = k.gaps[pid]
				lastPid, lastThread = pid, -1
			}
			if tid != lastThread {
				syncs, lastThread = k.syncs[threadKey(pid, tid)], tid
			}
			e.add(start, end, rowid)
			keep = byTime(syncs, gaps, start, end)
		}
		var name trace.Name
		if text := st.Bytes(3); text != nil {
			if !keep {
				keep = k.byName(text)
			}
			if !keep {
				return nil
			}
			name = t.strs.Intern(text)
		} else if st.Type(5) == sqlitescan.Integer {
			id := st.Int64(5)
			tn, seen := t.textID[id]
			if !seen {
				if lookup == nil {
					if lookup, err = db.Query(`SELECT value FROM StringIds WHERE id = ?1`); err != nil {
						return err
					}
				}
				s, err := lookupString(lookup, id)
				if err != nil {
					return err
				}
				tn = textName{name: t.strs.InternString(s), match: k == nil || k.byName([]byte(s))}
				t.textID[id] = tn
			}
			keep = keep || tn.match
			name = tn.name
		}
		if keep {
			t.kept = append(t.kept, trace.Range{Start: start, End: end, Thread: tid, Process: pid, Name: name})
		}
		return nil
	}
	if t.leaves != nil {
		n := 0
		return r.file.Scan(t.leaves, t.pos, func(rec *sqlitescan.Record) error {
			if n++; n&0xFFFF == 0 && r.ctx.Err() != nil {
				return r.ctx.Err()
			}
			return each(rec, rec.Rowid)
		})
	}
	st, err := db.Query(t.query)
	if err != nil {
		return err
	}
	defer st.Close()
	return r.each(st, func() error {
		var rowid int64
		if k != nil {
			rowid = st.Int64(6)
		}
		return each(st, rowid)
	})
}

func lookupString(st *sqlitescan.Stmt, id int64) (string, error) {
	st.Reset()
	if err := st.BindInt64(1, id); err != nil {
		return "", err
	}
	ok, err := st.Next()
	if err != nil || !ok {
		return "", err
	}
	return st.String(0), nil
}

// rangeAt reads one NVTX range by rowid.
func (r *reader) rangeAt(rowid int64) (trace.Range, error) {
	var rg trace.Range
	var c counts
	err := query(r.db, fmt.Sprintf(`SELECT start, "end", globalTid, text, %s FROM NVTX_EVENTS WHERE rowid = %d`, r.textIDColumn(), rowid), func(st *sqlitescan.Stmt) error {
		start, end, _, err := times(st, "NVTX_EVENTS", &c)
		if err != nil {
			return err
		}
		g := st.Int64(2)
		rg = trace.Range{Start: start, End: end, Thread: tidOf(g), Process: pidOf(g)}
		name := st.String(3)
		if st.Type(3) == sqlitescan.Null && st.Type(4) == sqlitescan.Integer {
			strs, err := r.strings([]int64{st.Int64(4)})
			if err != nil {
				return err
			}
			name = strs[st.Int64(4)]
		}
		rg.Name = r.names.InternString(name)
		return nil
	})
	return rg, err
}

func (r *reader) textIDColumn() string {
	if cols, err := r.columns("NVTX_EVENTS"); err == nil {
		if _, ok := cols["textId"]; ok {
			return "textId"
		}
	}
	return "NULL"
}
