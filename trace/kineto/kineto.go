// Package kineto reads torch.profiler chrome traces (Kineto JSON, plain or
// gzip-compressed) into a trace.Profile.
//
// It understands the current Kineto format (categories kernel, gpu_memcpy,
// gpu_memset, cuda_runtime, cuda_driver, cpu_op, user_annotation, ...), the
// 2021 format (Kernel, Memcpy, Memset, Runtime, Operator), the bare-array
// form whose top level is a JSON list, and the CPU-only autograd-profiler
// trace that torch builds without Kineto write (no cat, pid "CPU functions").
// Events are decoded one at a time from a fixed-size buffer.
package kineto

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/gpugate/gpugate/trace"
)

// ReadFile reads the trace at path within the default Limits.
func ReadFile(path string) (*trace.Profile, error) { return Limits{}.ReadFile(path) }

// Parse reads a trace from r within the default Limits; name is used in
// errors and as the profile path.
func Parse(r io.Reader, name string) (*trace.Profile, error) { return Limits{}.Parse(r, name) }

// ReadFile reads the trace at path; gzip is detected from the content. A
// large uncompressed file is parsed by several goroutines (see parallel.go).
func (l Limits) ReadFile(path string) (*trace.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return l.ReadOpen(f, path)
}

// ReadOpen reads the trace in the open file f (from its start, by
// position: f's offset is not used); path is used in errors and as the
// profile path.
func (l Limits) ReadOpen(f *os.File, path string) (*trace.Profile, error) {
	l = l.withDefaults()
	var magic [2]byte
	n, _ := f.ReadAt(magic[:], 0)
	st, err := f.Stat()
	if err != nil || (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) || st.Size() < parallelMinBytes {
		return l.Parse(io.NewSectionReader(f, 0, 1<<62), path)
	}
	if st.Size() > l.MaxBytes {
		return nil, limitError(path, "", limitBytes, fmt.Sprintf("trace size (%d bytes)", st.Size()), l.MaxBytes)
	}
	p := newParser(newScanner(io.NewSectionReader(f, 0, st.Size())), path, l)
	p.file, p.size = f, st.Size()
	if err := p.parse(); err != nil {
		return nil, p.wrap(err, false)
	}
	p.finish()
	return p.p, nil
}

func newParser(s *scanner, name string, l Limits) *parser {
	s.maxStr = l.MaxString
	return &parser{s: s, lim: l, p: trace.New(name, trace.FormatKineto), copyInfo: map[trace.Name]copyInfo{}}
}

// Parse reads a trace from r; name is used in errors and as the profile path.
func (l Limits) Parse(r io.Reader, name string) (*trace.Profile, error) {
	l = l.withDefaults()
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2)
	var src io.Reader = br
	gz := len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &trace.SyntaxError{File: name, Msg: "corrupt gzip header: " + err.Error()}
		}
		defer zr.Close()
		src = zr
	}
	src = &cappedReader{r: src, n: l.MaxBytes, lim: l.MaxBytes}
	p := newParser(newScanner(src), name, l)
	if err := p.parse(); err != nil {
		return nil, p.wrap(err, gz)
	}
	p.finish()
	return p.p, nil
}

func (p *parser) wrap(err error, gz bool) error {
	var se *trace.SyntaxError
	if errors.As(err, &se) {
		return err
	}
	var le *trace.LimitError
	if errors.As(err, &le) {
		return err
	}
	pos := fmt.Sprintf("offset %d", p.s.offset())
	if gz {
		pos = "uncompressed " + pos
	}
	var el *errLimit
	if errors.As(err, &el) {
		return limitError(p.p.Path, pos, el.name, el.what, el.limit)
	}
	msg := err.Error()
	switch {
	case gz && errors.Is(err, io.ErrUnexpectedEOF):
		msg = "truncated gzip stream (unexpected EOF)"
	case gz && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader)):
		msg = "corrupt gzip stream: " + err.Error()
	case errors.Is(err, errEOF):
		msg = "unexpected end of JSON input: truncated trace"
	}
	return &trace.SyntaxError{File: p.p.Path, Pos: pos, Msg: msg}
}

// Member names the parser looks for, by object.
var (
	topKeys   = newKeySet("traceEvents", "deviceProperties", "distributedInfo")
	eventKeys = newKeySet("ph", "cat", "name", "ts", "dur", "pid", "tid", "args")
	argKeys   = newKeySet("correlation", "device", "stream", "bytes")
	devKeys   = newKeySet("id", "name", "totalGlobalMem", "numSms")
	distKeys  = newKeySet("rank", "world_size")
)

type copyInfo struct {
	kind     trace.CopyKind
	src, dst trace.MemKind
}

type parser struct {
	s   *scanner
	p   *trace.Profile
	lim Limits

	// The kept events, in the order read; finish moves them into p.
	gpu chunks[trace.GPUOp]
	api chunks[trace.APICall]
	rng chunks[trace.Range]
	stk chunks[trace.Range] // python_function frames (with_stack)
	sh  shapeState          // operators whose FLOPs are counted (shapes.go)

	nEvents int // entries of traceEvents read
	// Complete events of a kept category with bad times: dropped for a
	// missing or out-of-range ts or an end past the range, given dur 0 for
	// a missing or negative dur.
	badTs, badEnd, badDur int

	key, str, num []byte
	ev            event

	copyInfo map[trace.Name]copyInfo
	mem      memState // [memory] instant events (memory.go)

	sawEvents     bool
	legacy, noCat int
	cpuFunctions  int

	// file and size are set when the input is a plain file that can be
	// read at any offset, which allows parsing events in parallel.
	file interface {
		io.ReaderAt
	}
	size int64
}

// event holds the fields of one trace event; its byte slices are reused.
type event struct {
	ph             byte
	cat, name, tid []byte
	pid            []byte
	ts, dur        int64
	hasTs, hasDur  bool
	tidNum         int64
	tidIsNum       bool
	pidNum         int64
	pidIsNum       bool
	corr           int64
	device, stream int64
	bytes          int64
	hasDevice      bool
	kind           int  // category(cat), set where cat is read
	legacy         bool // a category of the 2021 format
	hasStream      bool
}

func (p *parser) parse() error {
	s := p.s
	c, err := s.peek()
	if err != nil {
		return &trace.SyntaxError{File: p.p.Path, Msg: "empty file: not a trace"}
	}
	switch c {
	case '[':
		if err := p.events(); err != nil {
			return err
		}
	case '{':
		if err := p.topObject(); err != nil {
			return err
		}
		if !p.sawEvents {
			return &trace.SyntaxError{File: p.p.Path, Msg: `no "traceEvents" array: not a Kineto trace`}
		}
	default:
		return &trace.SyntaxError{File: p.p.Path, Pos: "offset 0", Msg: "not a JSON trace: it does not start with a JSON object or array"}
	}
	s = p.s
	if !s.atEOF() {
		c, _ := s.peek()
		return s.unexpected(c, "end of input after the trace")
	}
	if s.rerr != nil && s.rerr != io.EOF {
		return s.rerr // e.g. a gzip checksum error found at the very end
	}
	return nil
}

func (p *parser) topObject() error {
	// p.s, not a copy: parallelEvents hands the rest of the input to
	// another scanner.
	more, err := p.s.openObject()
	for ; more && err == nil; more, err = p.s.comma('}') {
		k, err := p.s.readKey(&p.key, topKeys)
		if err != nil {
			return err
		}
		switch k {
		case 0:
			p.sawEvents = true
			err = p.events()
		case 1:
			err = p.deviceProperties()
		case 2:
			err = p.distributedInfo()
		default:
			err = p.s.skipValue()
		}
		if err != nil {
			return err
		}
	}
	return err
}

func (p *parser) events() error {
	s := p.s
	if p.file != nil {
		return p.parallelEvents()
	}
	more, err := s.openArray()
	for ; more && err == nil; more, err = s.comma(']') {
		c, err := s.peek()
		if err != nil {
			return err
		}
		if c != '{' {
			return s.unexpected(c, "a trace event object")
		}
		if err := p.count(); err != nil {
			return err
		}
		if err := p.event(); err != nil {
			return err
		}
		p.add()
	}
	return err
}

// count counts one more entry of traceEvents against the limit.
func (p *parser) count() error {
	p.nEvents++
	if p.nEvents > p.lim.MaxEvents {
		return &errLimit{name: limitEvents, what: "number of trace events", limit: int64(p.lim.MaxEvents)}
	}
	return nil
}

func (p *parser) event() error {
	s, e := p.s, &p.ev
	e.ph = 0
	e.cat, e.name, e.tid, e.pid = e.cat[:0], e.name[:0], e.tid[:0], e.pid[:0]
	e.hasTs, e.hasDur, e.tidIsNum, e.pidIsNum = false, false, false, false
	e.corr, e.bytes = 0, 0
	e.hasDevice, e.hasStream = false, false
	e.kind, e.legacy = category(nil)
	k, more, err := s.firstMember(&p.key, eventKeys)
	for ; more && err == nil; k, more, err = s.nextMember(&p.key, eventKeys) {
		switch k {
		case 0: // ph
			if q := s.pos + 1; q+2 < s.end && s.buf[s.pos] == ' ' && s.buf[q] == '"' && s.buf[q+1] != '\\' && s.buf[q+2] == '"' {
				e.ph = s.buf[q+1] // "ph": "X", the common case
				s.pos = q + 3
			} else if p.str, err = p.stringValue(p.str[:0]); err == nil && len(p.str) > 0 {
				e.ph = p.str[0]
			}
			if err == nil && (e.ph == 'i' || e.ph == 'I') {
				return p.instant() // allocator events (memory.go)
			}
			if err == nil && e.ph != 'X' {
				// Flows, counters and metadata are not kept: skip the rest
				// of the object without reading its members.
				return s.skipRest()
			}
		case 1: // cat
			e.cat, err = p.stringValue(e.cat)
			e.kind, e.legacy = category(e.cat)
		case 2: // name
			e.name, err = p.stringValue(e.name)
		case 3: // ts
			e.ts, e.hasTs, err = p.timeValue()
		case 4: // dur
			e.dur, e.hasDur, err = p.timeValue()
		case 5: // pid
			e.pid, e.pidNum, e.pidIsNum, err = p.idValue(e.pid)
		case 6: // tid
			e.tid, e.tidNum, e.tidIsNum, err = p.idValue(e.tid)
		case 7: // args
			if e.ph == 0 && string(e.name) == memoryName {
				err = p.memArgsBeforePh() // memory.go
				break
			}
			// A counted operator's args hold its shapes; the CPU-only
			// autograd profiler's events (torch 1.13 without Kineto) have
			// no category, and their operators are counted too: their
			// calls per step say what work a step does where no FLOPs are
			// recorded (package gate's more-work finding).
			if len(e.cat) == 0 || e.kind < catKernel || e.kind > catAPI {
				if k := trace.FLOPKindOf(unsafeString(e.name)); k != trace.FLOPNone {
					err = p.flopArgs(k) // shapes.go
					break
				}
			}
			if len(e.cat) > 0 && (e.kind < catKernel || e.kind > catAPI) {
				err = s.skipValue() // cpu_op args are large and unused
				break
			}
			err = p.args()
		default:
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
	}
	return err
}

// args reads the members of an event's args object that the profile
// keeps.
func (p *parser) args() error {
	s, e := p.s, &p.ev
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.skipValue()
	}
	more, err := s.openObject()
	if !more || err != nil {
		return err
	}
	k, err := s.readKey(&p.key, argKeys)
	for ; more && err == nil; k, more, err = s.nextMember(&p.key, argKeys) {
		var dst *int64
		var flag *bool
		switch k {
		case 0:
			dst = &e.corr
		case 1:
			dst, flag = &e.device, &e.hasDevice
		case 2:
			dst, flag = &e.stream, &e.hasStream
		case 3:
			dst = &e.bytes
		default:
			if err = s.skipValue(); err != nil {
				return err
			}
			continue
		}
		c, err := s.peek()
		if err != nil {
			return err
		}
		if c == '"' || c == '{' || c == '[' {
			if err = s.skipValue(); err != nil {
				return err
			}
			continue
		}
		if p.num, err = s.number(); err != nil {
			return err
		}
		if n, ok := parseInt(p.num); ok {
			*dst = n
			if flag != nil {
				*flag = true
			}
		}
	}
	return err
}

// stringValue reads a string, or skips a non-string value and returns dst empty.
func (p *parser) stringValue(dst []byte) ([]byte, error) {
	c, err := p.s.peek()
	if err != nil {
		return dst[:0], err
	}
	if c != '"' {
		return dst[:0], p.s.skipValue()
	}
	return p.s.readString(dst[:0])
}

func (p *parser) timeValue() (int64, bool, error) {
	c, err := p.s.peek()
	if err != nil {
		return 0, false, err
	}
	if c == '"' || c == '{' || c == '[' {
		return 0, false, p.s.skipValue()
	}
	if p.num, err = p.s.number(); err != nil {
		return 0, false, err
	}
	ns, ok := usToNs(p.num)
	return ns, ok, nil
}

// idValue reads a pid or tid, which traces write as numbers or strings
// ("25738", "stream 7", "CPU functions").
func (p *parser) idValue(dst []byte) ([]byte, int64, bool, error) {
	c, err := p.s.peek()
	if err != nil {
		return dst[:0], 0, false, err
	}
	if c == '"' {
		dst, err = p.s.readString(dst[:0])
		if err != nil {
			return dst, 0, false, err
		}
		if n, ok := trailingInt(dst); ok {
			return dst, n, true, nil
		}
		return dst, 0, false, nil
	}
	if c == '{' || c == '[' {
		return dst[:0], 0, false, p.s.skipValue()
	}
	if dst, err = p.s.readNumber(dst[:0]); err != nil {
		return dst, 0, false, err
	}
	n, ok := parseInt(dst)
	return dst, n, ok, nil
}

// trailingInt parses "25738" or "stream 7" as 25738 or 7.
func trailingInt(b []byte) (int64, bool) {
	i := len(b)
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	if i == len(b) || len(b)-i > 18 {
		return 0, false
	}
	if i > 0 && b[i-1] != ' ' {
		return 0, false
	}
	var n int64
	for _, c := range b[i:] {
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// maxTime bounds the times the reader keeps, in ns on the trace's clock:
// 2^62 ns is 146 years, far past any epoch-based or relative timestamp, and
// leaves room for sums of two times without overflow.
const maxTime = int64(1) << 62

// Kept categories, by what they become.
const (
	catNone = iota
	catKernel
	catMemcpy
	catMemset
	catAPI
	catRange
	catStack
)

// category returns what events of category cat become, and whether cat is
// one of the 2021 format's. Events of the categories from catKernel to catAPI
// carry args the profile keeps (correlation, device, stream, bytes).
func category(cat []byte) (int, bool) {
	switch string(cat) {
	case "kernel":
		return catKernel, false
	case "Kernel":
		return catKernel, true
	case "gpu_memcpy", "Memcpy":
		return catMemcpy, false
	case "gpu_memset", "Memset":
		return catMemset, false
	case "cuda_runtime", "cuda_driver":
		return catAPI, false
	case "Runtime":
		return catAPI, true
	case "cpu_op", "user_annotation", "":
		return catRange, false
	case "Operator":
		return catRange, true
	case "python_function":
		return catStack, false
	}
	return catNone, false
}

// add turns the decoded event into a profile record.
func (p *parser) add() {
	e := &p.ev
	if e.ph != 'X' {
		return
	}
	c := e.kind
	switch {
	case e.legacy:
		p.legacy++
	case len(e.cat) == 0:
		// The CPU-only autograd profiler writes no category at all.
		p.noCat++
		if string(e.pid) == "CPU functions" {
			p.cpuFunctions++
		}
	}
	if c == catNone {
		return
	}
	if !e.hasTs || e.ts < -maxTime || e.ts > maxTime {
		p.badTs++
		return
	}
	dur := e.dur
	if !e.hasDur || dur < 0 {
		p.badDur++
		dur = 0
	}
	if dur > maxTime-e.ts {
		p.badEnd++
		return
	}
	start, end := e.ts, e.ts+dur
	pr := p.p
	switch c {
	case catKernel:
		p.gpu.add(p.gpuOp(trace.Kernel, start, end))
	case catMemcpy:
		op := p.gpuOp(trace.Memcpy, start, end)
		ci := p.copyKind(op.Name)
		op.Copy, op.Src, op.Dst = ci.kind, ci.src, ci.dst
		p.gpu.add(op)
	case catMemset:
		op := p.gpuOp(trace.Memset, start, end)
		op.Dst = p.copyKind(op.Name).dst
		p.gpu.add(op)
	case catAPI:
		p.api.add(trace.APICall{
			Start: start, End: end, Corr: e.corr, Thread: p.thread(),
			Name: pr.Names.Intern(e.name[:len(trace.StripAPIVersion(unsafeString(e.name)))]),
		})
	case catRange:
		p.rng.add(trace.Range{Start: start, End: end, Thread: p.thread(), Name: pr.Names.Intern(e.name)})
		p.addFLOPOp(start, end)
	case catStack:
		p.stk.add(trace.Range{Start: start, End: end, Thread: p.thread(), Name: pr.Names.Intern(e.name)})
	}
}

// namedThread marks thread keys made from a tid string that holds no
// number: namedThread + the string's Name. Numeric tids, negative ones
// included, never come near it.
const namedThread = int64(1) << 62

// thread returns the event's numeric thread key.
func (p *parser) thread() int64 {
	e := &p.ev
	if e.tidIsNum {
		return e.tidNum
	}
	return namedThread + int64(p.p.Names.Intern(e.tid))
}

func (p *parser) gpuOp(kind trace.Kind, start, end int64) trace.GPUOp {
	e := &p.ev
	op := trace.GPUOp{Start: start, End: end, Corr: e.corr, Bytes: e.bytes, Kind: kind, Name: p.p.Names.Intern(e.name)}
	switch {
	case e.hasDevice:
		op.Device = int32(e.device)
	case e.pidIsNum:
		op.Device = int32(e.pidNum)
	}
	switch {
	case e.hasStream:
		op.Stream = int32(e.stream)
	case e.tidIsNum:
		op.Stream = int32(e.tidNum)
	}
	return op
}

// copyKind parses names such as "Memcpy HtoD (Pageable -> Device)" and
// "Memset (Device)", once per distinct name.
func (p *parser) copyKind(n trace.Name) copyInfo {
	if ci, ok := p.copyInfo[n]; ok {
		return ci
	}
	ci := ParseCopyName(p.p.Names.String(n))
	p.copyInfo[n] = ci
	return ci
}

// ParseCopyName reads the direction and memory kinds out of a Kineto memcpy
// or memset name.
func ParseCopyName(name string) copyInfo {
	var ci copyInfo
	f := strings.Fields(name)
	if len(f) >= 2 {
		switch strings.ToUpper(f[1]) {
		case "HTOD":
			ci.kind = trace.HtoD
		case "DTOH":
			ci.kind = trace.DtoH
		case "DTOD":
			ci.kind = trace.DtoD
		case "PTOP":
			ci.kind = trace.PtoP
		case "HTOH":
			ci.kind = trace.HtoH
		}
	}
	if i := strings.IndexByte(name, '('); i >= 0 {
		inner := strings.TrimSuffix(name[i+1:], ")")
		src, dst, ok := strings.Cut(inner, "->")
		if !ok {
			dst = src
		}
		ci.src, ci.dst = memKind(src), memKind(dst)
	}
	return ci
}

func memKind(s string) trace.MemKind {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pageable":
		return trace.Pageable
	case "pinned":
		return trace.Pinned
	case "device":
		return trace.DeviceMem
	case "managed":
		return trace.Managed
	case "array":
		return trace.Array
	}
	return trace.MemUnknown
}

func (p *parser) deviceProperties() error {
	s := p.s
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '[' {
		return s.skipValue()
	}
	more, err := s.openArray()
	for ; more && err == nil; more, err = s.comma(']') {
		var d trace.Device
		c, err := s.peek()
		if err != nil {
			return err
		}
		if c != '{' {
			if err := s.skipValue(); err != nil {
				return err
			}
			continue
		}
		mo, err := s.openObject()
		for ; mo && err == nil; mo, err = s.comma('}') {
			k, err := s.readKey(&p.key, devKeys)
			if err != nil {
				return err
			}
			switch k {
			case 0: // id
				var n int64
				n, err = p.intValue()
				d.ID = int(n)
			case 1: // name
				p.str, err = p.stringValue(p.str)
				d.Name = string(p.str)
			case 2: // totalGlobalMem
				d.Memory, err = p.intValue()
			case 3: // numSms
				var n int64
				n, err = p.intValue()
				d.SMs = int(n)
			default:
				err = s.skipValue()
			}
			if err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		p.p.Devices = append(p.p.Devices, d)
	}
	return err
}

func (p *parser) distributedInfo() error {
	return p.object(distKeys, func(k int) (err error) {
		switch k {
		case 0: // rank
			var n int64
			n, err = p.intValue()
			p.p.Rank = int(n)
		case 1: // world_size
			var n int64
			n, err = p.intValue()
			p.p.WorldSize = int(n)
		default:
			err = p.s.skipValue()
		}
		return err
	})
}

// object reads a JSON object member by member: member gets each member
// name's index in ks (-1 when not listed), with the scanner at the value,
// which it must consume. A value that is not an object is skipped.
func (p *parser) object(ks *keySet, member func(k int) error) error {
	s := p.s
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.skipValue()
	}
	more, err := s.openObject()
	for ; more && err == nil; more, err = s.comma('}') {
		k, err := s.readKey(&p.key, ks)
		if err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
	}
	return err
}

// intValue reads a number, or a string holding one; other values read as 0.
func (p *parser) intValue() (int64, error) {
	c, err := p.s.peek()
	if err != nil {
		return 0, err
	}
	switch c {
	case '"':
		if p.str, err = p.s.readString(p.str[:0]); err != nil {
			return 0, err
		}
		n, _ := parseInt(bytes.TrimSpace(p.str))
		return n, nil
	case '{', '[':
		return 0, p.s.skipValue()
	}
	if p.num, err = p.s.number(); err != nil {
		return 0, err
	}
	n, _ := parseInt(p.num)
	return n, nil
}

func (p *parser) finish() {
	pr := p.p
	// Sort the lists into the order of trace.Profile.Sort (sort.go). Each
	// sort leaves its chunks and keys behind as garbage: collecting it
	// before the next list's sort and before analysis lets their
	// allocations reuse those pages instead of faulting in new ones. On
	// the 513 MB benchmark trace this took `gpugate analyze` from 155-168
	// to 118-131 MB peak RSS and from 39 k to 29-33 k page faults (each a
	// costly exit on a virtual machine), at the cost of sorting the range
	// list alone. The collections are cheap: the records hold no pointers.
	var wg sync.WaitGroup
	wg.Go(func() { pr.GPU = sorted(&p.gpu, func(g *trace.GPUOp) int64 { return g.Start }, cmpGPU) })
	pr.API = sorted(&p.api, func(a *trace.APICall) int64 { return a.Start }, cmpAPI)
	wg.Wait()
	runtime.GC()
	pr.Ranges = sorted(&p.rng, func(r *trace.Range) int64 { return r.Start }, cmpRange)
	if st := sorted(&p.stk, func(r *trace.Range) int64 { return r.Start }, cmpRange); len(st) > 0 {
		pr.Stack = st
	}
	runtime.GC()
	pr.FLOPOps = p.sh.ops
	p.finishMemory()
	if p.badTs > 0 {
		pr.Warnf("%d complete events dropped: ts missing, not a number or beyond ±2^62 ns", p.badTs)
	}
	if p.badEnd > 0 {
		pr.Warnf("%d complete events dropped: ts+dur beyond 2^62 ns", p.badEnd)
	}
	if p.badDur > 0 {
		pr.Warnf("%d complete events given dur 0: dur missing, not a number or negative", p.badDur)
	}
	switch {
	case p.noCat > 0 && p.cpuFunctions > 0 && len(pr.GPU) == 0:
		pr.Variant = "autograd-cpu"
	case p.legacy > 0:
		pr.Variant = "kineto-legacy-2021"
	default:
		pr.Variant = "kineto"
	}
	if len(pr.Ranges) == 0 && len(pr.GPU) == 0 && len(pr.API) == 0 {
		pr.Warnf("trace holds no complete (ph X) events")
	}
	// The GPU's own ids: keep device properties only for devices this rank used
	// when the trace lists every GPU of the machine.
	if len(pr.GPU) > 0 && len(pr.Devices) > 1 {
		used := map[int]bool{}
		for i := range pr.GPU {
			used[int(pr.GPU[i].Device)] = true
		}
		var keep []trace.Device
		for _, d := range pr.Devices {
			if used[d.ID] {
				keep = append(keep, d)
			}
		}
		if len(keep) > 0 {
			pr.Devices = keep
		}
	}
}
