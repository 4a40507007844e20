package ncu

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The .ncu-rep container (ProfilerReport.proto in ncu's extras/FileFormat,
// the same from 2020.3 to 2025.2 writers):
//
//	"NVR\0" | u32le n | FileHeader (n bytes)
//	repeat: u32le n | BlockHeader (n bytes) | payload (BlockHeader.PayloadSize bytes)
//
//	BlockHeader     { 3: ReportSessionDetails SessionDetails; 5: uint32 PayloadSize }
//	ReportSessionDetails { 8: repeated VersionInfo VersionInfo }
//	VersionInfo     { 1: string Provider; 2: string Version }
//
// The writer is the VersionInfo whose Provider is "Nsight Compute Target"
// (also "Nsight Compute Host" in some reports). FileHeader.Version is 7 in
// every report from 2020.3 to 2025.2, so it says nothing about the writer.
//
// Only these three nested fields are read, from the block headers alone
// (payloads are skipped), with a small protobuf wire-format walker written
// here: google.golang.org/protobuf's protowire would do the varints, but a
// module for 40 lines of tag and length decoding does not pay its way, and
// the schema itself is NVIDIA's and not ours to copy.

const (
	maxHeader = 64 << 20 // bytes in one block header
	maxBlocks = 1 << 16
)

// ErrNotReport is returned by WriterVersion for a file that is not an
// Nsight Compute report.
var ErrNotReport = errors.New(`not an Nsight Compute report (no "NVR" header)`)

// WriterVersion returns the Nsight Compute version that wrote the report at
// path, e.g. "2023.3.0.0 (build 33266684) (public-release)", read from the
// report's session details without ncu. It returns "" and no error when the
// report does not say.
func WriterVersion(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return writerVersion(f)
}

func writerVersion(r io.ReadSeeker) (string, error) {
	br := bufio.NewReader(r)
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil || string(magic[:]) != "NVR\x00" {
		return "", ErrNotReport
	}
	// pos tracks the offset in the file, for seeking past payloads.
	pos := int64(4)
	next := func() ([]byte, error) {
		var n [4]byte
		if _, err := io.ReadFull(br, n[:]); err != nil {
			return nil, err
		}
		size := binary.LittleEndian.Uint32(n[:])
		if size > maxHeader {
			return nil, fmt.Errorf("offset %d: header of %d bytes, over the %d-byte limit", pos, size, maxHeader)
		}
		// Read as the bytes arrive rather than allocating the size the
		// file claims.
		b, err := io.ReadAll(io.LimitReader(br, int64(size)))
		if err != nil {
			return nil, err
		}
		if len(b) != int(size) {
			return nil, fmt.Errorf("offset %d: truncated header: %d of %d bytes", pos, len(b), size)
		}
		pos += 4 + int64(size)
		return b, nil
	}
	if _, err := next(); err != nil { // FileHeader
		return "", err
	}
	var host string
	for range maxBlocks {
		hdr, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		var payload uint64
		var found string
		err = walk(hdr, func(num int, wire int, v uint64, b []byte) error {
			switch {
			case num == 5 && wire == 0:
				payload = v
			case num == 3 && wire == 2:
				return walk(b, func(num int, wire int, _ uint64, b []byte) error {
					if num != 8 || wire != 2 {
						return nil
					}
					var provider, version string
					err := walk(b, func(num int, wire int, _ uint64, b []byte) error {
						if wire == 2 && num == 1 {
							provider = string(b)
						} else if wire == 2 && num == 2 {
							version = string(b)
						}
						return nil
					})
					switch provider {
					case "Nsight Compute Target":
						found = version
					case "Nsight Compute Host":
						host = version
					}
					return err
				})
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("offset %d: %w", pos, err)
		}
		if found != "" {
			return found, nil
		}
		if payload > 0 {
			pos += int64(payload)
			if _, err := r.Seek(pos, io.SeekStart); err != nil {
				return "", err
			}
			br.Reset(r)
		}
	}
	return host, nil
}

// walk calls fn for each field of the protobuf message b: its number, wire
// type, value (varint) or bytes (length-delimited). Fixed-width fields are
// skipped; groups (deprecated) are an error.
func walk(b []byte, fn func(num, wire int, v uint64, b []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad protobuf tag")
		}
		b = b[n:]
		num, wire := int(key>>3), int(key&7)
		var v uint64
		var body []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad protobuf varint")
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errors.New("truncated protobuf field")
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return errors.New("truncated protobuf field")
			}
			b = b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errors.New("bad protobuf length")
			}
			body = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return fmt.Errorf("protobuf wire type %d not supported", wire)
		}
		if err := fn(num, wire, v, body); err != nil {
			return err
		}
	}
	return nil
}

// version is a parsed "2023.3.0.0 (build ...)" string.
type version []int

func parseVersion(s string) version {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i]
	}
	var v version
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil
		}
		v = append(v, n)
	}
	return v
}

// newer reports whether a is a later version than b; false when either
// is unknown.
func newer(a, b string) bool {
	va, vb := parseVersion(a), parseVersion(b)
	if va == nil || vb == nil {
		return false
	}
	for i := 0; i < len(va) || i < len(vb); i++ {
		x, y := 0, 0
		if i < len(va) {
			x = va[i]
		}
		if i < len(vb) {
			y = vb[i]
		}
		if x != y {
			return x > y
		}
	}
	return false
}

// shortVersion trims the build suffix: "2023.3.0.0 (build 1) (x)" → "2023.3.0.0".
func shortVersion(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}
