package stages

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// Sample is one stack of a CPU profile and the CPU time spent in it.
type Sample struct {
	// Stack is the function names from the leaf (where the CPU was) to the root, inlined
	// calls included, innermost first.
	Stack []string
	Nanos int64
}

// Fields of profile.proto (github.com/google/pprof/proto/profile.proto) that Parse reads.
const (
	profileSampleType  = 1
	profileSample      = 2
	profileLocation    = 4
	profileFunction    = 5
	profileStringTable = 6

	valueTypeUnit = 2

	sampleLocationID = 1
	sampleValue      = 2

	locationID   = 1
	locationLine = 4
	lineFunction = 1

	functionID   = 1
	functionName = 2
)

// Parse reads a CPU profile as Go's runtime/pprof writes it (gzipped profile.proto) and returns
// its samples with their stacks by name. The value taken is the one measured in nanoseconds
// (CPU time), else the last. Reading the few fields needed here spares a dependency on
// github.com/google/pprof.
func Parse(r io.Reader) ([]Sample, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("stages: read profile: %w", err)
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("stages: profile: %w", err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("stages: profile: %w", err)
		}
	}
	var p rawProfile
	if err := p.decode(raw); err != nil {
		return nil, fmt.Errorf("stages: profile: %w", err)
	}
	return p.samples()
}

type rawSample struct {
	locations []uint64
	values    []int64
}

type rawProfile struct {
	units      []int64 // string index of each sample type's unit
	rawSamples []rawSample
	locations  map[uint64][]uint64 // location id → function ids, innermost first
	functions  map[uint64]int64    // function id → string index of its name
	strings    []string
}

var errMalformed = errors.New("malformed protobuf")

// fields calls fn for each field of a message.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, val []byte, v uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		var val []byte
		var v uint64
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			val, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errMalformed
		}
		b = b[n:]
		if err := fn(num, typ, val, v); err != nil {
			return err
		}
	}
	return nil
}

// varints reads a repeated integer field, packed (bytes) or not (one varint).
func varints(typ protowire.Type, val []byte, v uint64, out *[]uint64) error {
	if typ == protowire.VarintType {
		*out = append(*out, v)
		return nil
	}
	for len(val) > 0 {
		x, n := protowire.ConsumeVarint(val)
		if n < 0 {
			return errMalformed
		}
		*out = append(*out, x)
		val = val[n:]
	}
	return nil
}

func (p *rawProfile) decode(b []byte) error {
	p.locations = make(map[uint64][]uint64)
	p.functions = make(map[uint64]int64)
	return fields(b, func(num protowire.Number, typ protowire.Type, val []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case profileSampleType:
			var unit int64
			err := fields(val, func(num protowire.Number, _ protowire.Type, _ []byte, v uint64) error {
				if num == valueTypeUnit {
					unit = int64(v)
				}
				return nil
			})
			p.units = append(p.units, unit)
			return err
		case profileSample:
			var s rawSample
			err := fields(val, func(num protowire.Number, typ protowire.Type, val []byte, v uint64) error {
				switch num {
				case sampleLocationID:
					return varints(typ, val, v, &s.locations)
				case sampleValue:
					var vs []uint64
					if err := varints(typ, val, v, &vs); err != nil {
						return err
					}
					for _, x := range vs {
						s.values = append(s.values, int64(x))
					}
				}
				return nil
			})
			p.rawSamples = append(p.rawSamples, s)
			return err
		case profileLocation:
			var id uint64
			var funcs []uint64
			err := fields(val, func(num protowire.Number, _ protowire.Type, val []byte, v uint64) error {
				switch num {
				case locationID:
					id = v
				case locationLine:
					return fields(val, func(num protowire.Number, _ protowire.Type, _ []byte, v uint64) error {
						if num == lineFunction {
							funcs = append(funcs, v)
						}
						return nil
					})
				}
				return nil
			})
			p.locations[id] = funcs
			return err
		case profileFunction:
			var id uint64
			var name int64
			err := fields(val, func(num protowire.Number, _ protowire.Type, _ []byte, v uint64) error {
				switch num {
				case functionID:
					id = v
				case functionName:
					name = int64(v)
				}
				return nil
			})
			p.functions[id] = name
			return err
		case profileStringTable:
			p.strings = append(p.strings, string(val))
		}
		return nil
	})
}

func (p *rawProfile) str(i int64) (string, error) {
	if i < 0 || i >= int64(len(p.strings)) {
		return "", fmt.Errorf("string %d of %d: %w", i, len(p.strings), errMalformed)
	}
	return p.strings[i], nil
}

// samples resolves the stacks to names and picks the CPU-time value.
func (p *rawProfile) samples() ([]Sample, error) {
	value := len(p.units) - 1
	for i, u := range p.units {
		if s, err := p.str(u); err == nil && s == "nanoseconds" {
			value = i
		}
	}
	if value < 0 {
		return nil, fmt.Errorf("no sample types: %w", errMalformed)
	}
	out := make([]Sample, 0, len(p.rawSamples))
	for _, rs := range p.rawSamples {
		if value >= len(rs.values) {
			return nil, fmt.Errorf("sample with %d values, want %d: %w", len(rs.values), len(p.units), errMalformed)
		}
		s := Sample{Nanos: rs.values[value]}
		for _, loc := range rs.locations {
			for _, fn := range p.locations[loc] {
				name, err := p.str(p.functions[fn])
				if err != nil {
					return nil, err
				}
				s.Stack = append(s.Stack, name)
			}
		}
		out = append(out, s)
	}
	return out, nil
}
