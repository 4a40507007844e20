package baseline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The limits of what gpugate baseline import takes (docs/baseline.md):
// an export comes from anywhere, and the runs of a store are read back by
// every later comparison.
const (
	// MaxRunBytes bounds one run of an export, as JSON text; the import
	// holds one run at a time, so this bounds its memory too.
	MaxRunBytes = 64 << 20
	// MaxSteps bounds the steps of one profile (rank) of a run.
	MaxSteps = 100_000
	// MaxArray bounds any other JSON array of a run (kernels, findings,
	// profiles, warnings...).
	MaxArray = 100_000
	// MaxDepth bounds the nesting of a run's JSON.
	MaxDepth = 64
	// MaxStepBoxes bounds the boxes of a run's median step picture
	// (median_step: every lane's boxes and the idle gaps together), and
	// its names; gpugate stores at most about 600 (report.MaxStepBoxes).
	MaxStepBoxes = 10_000
	// MaxDurationNS bounds a duration in ns (every "*_ns" number but the
	// timestamps, and a median step's span): 10^14 ns, about 28 hours.
	MaxDurationNS = 100_000_000_000_000
	// MaxTimestampNS bounds a timestamp in ns (start_ns, end_ns,
	// host_start_ns, host_end_ns): 2^62 ns, past the year 2116 counted
	// from 1970.
	MaxTimestampNS = 1 << 62
)

// timestampKeys are the "*_ns" fields that are points in time, not
// durations.
var timestampKeys = map[string]bool{"start_ns": true, "end_ns": true, "host_start_ns": true, "host_end_ns": true}

// span is where one run lies in an export file, and its id.
type span struct {
	id         int64
	start, end int64
	n          int // its place in the file, from 1
}

// indexExport reads an export token by token (never more than one token
// of it in memory): the format, and for every run of "runs" where it lies
// in the file and its id. Each run is checked on the way: at most
// MaxRunBytes, no duplicate key in any object (encoding/json would keep
// the last of two "workload" keys), numbers that fit (checkNumber), times
// (every "*_ns" number) not negative and within MaxDurationNS or
// MaxTimestampNS, arrays within MaxArray (steps within MaxSteps), nesting
// within MaxDepth.
func indexExport(r io.Reader) (format int, runs []span, err error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	delim := func(want json.Delim, what string) error {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
		if d, ok := t.(json.Delim); !ok || d != want {
			return fmt.Errorf("%s: want %q, found %v", what, want, t)
		}
		return nil
	}
	if err := delim('{', "the export"); err != nil {
		return 0, nil, err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, nil, err
		}
		key, _ := t.(string)
		if seen[key] {
			return 0, nil, fmt.Errorf("the export has the key %q twice", key)
		}
		seen[key] = true
		switch key {
		case "gpugate_baseline_export":
			var n json.Number
			if err := dec.Decode(&n); err != nil {
				return 0, nil, fmt.Errorf("gpugate_baseline_export: %v", err)
			}
			f, err := strconv.Atoi(string(n))
			if err != nil {
				return 0, nil, fmt.Errorf("gpugate_baseline_export %q is not a format number", n)
			}
			format = f
		case "runs":
			if err := delim('[', "runs"); err != nil {
				return 0, nil, err
			}
			for dec.More() {
				if len(runs) >= MaxArray {
					return 0, nil, fmt.Errorf("runs: more than %d", MaxArray)
				}
				w := walker{dec: dec}
				t, err := dec.Token()
				if err != nil {
					return 0, nil, fmt.Errorf("run #%d: %v", len(runs)+1, err)
				}
				if d, ok := t.(json.Delim); !ok || d != '{' {
					return 0, nil, fmt.Errorf("run #%d is not an object", len(runs)+1)
				}
				w.start = dec.InputOffset() - 1
				if err := w.value(t, "", 1); err != nil {
					return 0, nil, fmt.Errorf("run #%d: %v", len(runs)+1, err)
				}
				runs = append(runs, span{id: w.id, start: w.start, end: dec.InputOffset(), n: len(runs) + 1})
			}
			if err := delim(']', "runs"); err != nil {
				return 0, nil, err
			}
		default:
			// Unknown keys are skipped, as before, and checked as a run is.
			if err := (&walker{dec: dec, start: dec.InputOffset()}).skip(); err != nil {
				return 0, nil, fmt.Errorf("%q: %v", key, err)
			}
		}
	}
	if err := delim('}', "the export"); err != nil {
		return 0, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, nil, errors.New("data after the export's closing brace")
	}
	return format, runs, nil
}

// walker checks one run's JSON token by token.
type walker struct {
	dec   *json.Decoder
	start int64 // the run's first byte in the file
	id    int64 // the run's "id"
	path  []string
}

func (w *walker) where() string {
	if len(w.path) == 0 {
		return "the run"
	}
	return strings.Join(w.path, "")
}

func (w *walker) skip() error {
	t, err := w.dec.Token()
	if err != nil {
		return err
	}
	return w.value(t, "", 1)
}

// value checks the value that begins with token t, under key (the
// object key it is the value of, or of the array it is in).
func (w *walker) value(t json.Token, key string, depth int) error {
	if w.dec.InputOffset()-w.start > MaxRunBytes {
		return fmt.Errorf("larger than %d MiB (at %s)", MaxRunBytes>>20, w.where())
	}
	switch x := t.(type) {
	case json.Delim:
		if depth > MaxDepth {
			return fmt.Errorf("%s: nested more than %d deep", w.where(), MaxDepth)
		}
		switch x {
		case '{':
			seen := map[string]bool{}
			for w.dec.More() {
				kt, err := w.dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if seen[k] {
					return fmt.Errorf("%s: the key %q twice (a JSON reader keeps one of them: which is not said)", w.where(), k)
				}
				seen[k] = true
				vt, err := w.dec.Token()
				if err != nil {
					return err
				}
				w.path = append(w.path, "."+k)
				if depth == 1 && k == "id" {
					if n, ok := vt.(json.Number); ok {
						w.id, _ = strconv.ParseInt(string(n), 10, 64)
					}
				}
				if err := w.value(vt, k, depth+1); err != nil {
					return err
				}
				w.path = w.path[:len(w.path)-1]
			}
		case '[':
			limit := MaxArray
			if key == "steps" {
				limit = MaxSteps
			}
			n := 0
			for w.dec.More() {
				if n++; n > limit {
					return fmt.Errorf("%s: more than %d elements", w.where(), limit)
				}
				vt, err := w.dec.Token()
				if err != nil {
					return err
				}
				w.path = append(w.path, "["+strconv.Itoa(n-1)+"]")
				if err := w.value(vt, key, depth+1); err != nil {
					return err
				}
				w.path = w.path[:len(w.path)-1]
			}
		default:
			return fmt.Errorf("%s: unexpected %q", w.where(), x)
		}
		_, err := w.dec.Token() // the closing delimiter
		return err
	case json.Number:
		if err := checkNumber(string(x)); err != nil {
			return fmt.Errorf("%s: %v", oneLine(w.where()), err)
		}
		if strings.HasSuffix(key, "_ns") {
			return checkTime(w.where(), key, string(x))
		}
	}
	return nil
}

// checkTime refuses a time in ns that is negative or beyond its bound.
func checkTime(where, key, s string) error {
	f, _ := strconv.ParseFloat(s, 64)
	bound, what := float64(MaxDurationNS), "a duration (at most 10^14 ns, about 28 hours)"
	if timestampKeys[key] {
		bound, what = float64(MaxTimestampNS), "a timestamp (at most 2^62 ns)"
	}
	if !(f >= 0 && f <= bound) {
		return fmt.Errorf("%s: %.40s is not %s: times are not negative and within their bound", oneLine(where), s, what)
	}
	return nil
}

// checkMedianStep checks the median step picture a run's analysis may
// carry (report.StepTimeline, "median_step"): its span within
// MaxDurationNS, at most MaxStepBoxes boxes and names, every box's name
// index one of its names and its ends within ±MaxDurationNS.
func checkMedianStep(analysis []byte) error {
	var doc struct {
		MedianStep *struct {
			SpanNS int64    `json:"span_ns"`
			Names  []string `json:"names"`
			Lanes  []struct {
				Boxes []stepBox `json:"boxes"`
			} `json:"lanes"`
			Idle []stepBox `json:"idle"`
		} `json:"median_step"`
	}
	if err := json.Unmarshal(analysis, &doc); err != nil {
		return fmt.Errorf("analysis: median_step: %v", err)
	}
	g := doc.MedianStep
	if g == nil {
		return nil
	}
	if g.SpanNS < 0 || g.SpanNS > MaxDurationNS {
		return fmt.Errorf("analysis: median_step: span_ns %d is not a step's length (0 to 10^14 ns)", g.SpanNS)
	}
	if len(g.Names) > MaxStepBoxes {
		return fmt.Errorf("analysis: median_step: %d names, more than %d", len(g.Names), MaxStepBoxes)
	}
	boxes := [][]stepBox{g.Idle}
	n := len(g.Idle)
	for _, l := range g.Lanes {
		boxes = append(boxes, l.Boxes)
		n += len(l.Boxes)
	}
	if n > MaxStepBoxes {
		return fmt.Errorf("analysis: median_step: %d boxes, more than %d", n, MaxStepBoxes)
	}
	for _, bs := range boxes {
		for _, b := range bs {
			switch {
			case b.Name < 0 || b.Name >= len(g.Names):
				return fmt.Errorf("analysis: median_step: a box names name %d of %d", b.Name, len(g.Names))
			case b.Start < -MaxDurationNS || b.Start > MaxDurationNS || b.End < -MaxDurationNS || b.End > MaxDurationNS:
				// A box may begin before the step (a launch in the step of a
				// kernel still running from the previous one): the picture
				// clamps it; only its magnitude is bounded.
				return fmt.Errorf("analysis: median_step: a box [%d, %d] beyond ±10^14 ns", b.Start, b.End)
			case b.Count < 0:
				return fmt.Errorf("analysis: median_step: a box counts %d operations", b.Count)
			}
		}
	}
	return nil
}

type stepBox struct {
	Start int64 `json:"s"`
	End   int64 `json:"e"`
	Name  int   `json:"n"`
	Count int   `json:"c"`
}

// ImportFrom adds the runs of an export read from r (size bytes), all or
// nothing, as Import does, holding one run in memory at a time: a first
// pass reads the file token by token and notes where each run lies
// (indexExport, which checks the runs' JSON on the way), a second reads
// the runs one by one, in the order of their ids, and checks and writes
// each in one transaction, rolled back at the first bad run. check, when
// not nil, is the caller's own check of a run (pipeline's: that the gate
// can read it back). It returns how many runs were added, and how many the
// export holds.
func (s *Store) ImportFrom(ctx context.Context, r io.ReaderAt, size int64, check func(*ExportedRun) error) (added, total int, err error) {
	format, runs, err := indexExport(io.NewSectionReader(r, 0, size))
	if err != nil {
		return 0, 0, fmt.Errorf("import into %s: not a gpugate baseline export: %v; nothing imported", s.name, err)
	}
	if format != 1 {
		return 0, len(runs), fmt.Errorf("import into %s: unknown export format %d", s.name, format)
	}
	if s.readOnly {
		return 0, len(runs), s.wrap("import into", errReadOnly)
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].id < runs[b].id })
	now := time.Now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, len(runs), s.wrap("import into", err)
	}
	defer tx.Rollback()
	for _, sp := range runs {
		buf := make([]byte, sp.end-sp.start)
		if _, err := r.ReadAt(buf, sp.start); err != nil {
			return 0, len(runs), fmt.Errorf("import into %s: run #%d: %v; nothing imported", s.name, sp.n, err)
		}
		var x ExportedRun
		if !utf8.Valid(buf) {
			// encoding/json would replace the bad bytes with U+FFFD.
			return 0, len(runs), fmt.Errorf("import into %s: run #%d in the file is not valid UTF-8; nothing imported", s.name, sp.n)
		}
		if err := json.Unmarshal(buf, &x); err != nil {
			return 0, len(runs), fmt.Errorf("import into %s: run #%d in the file: %v; nothing imported", s.name, sp.n, err)
		}
		bad := func(err error) (int, int, error) {
			return 0, len(runs), fmt.Errorf("import into %s: run %d (#%d in the file): %v; nothing imported", s.name, x.ID, sp.n, err)
		}
		buf = nil // x holds what it needs; one run in memory at a time
		d, err := x.validate(now)
		if err != nil {
			return bad(err)
		}
		if check != nil {
			if err := check(&x); err != nil {
				return bad(err)
			}
		}
		x.Analysis = compact(x.Analysis) // as stored
		// A run already stored is skipped. The analysis (up to 64 MiB) is
		// compared only where a run of the same workload, commit, time,
		// kind and fingerprint exists.
		var n int
		if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT count(*) FROM runs WHERE workload = ? AND commit_sha = ? AND created_at = ? AND kind = ? AND fingerprint_hash = ?`),
			x.Workload, x.Commit, x.Created, x.Kind, x.FingerprintHash).Scan(&n); err != nil {
			return 0, len(runs), s.wrap("import into", err)
		}
		if n > 0 {
			if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT count(*) FROM runs WHERE workload = ? AND commit_sha = ? AND created_at = ? AND kind = ? AND fingerprint_hash = ? AND analysis = ?`),
				x.Workload, x.Commit, x.Created, x.Kind, x.FingerprintHash, string(x.Analysis)).Scan(&n); err != nil {
				return 0, len(runs), s.wrap("import into", err)
			}
		}
		if n > 0 {
			continue
		}
		run := Run{Workload: x.Workload, Branch: x.Branch, Commit: x.Commit, Created: time.Unix(x.Created, 0), Kind: x.Kind, Profiler: x.Profiler,
			FingerprintHash: x.FingerprintHash, Fingerprint: x.Fingerprint, Version: x.Version, Analysis: x.Analysis, Conditions: x.Conditions}
		id, err := s.insert(ctx, tx, run, d)
		if err != nil {
			return 0, len(runs), s.wrap("import into", fmt.Errorf("run %d: %w; nothing imported", x.ID, err))
		}
		ks, _ := importedNCU(x.NCU) // validated
		if err := s.insertNCU(ctx, tx, id, ks); err != nil {
			return 0, len(runs), s.wrap("import into", fmt.Errorf("run %d: ncu_kernels: %w; nothing imported", x.ID, err))
		}
		added++
	}
	if err := tx.Commit(); err != nil {
		return 0, len(runs), s.wrap("import into", err)
	}
	return added, len(runs), nil
}

// Import adds the runs of an export in one transaction, all or nothing,
// checked as ImportFrom checks them (every run is checked before it is
// written, and one bad run adds none). An export's ids are never
// written: the store assigns each run a fresh id, in the order of the
// export's ids (so an export of a store without gaps, imported into an
// empty one, keeps its ids), and a run's ncu kernels follow it to that
// id. A forged id (2^63-1) therefore cannot exhaust PostgreSQL's identity
// sequence. A run identical to one already stored (same workload, commit,
// time, kind, fingerprint and analysis) is skipped. It returns how many
// runs were added.
func (s *Store) Import(ctx context.Context, e *Export) (int, error) {
	now := time.Now()
	for i := range e.Runs {
		// Before the export is written as JSON, which would replace
		// text that is not UTF-8.
		if _, err := e.Runs[i].validate(now); err != nil {
			return 0, fmt.Errorf("import into %s: run %d (#%d in the file): %v; nothing imported", s.name, e.Runs[i].ID, i+1, err)
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("import into %s: %v", s.name, err)
	}
	n, _, err := s.ImportFrom(ctx, bytes.NewReader(b), int64(len(b)), nil)
	return n, err
}
