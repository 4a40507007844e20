package config_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/trace/ncu"
)

// docKey is one row of docs/config.md's key tables.
type docKey struct {
	line                int
	typ, def, unit, why string
}

// readDocKeys reads the rows of docs/config.md whose first cell is a key
// path in backquotes: | `workloads[].timeout` | duration | `10m` | … |.
func readDocKeys(t *testing.T) map[string]docKey {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]docKey{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		cells := splitRow(sc.Text())
		if len(cells) != 5 || !strings.HasPrefix(cells[0], "`") || cells[0] == "`key`" {
			continue
		}
		key := strings.Trim(cells[0], "`")
		if _, dup := out[key]; dup {
			t.Errorf("docs/config.md:%d: %s listed twice", n, key)
		}
		out[key] = docKey{line: n, typ: cells[1], def: cells[2], unit: cells[3], why: cells[4]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitRow splits a Markdown table row at the | that are not escaped (\|).
func splitRow(s string) []string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "|") || !strings.HasSuffix(s, "|") {
		return nil
	}
	s = s[1 : len(s)-1]
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			cur.WriteByte('|')
			i++
		case s[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// structKeys walks a config struct by its yaml tags: every key perf.yaml
// can hold, by path, with the Go type that reads it. A type that decodes
// itself (Duration, Command, …) is a leaf; a struct is a mapping whose
// keys follow; a list of structs is a list whose entries' keys follow
// under "name[]".
func structKeys(prefix string, t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		path := prefix + name
		out[path] = f.Type
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case reflect.PointerTo(ft).Implements(unmarshaler):
		case ft.Kind() == reflect.Struct:
			structKeys(path+".", ft, out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			structKeys(path+"[].", ft.Elem(), out)
		}
	}
}

// typeWord is how docs/config.md names a Go type.
func typeWord(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[config.Duration]():
		return "duration"
	case reflect.TypeFor[config.Percent]():
		return "percent"
	case reflect.TypeFor[config.Bytes]():
		return "size"
	case reflect.TypeFor[config.Command]():
		return "command"
	case reflect.TypeFor[config.Repeat]():
		return "integer or auto"
	}
	switch t.Kind() {
	case reflect.Int:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Struct:
		return "mapping"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "list of " + strings.ToLower(t.Elem().Name()) + "s"
		}
		return "list of " + typeWord(t.Elem()) + "s"
	case reflect.Map:
		return "mapping of " + typeWord(t.Elem()) + "s"
	}
	return t.String()
}

// configDefaults are the defaults the config gives, by key path, written
// as docs/config.md writes them. Defaults applied by the packages that
// use a key are taken from there.
func configDefaults(t *testing.T) map[string]string {
	t.Helper()
	// repeat: auto, deep_dive: {} and slurm: {} turn on the defaults that
	// apply to them; repeat's own default is read from a file without it.
	const file = "version: 1\nworkloads:\n  - command: x\n"
	plain, err := config.Parse([]byte(file), "plain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(file+"    repeat: auto\n    deep_dive: {}\n"), "auto.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// slurm: refuses deep_dive: its defaults come from a file of its own.
	sc, err := config.Parse([]byte(file+"    slurm: {}\n"), "slurm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.Workloads[0].Repeat = plain.Workloads[0].Repeat
	c.Workloads[0].Slurm = sc.Workloads[0].Slurm
	out := map[string]string{}
	values("", reflect.ValueOf(*c), out)
	// What the file above sets is no default.
	delete(out, "version")
	delete(out, "workloads[].command")
	for k, v := range map[string]string{
		"workloads[].step_pattern":       analysis.DefaultStepPattern.String(),
		"workloads[].data_pattern":       analysis.DefaultDataPattern.String(),
		"workloads[].deep_dive.sections": strings.Join(ncu.DefaultSections, ", "),
		"gate":                           strings.Join(gate.DefaultGate, ", "),
		"memory_min_change":              fmt.Sprintf("%dMiB", gate.DefaultMemoryMinChange),
		"ab.max_pairs":                   fmt.Sprint(pipeline.DefaultMaxPairs),
		"ab.budget":                      duration(pipeline.DefaultBudget),
	} {
		if out[k] != "" {
			t.Errorf("%s: the config now gives a default (%s): take it from there", k, out[k])
		}
		out[k] = v
	}
	return out
}

// values writes the value of every leaf key of v that is not its type's
// zero value (booleans always: false is a default too).
func values(prefix string, v reflect.Value, out map[string]string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		path, fv := prefix+name, v.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		switch x := fv.Interface().(type) {
		case config.Duration:
			if x != 0 {
				out[path] = duration(time.Duration(x))
			}
			continue
		case config.Repeat:
			if x.Auto() {
				out[path] = "auto"
			} else if x != 0 {
				out[path] = fmt.Sprint(int(x))
			}
			continue
		case config.Command, config.Percent, config.Bytes:
			if !fv.IsZero() {
				out[path] = fmt.Sprint(x)
			}
			continue
		}
		switch fv.Kind() {
		case reflect.Struct:
			values(path+".", fv, out)
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.Struct {
				if fv.Len() > 0 {
					values(path+"[].", fv.Index(0), out)
				}
			} else if fv.Len() > 0 {
				var s []string
				for j := range fv.Len() {
					s = append(s, fmt.Sprint(fv.Index(j).Interface()))
				}
				out[path] = strings.Join(s, ", ")
			}
		case reflect.Map:
		case reflect.Bool:
			out[path] = fmt.Sprint(fv.Bool())
		default:
			if !fv.IsZero() {
				out[path] = fmt.Sprint(fv.Interface())
			}
		}
	}
}

// duration writes 10m, not 10m0s.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var literalRE = regexp.MustCompile("^`([^`]*)`(?:, )?")

// literals is the run of backquoted values a default cell starts with,
// joined by ", ": "`a`, `b` (…)" gives "a, b"; "none" gives "".
func literals(cell string) string {
	var out []string
	for {
		m := literalRE.FindStringSubmatch(cell)
		if m == nil {
			return strings.Join(out, ", ")
		}
		out = append(out, m[1])
		cell = cell[len(m[0]):]
	}
}

// TestDocConfig keeps docs/config.md and the config struct the same: every
// key perf.yaml can hold is documented with its type, a default and a
// unit, every documented key is one the config reads, and the default the
// doc writes as a literal is the one the code applies.
func TestDocConfig(t *testing.T) {
	doc := readDocKeys(t)
	keys := map[string]reflect.Type{}
	structKeys("", reflect.TypeFor[config.Config](), keys)
	defaults := configDefaults(t)

	var missing, extra []string
	for k := range keys {
		if _, ok := doc[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k, d := range doc {
		if _, ok := keys[k]; !ok {
			extra = append(extra, fmt.Sprintf("%s (line %d)", k, d.line))
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("docs/config.md does not document %s", strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("docs/config.md documents keys perf.yaml does not have: %s", strings.Join(extra, ", "))
	}
	for k, typ := range keys {
		d, ok := doc[k]
		if !ok {
			continue
		}
		if want := typeWord(typ); d.typ != want {
			t.Errorf("docs/config.md:%d: %s: type %q, want %q", d.line, k, d.typ, want)
		}
		if d.def == "" || d.unit == "" || d.why == "" {
			t.Errorf("docs/config.md:%d: %s: empty default, unit or meaning (write — or none)", d.line, k)
		}
		if got, want := literals(d.def), defaults[k]; got != want {
			if want == "" {
				t.Errorf("docs/config.md:%d: %s: default %q, but the config gives none (write it in words where another part applies it)", d.line, k, got)
			} else {
				t.Errorf("docs/config.md:%d: %s: default %q, want %q", d.line, k, got, want)
			}
		}
	}
}

// The walk above must see the keys that are hard to reach: a pointer to a
// struct (deep_dive), a list of structs (workloads), an anonymous struct
// (ab.setup), a type that decodes itself (command); otherwise the test
// above could pass with half the keys unseen.
func TestDocConfigWalk(t *testing.T) {
	keys := map[string]reflect.Type{}
	structKeys("", reflect.TypeFor[config.Config](), keys)
	for _, k := range []string{"workloads[].deep_dive.clock_control", "workloads[].nsys.extra_args", "ab.setup.head", "baseline.max_age", "workloads[].command", "memory_min_change"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("walk of config.Config misses %s", k)
		}
	}
	if _, ok := keys["workloads[].command.Argv"]; ok {
		t.Error("walk of config.Config went into command, which decodes itself")
	}
	if got := literals("`a`, `b` (by position)"); got != "a, b" {
		t.Errorf("literals = %q, want a, b", got)
	}
	if got := splitRow("| `x` | a \\| b | c |"); !reflect.DeepEqual(got, []string{"`x`", "a | b", "c"}) {
		t.Errorf("splitRow = %q", got)
	}
}
