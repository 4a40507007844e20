package action

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/stats"
)

// fill sets every field reachable from v (exported, through pointers,
// slices, maps and nested structs) to a value of its own, distinct from
// the zero value and from the other fields' values, so that a field that
// does not survive a JSON round trip shows as a difference.
func fill(v reflect.Value, path string, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path, n)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fill(v.Field(i), path+"."+f.Name, n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, path+".key", n)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, fmt.Sprintf("%s[%d]", path, i), n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Interface:
		v.Set(reflect.ValueOf(fmt.Sprintf("i%d", *n)))
	default:
		panic("fill: no value for " + path + " of kind " + v.Kind().String())
	}
}

// diff lists the paths where a and b differ.
func diff(a, b reflect.Value, path string, out *[]string) {
	if a.Kind() != b.Kind() {
		*out = append(*out, path)
		return
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, path+" (nil on one side)")
			}
			return
		}
		diff(a.Elem(), b.Elem(), path, out)
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				diff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, out)
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			*out = append(*out, fmt.Sprintf("%s (length %d, %d)", path, a.Len(), b.Len()))
			return
		}
		for i := range a.Len() {
			diff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			*out = append(*out, fmt.Sprintf("%s (length %d, %d)", path, a.Len(), b.Len()))
			return
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				*out = append(*out, fmt.Sprintf("%s[%v] (missing)", path, k))
				continue
			}
			diff(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k), out)
		}
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		if x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
			*out = append(*out, fmt.Sprintf("%s (%v, %v)", path, x, y))
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, fmt.Sprintf("%s (%v, %v)", path, a.Interface(), b.Interface()))
		}
	}
}

func roundTrip(t *testing.T, r Result) Result {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal gpugate-result.json: %v", err)
	}
	return back
}

// TestResultRoundTrip: every field of every type in gpugate-result.json
// (Result, and through Report every type the report holds) survives JSON.
// The post step and the fork flow's comment job render the PR comment from
// the JSON; a field that JSON drops is a comment that says something else
// than report.md (every comment said +0.0% when stats.Result lost its
// delta). A new field with json:"-" or a lossy MarshalJSON fails here.
func TestResultRoundTrip(t *testing.T) {
	var r Result
	n := 0
	fill(reflect.ValueOf(&r).Elem(), "Result", &n)
	if n < 100 {
		t.Fatalf("filled only %d values: the filler does not reach the report", n)
	}
	back := roundTrip(t, r)
	var d []string
	diff(reflect.ValueOf(r), reflect.ValueOf(back), "Result", &d)
	if len(d) > 0 {
		t.Errorf("%d fields of %d do not survive gpugate-result.json:\n%s", len(d), n, strings.Join(d, "\n"))
	}
	// What the reader reads: the comment (report.md is the same text)
	// rendered from the result and from its round trip.
	env := func(string) string { return "" }
	md, err := RenderComment(r, env, "")
	if err != nil {
		t.Fatal(err)
	}
	md2, err := RenderComment(back, env, "")
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != string(md2) {
		t.Errorf("the comment rendered from gpugate-result.json differs from the one rendered from the result:\n%s\n---\n%s", md, md2)
	}
}

// TestResultRoundTripInfinite: the infinities that MarshalJSON writes as
// null come back as the same infinities (the comment says "new", "gone"
// and ±∞ bounds as report.md does).
func TestResultRoundTripInfinite(t *testing.T) {
	inf := math.Inf(1)
	for _, m := range []stats.Result{
		{Name: "few", Delta: 0, DeltaLo: -inf, DeltaHi: inf, DeltaPct: 0, CILoPct: -inf, CIHiPct: inf},
		{Name: "new", Delta: 3, DeltaLo: 1, DeltaHi: 5, DeltaPct: inf, CILoPct: inf, CIHiPct: inf},
		{Name: "gone", Delta: -3, DeltaLo: -5, DeltaHi: 0, DeltaPct: -inf, CILoPct: -inf, CIHiPct: 0},
		{Name: "wide", Delta: 2, DeltaLo: -inf, DeltaHi: 4, DeltaPct: 12.5, CILoPct: -inf, CIHiPct: 25},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back stats.Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v (%s)", m.Name, err, b)
		}
		var d []string
		diff(reflect.ValueOf(m), reflect.ValueOf(back), m.Name, &d)
		if len(d) > 0 || stats.FormatDelta(back) != stats.FormatDelta(m) {
			t.Errorf("%s: %s; %q after the round trip, %q before", m.Name, d, stats.FormatDelta(back), stats.FormatDelta(m))
		}
	}
	// A null that no gpugate writes is refused, not read as 0.
	var r stats.Result
	for _, bad := range []string{`{"name":"x","delta":null}`, `{"name":"x"}`, `{"name":"x","delta":0,"delta_pct":null}`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
