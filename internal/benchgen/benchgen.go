// Package benchgen makes large, realistic inputs for benchmarks by
// replicating a real fixture's steps in time: every copy is shifted past the
// previous one and gets fresh correlation ids and step numbers, so the
// result is one long, consistent trace.
package benchgen

import (
	"bufio"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	_ "modernc.org/sqlite"
)

var (
	tsRE   = regexp.MustCompile(`"ts": ?(-?\d+)(\.\d+)?`)
	durRE  = regexp.MustCompile(`"dur": ?(\d+(?:\.\d+)?)`)
	corrRE = regexp.MustCompile(`"(correlation|id)": ?(\d+)`)
	stepRE = regexp.MustCompile(`ProfilerStep#(\d+)`)
)

// Kineto writes a trace made of copies of the Kineto fixture at src to w
// and returns the number of events written.
func Kineto(w io.Writer, src string, copies int) (int, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(src, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return 0, err
		}
		r = zr
	}
	var doc map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return 0, err
	}
	var events []json.RawMessage
	if err := json.Unmarshal(doc["traceEvents"], &events); err != nil {
		return 0, err
	}
	// The span of the trace in µs, the largest correlation id, the step count.
	var lo, hi, maxCorr, steps int64 = 1 << 62, 0, 0, 0
	for _, e := range events {
		if m := tsRE.FindSubmatch(e); m != nil {
			ts, _ := strconv.ParseInt(string(m[1]), 10, 64)
			lo = min(lo, ts)
			end := ts
			if d := durRE.FindSubmatch(e); d != nil {
				df, _ := strconv.ParseFloat(string(d[1]), 64)
				end += int64(df) + 1
			}
			hi = max(hi, end)
		}
		for _, m := range corrRE.FindAllSubmatch(e, -1) {
			c, _ := strconv.ParseInt(string(m[2]), 10, 64)
			maxCorr = max(maxCorr, c)
		}
		if stepRE.Match(e) && strings.Contains(string(e), `"ph": "X"`) {
			steps++
		}
	}
	period := hi - lo + 1000
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString("{\n")
	for k, v := range doc {
		if k == "traceEvents" {
			continue
		}
		fmt.Fprintf(bw, "  %q: %s,\n", k, v)
	}
	bw.WriteString("  \"traceEvents\": [\n")
	n := 0
	for c := range int64(copies) {
		for _, e := range events {
			if n > 0 {
				bw.WriteString(",\n")
			}
			n++
			if c == 0 {
				bw.Write(e)
				continue
			}
			e = tsRE.ReplaceAllFunc(e, func(m []byte) []byte {
				sm := tsRE.FindSubmatch(m)
				ts, _ := strconv.ParseInt(string(sm[1]), 10, 64)
				return []byte(`"ts": ` + strconv.FormatInt(ts+c*period, 10) + string(sm[2]))
			})
			e = corrRE.ReplaceAllFunc(e, func(m []byte) []byte {
				sm := corrRE.FindSubmatch(m)
				v, _ := strconv.ParseInt(string(sm[2]), 10, 64)
				return []byte(`"` + string(sm[1]) + `": ` + strconv.FormatInt(v+c*(maxCorr+1), 10))
			})
			e = stepRE.ReplaceAllFunc(e, func(m []byte) []byte {
				v, _ := strconv.ParseInt(string(m[len("ProfilerStep#"):]), 10, 64)
				return []byte("ProfilerStep#" + strconv.FormatInt(v+c*steps, 10))
			})
			bw.Write(e)
		}
	}
	bw.WriteString("\n  ]\n}\n")
	return n, bw.Flush()
}

// Nsys writes an SQLite export at dst made of copies of the nsys export
// src: kernels, memcpys, memsets, runtime calls and NVTX ranges are
// replicated with shifted times and fresh correlation ids.
func Nsys(dst, src string, copies int) error {
	os.Remove(dst)
	db, err := sql.Open("sqlite", dst)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string, args ...any) error {
		if _, err := db.Exec(q, args...); err != nil {
			return fmt.Errorf("%s: %w", q[:min(len(q), 80)], err)
		}
		return nil
	}
	if err := exec(`PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF`); err != nil {
		return err
	}
	if err := exec(`ATTACH DATABASE ? AS src`, "file:"+src+"?mode=ro&immutable=1"); err != nil {
		return err
	}
	rows, err := db.Query(`SELECT name, sql FROM src.sqlite_master WHERE type='table'`)
	if err != nil {
		return err
	}
	type table struct{ name, sql string }
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.sql); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	var lo, hi int64
	if err := db.QueryRow(`SELECT MIN(start), MAX("end") FROM src.CUPTI_ACTIVITY_KIND_RUNTIME`).Scan(&lo, &hi); err != nil {
		return err
	}
	period := hi - lo + 1_000_000
	replicated := map[string]bool{
		"CUPTI_ACTIVITY_KIND_KERNEL": true, "CUPTI_ACTIVITY_KIND_MEMCPY": true, "CUPTI_ACTIVITY_KIND_MEMSET": true,
		"CUPTI_ACTIVITY_KIND_RUNTIME": true, "NVTX_EVENTS": true,
	}
	for _, t := range tables {
		if err := exec(t.sql); err != nil {
			return err
		}
		if !replicated[t.name] {
			if err := exec(`INSERT INTO main.` + t.name + ` SELECT * FROM src.` + t.name); err != nil {
				return err
			}
			continue
		}
		cols, err := db.Query(`SELECT name FROM pragma_table_info(?)`, t.name)
		if err != nil {
			return err
		}
		var names, sel []string
		for cols.Next() {
			var c string
			cols.Scan(&c)
			names = append(names, `"`+c+`"`)
			switch c {
			case "start", "end":
				sel = append(sel, `"`+c+`" + ?1`)
			case "correlationId":
				sel = append(sel, `correlationId + ?2`)
			default:
				sel = append(sel, `"`+c+`"`)
			}
		}
		cols.Close()
		q := `INSERT INTO main.` + t.name + ` (` + strings.Join(names, ",") + `) SELECT ` + strings.Join(sel, ",") + ` FROM src.` + t.name
		for c := range int64(copies) {
			if err := exec(q, c*period, c*10_000_000); err != nil {
				return err
			}
		}
	}
	return exec(`DETACH DATABASE src`)
}
