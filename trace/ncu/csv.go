package ncu

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpugate/gpugate/trace"
)

// ReadCSVFile reads an ncu CSV export: the details page (ncu --import X
// --csv --page details, with or without --print-units base) or the raw page
// (--page raw).
func ReadCSVFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseCSV(f, path)
}

// ParseCSV reads an ncu CSV export from r; name is used in errors.
func ParseCSV(r io.Reader, name string) (*Report, error) {
	rep := &Report{Path: name}
	p := newParser(rep)
	if err := p.parse(r, name); err != nil {
		return nil, err
	}
	p.finish()
	return rep, nil
}

// IsCSVHeader reports whether line (the first line of a file that is not
// an ncu "==" message) looks like the header of an ncu CSV page.
func IsCSVHeader(line []byte) bool {
	return strings.HasPrefix(string(line), `"ID","Process ID",`)
}

type parser struct {
	rep   *Report
	byID  map[int]*Launch
	order []*Launch
	smem  map[*Launch]*smemParts
}

type smemParts struct{ static, dynamic *int64 }

func newParser(rep *Report) *parser {
	return &parser{rep: rep, byID: map[int]*Launch{}, smem: map[*Launch]*smemParts{}}
}

func (p *parser) launch(id int) *Launch {
	l := p.byID[id]
	if l == nil {
		l = &Launch{ID: id}
		p.byID[id] = l
		p.order = append(p.order, l)
	}
	return l
}

func (p *parser) warnf(format string, args ...any) {
	const max = 20
	if len(p.rep.Warnings) < max {
		p.rep.Warnings = append(p.rep.Warnings, fmt.Sprintf(format, args...))
	} else if len(p.rep.Warnings) == max {
		p.rep.Warnings = append(p.rep.Warnings, "more warnings left out")
	}
}

// parse reads one CSV page and merges it into the launches read so far, so
// that the details and raw pages of one report make one set of launches.
func (p *parser) parse(r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	// ncu prints "==ERROR==", "==WARNING==" and "==PROF==" lines on stdout,
	// before the CSV and sometimes after it.
	line := 0
	var msgs []string // the last one only, at most 300 bytes
	for {
		b, err := br.Peek(2)
		if err != nil || string(b) != "==" {
			break
		}
		line++
		var msg []byte
		for {
			chunk, err := br.ReadSlice('\n')
			if len(msg) < 300 {
				msg = append(msg, chunk[:min(len(chunk), 300-len(msg))]...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		msgs = []string{strings.TrimSpace(string(msg))}
	}
	cr := csv.NewReader(br)
	// Metric rows have 13 fields and rule rows 15 (the header has 15).
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		msg := "empty file: not an ncu CSV export"
		if len(msgs) > 0 {
			msg = "no CSV in ncu's output: " + msgs[len(msgs)-1]
		}
		return &trace.SyntaxError{File: name, Msg: msg}
	}
	if err != nil {
		return csvError(name, line, err)
	}
	head = slices.Clone(head)
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimPrefix(h, "\ufeff")] = i
	}
	if _, ok := col["ID"]; !ok {
		return &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", line+1), Msg: `not an ncu CSV export: no "ID" column`}
	}
	switch {
	case has(col, "Section Name", "Metric Name", "Metric Unit", "Metric Value"):
		if p.rep.Source == "" {
			p.rep.Source = "details-csv"
		}
		return p.details(cr, col, name, line)
	case has(col, "Invocations", "Metric Name"):
		return &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", line+1), Msg: "an ncu summary page (--print-summary) has no per-launch values: export --page details or --page raw"}
	default:
		if p.rep.Source == "" {
			p.rep.Source = "raw-csv"
		}
		return p.raw(cr, head, col, name, line)
	}
}

func has(col map[string]int, names ...string) bool {
	for _, n := range names {
		if _, ok := col[n]; !ok {
			return false
		}
	}
	return true
}

func csvError(name string, skipped int, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", pe.StartLine+skipped), Msg: pe.Err.Error()}
	}
	return &trace.SyntaxError{File: name, Msg: err.Error()}
}

// field returns rec[i], or "" when the row is shorter (metric rows end
// before the rule columns).
func field(rec []string, col map[string]int, name string) string {
	i, ok := col[name]
	if !ok || i >= len(rec) {
		return ""
	}
	return rec[i]
}

// identify fills the launch's identity from a row's leading columns.
func (p *parser) identify(rec []string, col map[string]int, name string, line int) (*Launch, error) {
	idText := field(rec, col, "ID")
	id, err := strconv.Atoi(idText)
	if err != nil {
		return nil, &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", line), Msg: fmt.Sprintf("launch ID %q is not a number", idText)}
	}
	l := p.launch(id)
	if l.Name == "" {
		l.Name = strings.Clone(field(rec, col, "Kernel Name"))
	}
	if l.ProcessID == 0 {
		l.ProcessID, _ = strconv.Atoi(field(rec, col, "Process ID"))
	}
	return l, nil
}

// details reads the details page: one row per (launch, section, metric),
// and one row per rule message.
func (p *parser) details(cr *csv.Reader, col map[string]int, name string, skipped int) error {
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(name, skipped, err)
		}
		line, _ := cr.FieldPos(0)
		line += skipped
		if len(rec) == 1 && strings.HasPrefix(rec[0], "==") {
			continue // an ncu message after the CSV
		}
		l, err := p.identify(rec, col, name, line)
		if err != nil {
			return err
		}
		if rule := field(rec, col, "Rule Name"); rule != "" {
			l.Rules = append(l.Rules, Rule{
				Section: field(rec, col, "Section Name"),
				Name:    rule,
				Type:    field(rec, col, "Rule Type"),
				Message: strings.TrimSpace(field(rec, col, "Rule Description")),
			})
			continue
		}
		// Rule rows carry odd Context/Stream values; metric rows the real ones.
		if l.Context == 0 {
			l.Context, _ = strconv.Atoi(field(rec, col, "Context"))
		}
		if l.Stream == 0 {
			l.Stream, _ = strconv.Atoi(field(rec, col, "Stream"))
		}
		section, metric := field(rec, col, "Section Name"), field(rec, col, "Metric Name")
		spec, ok := labelSpec(section, metric)
		if !ok {
			continue
		}
		p.set(l, spec, field(rec, col, "Metric Value"), field(rec, col, "Metric Unit"), metric, name, line, false)
	}
}

// raw reads the raw page: a header of metric names, a row of units, then
// one row per launch.
func (p *parser) raw(cr *csv.Reader, head []string, col map[string]int, name string, skipped int) error {
	var units []string
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(name, skipped, err)
		}
		line, _ := cr.FieldPos(0)
		line += skipped
		if len(rec) == 1 && strings.HasPrefix(rec[0], "==") {
			continue
		}
		if field(rec, col, "ID") == "" && units == nil {
			units = slices.Clone(rec)
			continue
		}
		l, err := p.identify(rec, col, name, line)
		if err != nil {
			return err
		}
		if l.Context == 0 {
			l.Context, _ = strconv.Atoi(field(rec, col, "Context"))
		}
		if l.Stream == 0 {
			l.Stream, _ = strconv.Atoi(field(rec, col, "Stream"))
		}
		var dims [6]*int64
		for i, metric := range head {
			if i >= len(rec) {
				break
			}
			unit := ""
			if i < len(units) {
				unit = units[i]
			}
			switch metric {
			case "device__attribute_display_name":
				if l.Device == "" {
					l.Device = rec[i]
				}
				continue
			case "launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z", "launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z":
				if v, ok := parseNumber(rec[i]); ok {
					n := int64(v)
					dims[dimIndex[metric]] = &n
				}
				continue
			}
			spec, ok := rawSpecs[metric]
			if !ok {
				continue
			}
			// The raw page names each metric by its definition, so it wins
			// over a display label read from the details page.
			p.set(l, spec, rec[i], unit, metric, name, line, true)
		}
		if dims[0] != nil && dims[1] != nil && dims[2] != nil {
			l.Grid = &Dim3{*dims[0], *dims[1], *dims[2]}
		}
		if dims[3] != nil && dims[4] != nil && dims[5] != nil {
			l.Block = &Dim3{*dims[3], *dims[4], *dims[5]}
		}
	}
}

var dimIndex = map[string]int{
	"launch__grid_dim_x": 0, "launch__grid_dim_y": 1, "launch__grid_dim_z": 2,
	"launch__block_dim_x": 3, "launch__block_dim_y": 4, "launch__block_dim_z": 5,
}

// set stores one value in its field after converting its unit to the
// field's base unit. A unit of another kind (the Memory Workload Analysis
// "Memory Throughput" in byte/second is not the SOL percentage) is skipped.
func (p *parser) set(l *Launch, spec metricSpec, text, unit, metric, name string, line int, override bool) {
	v, ok := parseNumber(text)
	if !ok {
		if text != "" && text != "n/a" {
			p.warnf("%s:line %d: launch %d: %s value %q is not a number", name, line, l.ID, metric, text)
		}
		return
	}
	v, ok = convert(v, unit, spec.unit)
	if !ok {
		return
	}
	if math.IsInf(v, 0) || math.Abs(v) >= 1<<62 && spec.kind != kindFloat {
		p.warnf("%s:line %d: launch %d: %s value %q %s is out of range", name, line, l.ID, metric, text, unit)
		return
	}
	switch spec.kind {
	case kindFloat:
		dst := spec.float(l)
		if *dst == nil || override {
			*dst = &v
		}
	case kindInt:
		dst := spec.int(l)
		n := int64(math.Round(v))
		if *dst == nil || override {
			*dst = &n
		}
	case kindSharedMem:
		// Static and dynamic shared memory are two rows; their sum is the
		// block's shared memory.
		n := int64(math.Round(v))
		parts := p.smem[l]
		if parts == nil {
			parts = &smemParts{}
			p.smem[l] = parts
		}
		if spec.dynamic {
			parts.dynamic = &n
		} else {
			parts.static = &n
		}
	}
}

// finish orders the launches by ID and derives what the rules say.
func (p *parser) finish() {
	slices.SortFunc(p.order, func(a, b *Launch) int { return a.ID - b.ID })
	for _, l := range p.order {
		if s := p.smem[l]; s != nil && s.static != nil && s.dynamic != nil {
			n := *s.static + *s.dynamic
			l.SharedMemPerBlock = &n
		}
		l.OccupancyLimiters = []string{}
		l.Bound = ""
		l.applyRules()
		if l.Rules == nil {
			l.Rules = []Rule{}
		}
	}
	p.rep.Launches = p.order
}

// parseNumber reads a value as ncu prints it; thousands separators are
// dropped.
func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// siPrefix are the prefixes ncu puts on units when it scales a value
// (msecond, Kbyte, cycle/nsecond; decimal, as the base-unit exports show:
// 232.65 Gbyte/second is 232650000000 byte/second).
var siPrefix = map[byte]int{'n': -9, 'u': -6, 'm': -3, 'K': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15}

var baseWords = []string{"second", "byte", "cycle", "inst", "thread", "warp", "block", "register", "sector", "request"}

// splitUnit parses a unit such as "cycle/nsecond" into its power of ten
// and its base form ("cycle/second").
func splitUnit(unit string) (exp int, base string) {
	parts := strings.Split(unit, "/")
	for i, part := range parts {
		e := 0
		if len(part) > 1 {
			if pe, ok := siPrefix[part[0]]; ok && slices.Contains(baseWords, part[1:]) {
				e, part = pe, part[1:]
			}
		}
		if i == 0 {
			exp += e
		} else {
			exp -= e
		}
		parts[i] = part
	}
	return exp, strings.Join(parts, "/")
}

// convert scales v from unit to want. It reports false when the units are
// of different kinds. Exact when no scaling is needed, so base-unit exports
// are read digit for digit.
func convert(v float64, unit, want string) (float64, bool) {
	if want == "*" { // a count: any unit, no scaling expected
		e, _ := splitUnit(unit)
		return scale(v, e), true
	}
	e1, b1 := splitUnit(unit)
	e2, b2 := splitUnit(want)
	if b1 != b2 {
		return 0, false
	}
	return scale(v, e1-e2), true
}

func scale(v float64, e int) float64 {
	switch {
	case e > 0:
		return v * math.Pow10(e)
	case e < 0:
		return v / math.Pow10(-e)
	}
	return v
}
