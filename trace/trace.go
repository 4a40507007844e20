// Package trace defines Profile, the one in-memory model of a profiler trace
// that both readers (trace/kineto for torch.profiler chrome traces, trace/nsys
// for Nsight Systems SQLite exports) produce and that package analysis reads.
//
// The model keeps only what the metrics and findings need: GPU activities,
// host API calls and host ranges, each as a small fixed-size record whose name
// is an index into one string table. Readers stream their input into it, so
// memory grows with the number of relevant events, never with the size of the
// document.
package trace

import (
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Name is an index into a Profile's string table.
type Name uint32

// Strings interns names: every distinct string is stored once.
type Strings struct {
	list  []string
	index map[string]Name
}

// NewStrings returns an empty string table. Name 0 is the empty string.
func NewStrings() *Strings {
	return &Strings{list: []string{""}, index: map[string]Name{"": 0}}
}

// Intern returns the Name of b, adding it to the table if needed. It does not
// allocate when b is already present.
func (s *Strings) Intern(b []byte) Name {
	if n, ok := s.index[string(b)]; ok {
		return n
	}
	str := string(b)
	n := Name(len(s.list))
	s.list = append(s.list, str)
	s.index[str] = n
	return n
}

// InternString is Intern for a string.
func (s *Strings) InternString(str string) Name {
	if n, ok := s.index[str]; ok {
		return n
	}
	n := Name(len(s.list))
	s.list = append(s.list, str)
	s.index[str] = n
	return n
}

// String returns the string that n names.
func (s *Strings) String(n Name) string { return s.list[n] }

// Len reports how many distinct strings the table holds.
func (s *Strings) Len() int { return len(s.list) }

// Match returns, indexed by Name, whether each string matches re.
// Metrics test names against patterns once per distinct name, not per event.
func (s *Strings) Match(re *regexp.Regexp) []bool {
	m := make([]bool, len(s.list))
	if re == nil {
		return m
	}
	for i, str := range s.list {
		m[i] = re.MatchString(str)
	}
	return m
}

// Kind says what a GPU activity is.
type Kind uint8

const (
	Kernel Kind = iota + 1
	Memcpy
	Memset
)

func (k Kind) String() string {
	switch k {
	case Kernel:
		return "kernel"
	case Memcpy:
		return "memcpy"
	case Memset:
		return "memset"
	}
	return "unknown"
}

// CopyKind is the direction of a memcpy.
type CopyKind uint8

const (
	CopyOther CopyKind = iota
	HtoD
	DtoH
	DtoD
	PtoP
	HtoH
)

func (c CopyKind) String() string {
	return [...]string{"other", "h2d", "d2h", "d2d", "p2p", "h2h"}[c]
}

// MemKind is the kind of memory at one end of a copy.
type MemKind uint8

const (
	MemUnknown MemKind = iota
	Pageable
	Pinned
	DeviceMem
	Managed
	Array
)

func (m MemKind) String() string {
	return [...]string{"unknown", "pageable", "pinned", "device", "managed", "array"}[m]
}

// GPUOp is one activity on a GPU: a kernel, a memcpy or a memset.
// Times are nanoseconds on the trace's clock, End >= Start.
type GPUOp struct {
	Start, End int64
	// Corr is the correlation id linking the op to its launching API call,
	// unique within Process; 0 when the trace has none.
	Corr    int64
	Bytes   int64 // memcpy and memset only
	Name    Name
	Process int32 // process whose API call launched it (nsys pid; 0 for Kineto)
	Device  int32
	Stream  int32
	Kind    Kind
	Copy    CopyKind // memcpy only
	Src     MemKind  // memcpy only
	Dst     MemKind  // memcpy and memset
}

// APICall is a CUDA runtime or driver API call on a host thread. Its name has
// any API-version suffix such as _v3020 removed.
type APICall struct {
	Start, End int64
	Corr       int64
	Thread     int64
	Name       Name
	Process    int32
}

// Range is a named interval on a host thread: a Kineto cpu_op or
// user_annotation, or an NVTX push/pop or start/end range.
type Range struct {
	Start, End int64
	Thread     int64
	Name       Name
	Process    int32
}

// SyncWait is the part of a synchronizing API call during which the host
// waited for the device, as CUPTI records it: [Start, End) lies inside the
// call's own interval. Corr links it to the call (APICall.Corr, same
// process).
type SyncWait struct {
	Start, End int64
	Corr       int64
	Process    int32
	Kind       SyncKind
}

// SyncKind is what a SyncWait waited for (CUPTI's synchronization type).
type SyncKind uint8

const (
	SyncUnknown         SyncKind = iota
	SyncEvent                    // cudaEventSynchronize (CUPTI also reports event queries so)
	SyncStreamWaitEvent          // cudaStreamWaitEvent: the device waits, the host does not
	SyncStream                   // cudaStreamSynchronize
	SyncContext                  // cudaDeviceSynchronize, cuCtxSynchronize
)

func (k SyncKind) String() string {
	return [...]string{"unknown", "event", "stream-wait-event", "stream", "context"}[k]
}

// Device describes one GPU as the trace records it.
type Device struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Memory int64  `json:"memory_bytes,omitempty"`
	SMs    int    `json:"sms,omitempty"`
}

// Format names of the readers.
const (
	FormatKineto = "kineto"
	FormatNsys   = "nsys"
)

// Profile is one rank's trace.
type Profile struct {
	Path   string
	Format string // FormatKineto or FormatNsys
	// Variant says which flavour of the format the reader saw, e.g.
	// "kineto", "kineto-legacy-2021", "autograd-cpu" or "nsys 2022.4.2.1 (schema 3.0.0)".
	Variant   string
	Rank      int // -1 when the trace does not say
	WorldSize int // 0 when the trace does not say
	Process   int // OS process id where known, else 0
	// Node is the Slurm node the rank ran on (from the job's own report,
	// not the trace); empty outside Slurm.
	Node    string
	Devices []Device

	Names  *Strings
	GPU    []GPUOp
	API    []APICall
	Ranges []Range
	// Stack are the Python frames a Kineto trace recorded with with_stack
	// (python_function events, named "path/file.py(LINE): function"),
	// sorted by start; nil without them. They are kept apart from Ranges,
	// which steps, data-loader waits and phases read: a frame is where
	// code was, not a range of work.
	Stack []Range
	// SyncWaits are the waits for the device that the profiler recorded
	// inside synchronizing API calls (nsys: CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
	// sorted by start; nil when the trace has none.
	SyncWaits []SyncWait
	// FLOPOps are the matrix multiplications and convolutions whose FLOPs
	// the trace records (flops args) or lets compute (shapes); nil when it
	// has none (see FLOPOp).
	FLOPOps []FLOPOp
	// Memory are the allocator's events (trace.MemEvent), sorted by time;
	// nil when the trace has none (torch.profiler without profile_memory,
	// nsys without --cuda-memory-usage): memory metrics are then absent.
	Memory []MemEvent

	// Warnings are things the reader noticed that do not stop analysis.
	Warnings []string
}

// New returns an empty profile for path.
func New(path, format string) *Profile {
	return &Profile{Path: path, Format: format, Rank: -1, Names: NewStrings()}
}

// Warnf records a warning.
func (p *Profile) Warnf(format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
}

// Sort orders every event list by start time (then by end, ranges longest
// first), the order analysis expects. Ties are broken on every field, so the
// order does not depend on the order the reader found the events in.
func (p *Profile) Sort() {
	var wg sync.WaitGroup
	wg.Go(p.sortGPU)
	wg.Go(p.sortAPI)
	p.sortRanges()
	wg.Wait()
}

// The comparisons return at the first field that differs: cmp.Or would
// evaluate every field of every pair, which made sorting a 2.2 M-event
// trace a sixth of its read time.

func (p *Profile) sortGPU() {
	slices.SortFunc(p.GPU, func(a, b GPUOp) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Process, b.Process),
			cmp.Compare(a.Corr, b.Corr), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Name, b.Name))
	})
}

func (p *Profile) sortAPI() {
	slices.SortFunc(p.API, func(a, b APICall) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Process, b.Process),
			cmp.Compare(a.Corr, b.Corr), cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Name, b.Name))
	})
}

func (p *Profile) sortRanges() {
	slices.SortFunc(p.Ranges, func(a, b Range) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Or(cmp.Compare(b.End, a.End), cmp.Compare(a.Process, b.Process),
			cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Name, b.Name))
	})
}

// SyntaxError reports malformed input at a position, as in benchfmt.
type SyntaxError struct {
	File string
	Pos  string // e.g. "offset 1834" or "table NVTX_EVENTS"
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Pos == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%s: %s", e.File, e.Pos, e.Msg)
}

// StripAPIVersion removes a CUDA API version suffix such as _v3020 or
// _v11010 from name: cudaStreamSynchronize_v3020 becomes cudaStreamSynchronize.
func StripAPIVersion(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || i < 3 || name[i-1] != 'v' || name[i-2] != '_' {
		return name
	}
	return name[:i-2]
}

// BaseAPIName reduces a CUDA API name to the function it calls: the version
// suffix (_v3020, _v11030, and the _v2 of driver functions) and the
// per-thread default stream variants (_ptsz, _ptds) are removed, in any
// order and number: cudaStreamSynchronize_ptsz_v7000 and
// cuMemcpyDtoH_v2_ptds become cudaStreamSynchronize and cuMemcpyDtoH.
func BaseAPIName(name string) string {
	for {
		s := StripAPIVersion(name)
		for _, suf := range [...]string{"_ptsz", "_ptds"} {
			s = strings.TrimSuffix(s, suf)
		}
		if s == name {
			return s
		}
		name = s
	}
}

// SyncCalls are the API functions that block the host until the device
// catches up, besides the synchronous copies (SyncAPI): device, thread,
// stream, event and context synchronization of the CUDA runtime, the CUDA
// driver and HIP. docs/metrics.md ("Sync calls") lists them;
// TestSyncCallsDocumented keeps the two identical.
var SyncCalls = []string{
	"cudaDeviceSynchronize", "cudaThreadSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
	"cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
	"hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize",
}

var syncCalls = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range SyncCalls {
		m[n] = true
	}
	return m
}()

// SyncAPI reports whether a CUDA (runtime or driver) or HIP API call blocks
// the host until the device catches up: one of SyncCalls, or a copy that is
// not Async (a name that starts with cudaMemcpy, cuMemcpy or hipMemcpy and
// does not contain Async). Any version or per-thread-stream suffix is
// ignored (BaseAPIName).
func SyncAPI(name string) bool {
	name = BaseAPIName(name)
	if syncCalls[name] {
		return true
	}
	for _, pre := range [...]string{"cuda", "cu", "hip"} {
		if rest, ok := strings.CutPrefix(name, pre); ok && strings.HasPrefix(rest, "Memcpy") && !strings.Contains(rest, "Async") {
			return true
		}
	}
	return false
}

// LaunchAPI reports whether an API call launches a kernel or a graph, with
// any version or per-thread-stream suffix ignored.
func LaunchAPI(name string) bool {
	name = BaseAPIName(name)
	switch name {
	case "cudaLaunch", "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync":
		return true // the launch calls before CUDA 7 and the old driver API
	}
	return strings.Contains(name, "LaunchKernel") || strings.Contains(name, "LaunchCooperativeKernel") ||
		strings.Contains(name, "GraphLaunch")
}

// LimitError reports input that passes one of a reader's limits on size
// (decompressed bytes, string length, event count). It names the limit, the
// CLI flag and the load.Options field that raise it.
type LimitError struct {
	File  string
	Pos   string // where the limit was passed, e.g. "offset 1834"; may be empty
	What  string // e.g. "string length (bytes)"
	Limit int64
	Flag  string // CLI flag without the dash, e.g. "max-string"
	Field string // e.g. "load.Options.MaxString"
}

func (e *LimitError) Error() string {
	at := e.File
	if e.Pos != "" {
		at += ":" + e.Pos
	}
	return fmt.Sprintf("%s: %s exceeds the limit of %d; raise it with -%s (%s) if the trace is genuine", at, e.What, e.Limit, e.Flag, e.Field)
}

// WithPath makes sure an error about reading the file at path names the
// file exactly once: syntax and limit errors already do, a missing file is
// said plainly, and others get the path in front.
func WithPath(err error, path string) error {
	switch err.(type) {
	case *SyntaxError, *LimitError:
		return err
	}
	if os.IsNotExist(err) {
		return fmt.Errorf("%s: no such file", path)
	}
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %v", path, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// MemEvent is one allocator event: an allocation (Bytes > 0) or a free
// (Bytes < 0) on one device, with the allocator's totals right after it
// where the profiler records them (Kineto's [memory] instant events; nsys's
// CUDA memory usage table). 40 bytes, no pointers.
type MemEvent struct {
	Time int64 // ns on the trace's clock (the host's: the allocator runs on the host)
	// Allocated and Reserved are the allocator's totals on Device right
	// after the event (Kineto "Total Allocated" / "Total Reserved"); valid
	// only with MemTotals, and Reserved only with MemReserved as well.
	Allocated, Reserved int64
	Bytes               int64 // the event's own size: + allocated, - freed
	// Device is the CUDA device ordinal for MemCUDA, -1 for the host.
	Device int32
	Flags  MemFlags
}

// MemFlags say what a MemEvent holds.
type MemFlags uint8

const (
	// MemCUDA: the event is on an accelerator (Kineto Device Type 1; nsys
	// device memory); otherwise on the host allocator.
	MemCUDA MemFlags = 1 << iota
	// MemTotals: Allocated is the allocator's total after the event. The
	// 2021 Kineto form and nsys exports record only Bytes: totals are then
	// relative, summed from the deltas by the analysis.
	MemTotals
	// MemReserved: Reserved holds the caching allocator's reserved total.
	MemReserved
)

// SortMemory orders p.Memory by time, then device, as analysis expects.
// Events of one time keep their order (the allocator's).
func (p *Profile) SortMemory() {
	slices.SortStableFunc(p.Memory, func(a, b MemEvent) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Device, b.Device))
	})
}
