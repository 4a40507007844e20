package kineto

// Extension points for reading more of a trace than the profile's core
// records: memory events (ph "i", name "[memory]", args "Total Allocated",
// "Total Reserved", "Device Type", "Device Id", "Bytes") and op shapes
// (args "Input Dims" and "flops" of selected cpu_op events). A feature adds
// its fields to ext and a line to each hook it needs here, and keeps its own
// code in its own file (memory.go, shapes.go). The hooks cost nothing
// while they stay empty: the fast paths skip what no hook asked for.
//
// Order of calls for one entry of traceEvents, as parser.event reads it:
//  1. wantPhase(ph) once "ph" is read: false skips the rest of an event
//     whose ph is not "X" without reading it.
//  2. argsHook() when "args" is reached; ph, cat and name are known when
//     the trace writes them first, as Kineto does. A non-nil argFunc reads
//     the args object member by member: it is called for every member
//     whose name is not one of the core ones (correlation, device, stream,
//     bytes), with the scanner at the member's value, which it must
//     consume (p.s.skipValue when it wants none of it; p.intValue,
//     p.stringValue, p.timeValue read one). Core members are still read as
//     usual, so the profile does not change.
//  3. eventDone() after the event is decoded and parser.add has kept what
//     the profile keeps (p.ev holds its fields; ts is in exact ns). It is
//     called for every event that was read, not skipped: an "X" event of
//     any category, and the phases wantPhase accepts. State for the event
//     being read lives in ext and is reset here.
//
// Large traces are read in pieces by several parsers (parallel.go): each
// has its own ext, and mergeExt appends a later piece's (o) to p's, in
// trace order. finishExt runs once on the merged parser, after the event
// lists are sorted, to move ext's results into the profile.

// ext holds the extensions' state of one parser.
type ext struct{}

// argFunc reads one args member named key; see argsHook.
type argFunc func(p *parser, key []byte) error

// wantPhase reports whether events of phase ph (other than "X") are read.
func wantPhase(ph byte) bool {
	return false
}

// argsHook returns the reader of the extra args members of the event being
// read, or nil when none is wanted.
func (p *parser) argsHook() argFunc {
	return nil
}

// eventDone is called after every event that was read.
func (p *parser) eventDone() {}

// mergeExt appends the state of o, a parser of a later piece, to p's.
func (p *parser) mergeExt(o *parser) {}

// finishExt completes the profile from the merged state.
func (p *parser) finishExt() {}
